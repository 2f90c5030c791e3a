// Definitions of what "atengen/library.h" declares that need torch/library.h,
// for the generated KernelSignatures_*.cpp sources only: LibraryRef::impl,
// instantiated once per typed kernel signature of their library, the tagged
// LibraryRef::def<void> and TypedLibraryImplT<void>. Explicit instantiations are weak (COMDAT)
// symbols, so sources and libraries that instantiate the same ones link
// together.
#pragma once

#include <torch/library.h>

#include <initializer_list>
#include <memory>
#include <vector>

#include "atengen/library.h"
#include "atengen/torch_release_guard.h"

namespace atengen {

// The torch::Library behind the shim's handle: torch's shim makes every
// TorchLibraryHandle with `new torch::Library` (aoti_torch_library_init_*),
// which a library bound to one torch release may rely on.
__attribute__((visibility("hidden"))) inline torch::Library& library_of(
    TorchLibraryOpaque* handle) {
  return *reinterpret_cast<torch::Library*>(handle);
}

template <typename Signature>
void LibraryRef::impl(const char* name, Signature* fn) {
  library_of(library_).impl(name, torch::CppFunction(fn));
}

template <typename Unused>
void LibraryRef::def(const char* schema, std::initializer_list<at::Tag> tags) {
  // A named const vector: an rvalue would choose def(name, fn) with the tags as fn.
  const std::vector<at::Tag> tag_vector(tags);
  library_of(library_).def(schema, tag_vector);
}

template <typename Unused>
TypedLibraryImplT<Unused>::TypedLibraryImplT(
    const char* ns, c10::DispatchKey key, InitFn* init, const char* file, uint32_t line) {
  if (!torch_release_matches()) {
    return;
  }
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, ns, key, file, line);
  LibraryRef ref(reinterpret_cast<TorchLibraryOpaque*>(library.get()));
  init(ref);
  library_ = reinterpret_cast<TorchLibraryOpaque*>(library.release());
}

template <typename Unused>
TypedLibraryImplT<Unused>::~TypedLibraryImplT() {
  delete reinterpret_cast<torch::Library*>(library_);
}

}  // namespace atengen
