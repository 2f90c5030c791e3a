// The registration side of the generated sources: atengen::LibraryRef and the
// ATENGEN_LIBRARY_IMPL and ATENGEN_LIBRARY_FRAGMENT macros, which stand in for
// torch/library.h's. "atengen/runtime.h" includes it; the schema sources, and
// the shards that only register their kernels themselves, include it alone: a
// source that only defines operators or names kernels needs no complete tensor
// type, and ATen/core/Tensor.h alone costs about 2 s of compile.
#pragma once

#include <ATen/core/enum_tag.h>
#include <c10/core/DispatchKey.h>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <initializer_list>

namespace torch {
class Library;
}  // namespace torch

namespace atengen {

// What ATENGEN_LIBRARY_IMPL and ATENGEN_LIBRARY_FRAGMENT hand their body: the
// torch::Library being registered into, with two operations: impl(name, fn),
// that registers the kernel fn (a plain function pointer) for the operator
// `name`, and def(schema, tags), that defines an operator.
//
// impl<Signature> is only declared here: each generated library's
// KernelSignatures_*.cpp instantiate it, once per C++ signature, from
// "atengen/kernel_signatures.h". Defining it here would instantiate torch's
// boxing and schema-inference templates in every source for every kernel (most
// of what a registration source costs to compile), where the sources of a
// whole op YAML share about a thousand signatures among four thousand kernels.
// A function pointer, not TORCH_FN, for the same reason (TORCH_FN makes a
// distinct instantiation per kernel); the price is one indirect call per
// dispatch.
//
// Hidden, as LibraryImplT: torch.ops.load_library loads with RTLD_GLOBAL, and
// a library compiled against another torch release must never run these in
// this library's place (atengen/torch_release_guard.h).
class __attribute__((visibility("hidden"))) LibraryRef {
 public:
  explicit LibraryRef(torch::Library& library) : library_(&library) {}

  template <typename Signature>
  void impl(const char* name, Signature* fn);

  // torch::Library::def(schema, tags). Only declared, as impl, so that a
  // schema source need not include torch/library.h (about 7 s of compile
  // without a precompiled header); a template only so that every
  // KernelSignatures_*.cpp can instantiate it as a weak symbol.
  template <typename Unused = void>
  void def(const char* schema, std::initializer_list<at::Tag> tags = {});

 private:
  torch::Library* library_;
};

// A torch::Library of kind IMPL for the lifetime of a static object, as
// TORCH_LIBRARY_IMPL's, made only when the torch release guard lets the
// library register. A template only so that its members, defined in
// "atengen/kernel_signatures.h", can be instantiated in every
// KernelSignatures_*.cpp of every library as weak symbols.
template <typename Unused = void>
class __attribute__((visibility("hidden"))) LibraryImplT {
 public:
  using InitFn = void(LibraryRef&);
  LibraryImplT(
      const char* ns, c10::DispatchKey key, InitFn* init, const char* file, uint32_t line);
  ~LibraryImplT();
  LibraryImplT(const LibraryImplT&) = delete;
  LibraryImplT& operator=(const LibraryImplT&) = delete;

 private:
  torch::Library* library_ = nullptr;  // owned; none when the guard refused
};
using LibraryImpl = LibraryImplT<>;

// The same for TORCH_LIBRARY_FRAGMENT: a torch::Library of kind FRAGMENT, made
// only when the torch release guard lets the library register.
template <typename Unused = void>
class __attribute__((visibility("hidden"))) LibraryFragmentT {
 public:
  using InitFn = void(LibraryRef&);
  LibraryFragmentT(const char* ns, InitFn* init, const char* file, uint32_t line);
  ~LibraryFragmentT();
  LibraryFragmentT(const LibraryFragmentT&) = delete;
  LibraryFragmentT& operator=(const LibraryFragmentT&) = delete;

 private:
  torch::Library* library_ = nullptr;  // owned; none when the guard refused
};
using LibraryFragment = LibraryFragmentT<>;

}  // namespace atengen

// TORCH_LIBRARY_IMPL(ns, k, m) without torch/library.h: the body registers
// with m.impl("op.overload", &kernel).
#define ATENGEN_LIBRARY_IMPL(ns, k, m) ATENGEN_LIBRARY_IMPL_(ns, k, m, C10_UID)
#define ATENGEN_LIBRARY_IMPL_(ns, k, m, uid)                                              \
  static void C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid)(              \
      ::atengen::LibraryRef&);                                                            \
  static const ::atengen::LibraryImpl C10_CONCATENATE(                                    \
      ATENGEN_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                               \
      #ns, ::c10::DispatchKey::k, &C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, \
                                                   uid),                                  \
      __FILE__, __LINE__);                                                                \
  void C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::atengen::LibraryRef & m)

// TORCH_LIBRARY_FRAGMENT(ns, m) without torch/library.h: the body defines
// operators with m.def("ns::op.overload(...) -> ...") or
// m.def("...", {at::Tag::...}).
#define ATENGEN_LIBRARY_FRAGMENT(ns, m) ATENGEN_LIBRARY_FRAGMENT_(ns, m, C10_UID)
#define ATENGEN_LIBRARY_FRAGMENT_(ns, m, uid)                                        \
  static void C10_CONCATENATE(ATENGEN_LIBRARY_FRAGMENT_init_##ns##_, uid)(           \
      ::atengen::LibraryRef&);                                                       \
  static const ::atengen::LibraryFragment C10_CONCATENATE(                           \
      ATENGEN_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(                            \
      #ns, &C10_CONCATENATE(ATENGEN_LIBRARY_FRAGMENT_init_##ns##_, uid), __FILE__,   \
      __LINE__);                                                                     \
  void C10_CONCATENATE(ATENGEN_LIBRARY_FRAGMENT_init_##ns##_, uid)(::atengen::LibraryRef & m)
