// Definitions of what "atengen/library.h" declares for ATENGEN_LIBRARY_IMPL
// and ATENGEN_LIBRARY_FRAGMENT through torch's C shim, for the generated
// KernelSignatures_*.cpp sources only: LibraryImplT<void>,
// LibraryFragmentT<void>, LibraryRef::impl_boxed<void> and the untagged
// LibraryRef::def<void>. The shim's header is C: a source that needs only
// these compiles in a fraction of a second, where torch/library.h takes 4 s.
// Explicit instantiations are weak (COMDAT) symbols, so sources that
// instantiate the same ones link together.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/c/shim.h>
#include <torch/headeronly/version.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "atengen/library.h"
#include "atengen/torch_release_guard.h"

namespace atengen {

// Throws when a shim call failed. torch catches what failed inside and keeps
// its message for torch_exception_get_what_without_backtrace from 2.13 on;
// older releases write it to the log (stderr) instead.
__attribute__((visibility("hidden"))) inline void check_shim(
    AOTITorchError error, const char* what, const char* name) {
  if (error == AOTI_TORCH_SUCCESS) {
    return;
  }
  std::string message = std::string("atengen: ") + what + " '" + name + "' failed";
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
  message += std::string(": ") + torch_exception_get_what_without_backtrace();
#else
  message += " (torch's log above says why)";
#endif
  throw std::runtime_error(message);
}

// A torch::Library made through the shim (for `key`, else a fragment) and
// filled by `init`; none (null) when the torch release guard refuses. Hidden,
// as the classes that call it.
template <typename Unused>
__attribute__((visibility("hidden"))) TorchLibraryOpaque* shim_library(
    const char* ns,
    const char* key,
    void (*init)(LibraryRef&),
    const char* file,
    uint32_t line) {
  if (!torch_release_matches()) {
    return nullptr;
  }
  TorchLibraryHandle library = nullptr;
  if (key != nullptr) {
    check_shim(aoti_torch_library_init_impl(ns, key, file, line, &library), "registering", ns);
  } else {
    check_shim(aoti_torch_library_init_fragment(ns, file, line, &library), "defining", ns);
  }
  try {
    LibraryRef ref(library);
    init(ref);
  } catch (...) {
    aoti_torch_delete_library_object(library);
    throw;
  }
  return library;
}

template <typename Unused>
void LibraryRef::impl_boxed(const char* name, BoxedKernel* kernel) {
  // The release these sources were compiled against: libtorch then reads the
  // stack in that release's encoding, which "atengen/boxed_kernels.h" writes.
  check_shim(torch_library_impl(library_, name, kernel, TORCH_ABI_VERSION), "registering", name);
}

template <typename Unused>
void LibraryRef::def(const char* schema) {
  check_shim(aoti_torch_library_def(library_, schema), "defining", schema);
}

template <typename Unused>
LibraryImplT<Unused>::LibraryImplT(
    const char* ns, const char* key, InitFn* init, const char* file, uint32_t line)
    : library_(shim_library<Unused>(ns, key, init, file, line)) {}

template <typename Unused>
LibraryImplT<Unused>::~LibraryImplT() {
  if (library_ != nullptr) {
    aoti_torch_delete_library_object(library_);
  }
}

template <typename Unused>
LibraryFragmentT<Unused>::LibraryFragmentT(
    const char* ns, InitFn* init, const char* file, uint32_t line)
    : library_(shim_library<Unused>(ns, nullptr, init, file, line)) {}

template <typename Unused>
LibraryFragmentT<Unused>::~LibraryFragmentT() {
  if (library_ != nullptr) {
    aoti_torch_delete_library_object(library_);
  }
}

}  // namespace atengen
