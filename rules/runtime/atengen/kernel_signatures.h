// Definitions of what "atengen/runtime.h" declares for ATENGEN_LIBRARY_IMPL
// and ATENGEN_LIBRARY_FRAGMENT, for the generated KernelSignatures_*.cpp
// sources only: they instantiate LibraryRef::impl once per kernel signature of
// their library, and LibraryRef::def<void>, LibraryImplT<void> and
// LibraryFragmentT<void>. Explicit instantiations are weak (COMDAT) symbols,
// so sources and libraries that instantiate the same ones link together.
#pragma once

#include <torch/library.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "atengen/runtime.h"
#include "atengen/torch_release_guard.h"

namespace atengen {

template <typename Signature>
void LibraryRef::impl(const char* name, Signature* fn) {
  library_->impl(name, torch::CppFunction(fn));
}

template <typename Unused>
void LibraryRef::def(const char* schema, std::initializer_list<at::Tag> tags) {
  // A named const vector: an rvalue would choose def(name, fn) with the tags as fn.
  const std::vector<at::Tag> tag_vector(tags);
  library_->def(schema, tag_vector);
}

// A torch::Library of `kind` that `init` filled, as TORCH_LIBRARY_IMPL's and
// TORCH_LIBRARY_FRAGMENT's static objects make it; none (null) when the torch
// release guard refuses. Hidden, as the classes that call it.
template <typename Unused>
__attribute__((visibility("hidden"))) torch::Library* guarded_library(
    torch::Library::Kind kind,
    const char* ns,
    std::optional<c10::DispatchKey> key,
    void (*init)(LibraryRef&),
    const char* file,
    uint32_t line) {
  if (!torch_release_matches()) {
    return nullptr;
  }
  auto library = std::make_unique<torch::Library>(kind, ns, key, file, line);
  LibraryRef ref(*library);
  init(ref);
  return library.release();
}

template <typename Unused>
LibraryImplT<Unused>::LibraryImplT(
    const char* ns, c10::DispatchKey key, InitFn* init, const char* file, uint32_t line)
    : library_(guarded_library<Unused>(torch::Library::IMPL, ns, key, init, file, line)) {}

template <typename Unused>
LibraryImplT<Unused>::~LibraryImplT() {
  delete library_;
}

template <typename Unused>
LibraryFragmentT<Unused>::LibraryFragmentT(
    const char* ns, InitFn* init, const char* file, uint32_t line)
    : library_(guarded_library<Unused>(
          torch::Library::FRAGMENT, ns, std::nullopt, init, file, line)) {}

template <typename Unused>
LibraryFragmentT<Unused>::~LibraryFragmentT() {
  delete library_;
}

}  // namespace atengen
