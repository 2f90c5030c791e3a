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

// torch's C shim's handle of a torch::Library (torch/csrc/inductor/aoti_torch/c/shim.h).
class TorchLibraryOpaque;

namespace atengen {

// A kernel in the form torch's C shim registers (torch_library_impl): it takes
// its arguments from `stack` (64-bit words, StableIValue) and leaves its
// results there.
using BoxedKernel = void(uint64_t* stack, uint64_t num_args, uint64_t num_outputs);

// Calls `kernel` with the arguments on `stack` and puts its results there.
// Only declared: the KernelSignatures_*.cpp sources instantiate it once per
// C++ signature, from "atengen/boxed_kernels.h", as they do LibraryRef::impl.
template <typename Signature>
__attribute__((visibility("hidden"))) void call_boxed(
    Signature* kernel, uint64_t* stack, uint64_t num_args, uint64_t num_outputs);

// The boxed form of the kernel `Kernel`, which LibraryRef::impl_boxed
// registers. Instantiated in the registration source, once per kernel: the
// shim's kernels are plain functions, without data to say which kernel to
// call. Each is one call of call_boxed, whose code is compiled elsewhere.
template <auto Kernel>
__attribute__((visibility("hidden"))) void boxed(
    uint64_t* stack, uint64_t num_args, uint64_t num_outputs) {
  // Qualified: a lookup by argument types would instantiate std::optional<at::Tensor> and the
  // like, which need a complete tensor type.
  ::atengen::call_boxed(Kernel, stack, num_args, num_outputs);
}

// What ATENGEN_LIBRARY_IMPL and ATENGEN_LIBRARY_FRAGMENT hand their body: the
// torch::Library being registered into (by its C shim handle), with three
// operations: impl(name, fn), that registers the kernel fn (a plain function
// pointer) for the operator `name`, impl_boxed(name, &boxed<fn>), that
// registers it boxed, through torch's C shim, and def(schema[, tags]), that
// defines an operator.
//
// A boxed registration needs none of torch/library.h, whose parse is most of
// a small library's first build (4 s of 5): the generator registers boxed
// every kernel of a custom operator whose types the C shim carries in every
// supported release (aten/kernel_signatures.py says which), and typed the
// others, and aten's operators, whose C++ callers would box their arguments.
// Calls from Python are boxed either way; a boxed kernel converts each
// argument once more.
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
  explicit LibraryRef(TorchLibraryOpaque* library) : library_(library) {}

  template <typename Signature>
  void impl(const char* name, Signature* fn);

  // The others are only declared, as impl, so that a registration source
  // need not include torch/library.h (about 7 s of compile without a
  // precompiled header); templates only so that every KernelSignatures_*.cpp
  // can instantiate them as weak symbols. impl_boxed and def(schema) go
  // through torch's C shim ("atengen/shim_library.h"); def(schema, tags)
  // through torch/library.h, since 2.11's shim takes no tags.
  template <typename Unused = void>
  void impl_boxed(const char* name, BoxedKernel* kernel);

  template <typename Unused = void>
  void def(const char* schema);

  template <typename Unused = void>
  void def(const char* schema, std::initializer_list<at::Tag> tags);

 private:
  TorchLibraryOpaque* library_;
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
  LibraryImplT(const char* ns, const char* key, InitFn* init, const char* file, uint32_t line);
  ~LibraryImplT();
  LibraryImplT(const LibraryImplT&) = delete;
  LibraryImplT& operator=(const LibraryImplT&) = delete;

 private:
  TorchLibraryOpaque* library_ = nullptr;  // owned; none when the guard refused
};
using LibraryImpl = LibraryImplT<>;

// The same for the keys whose names torch's C shim cannot parse (QuantizedMeta):
// the torch::Library is made through torch/library.h, by the key's value.
// Defined in "atengen/kernel_signatures.h".
template <typename Unused = void>
class __attribute__((visibility("hidden"))) TypedLibraryImplT {
 public:
  using InitFn = void(LibraryRef&);
  TypedLibraryImplT(
      const char* ns, c10::DispatchKey key, InitFn* init, const char* file, uint32_t line);
  ~TypedLibraryImplT();
  TypedLibraryImplT(const TypedLibraryImplT&) = delete;
  TypedLibraryImplT& operator=(const TypedLibraryImplT&) = delete;

 private:
  TorchLibraryOpaque* library_ = nullptr;  // owned; none when the guard refused
};
using TypedLibraryImpl = TypedLibraryImplT<>;

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
  TorchLibraryOpaque* library_ = nullptr;  // owned; none when the guard refused
};
using LibraryFragment = LibraryFragmentT<>;

}  // namespace atengen

// TORCH_LIBRARY_IMPL(ns, k, m) without torch/library.h: the body registers
// with m.impl("op.overload", &kernel) or
// m.impl_boxed("op.overload", &::atengen::boxed<&kernel>).
#define ATENGEN_LIBRARY_IMPL(ns, k, m) ATENGEN_LIBRARY_IMPL_(ns, k, m, C10_UID)
#define ATENGEN_LIBRARY_IMPL_(ns, k, m, uid)                                              \
  static void C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid)(              \
      ::atengen::LibraryRef&);                                                            \
  static const ::atengen::LibraryImpl C10_CONCATENATE(                                    \
      ATENGEN_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                               \
      #ns, #k, &C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid), __FILE__,  \
      __LINE__);                                                                          \
  void C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::atengen::LibraryRef & m)

// ATENGEN_LIBRARY_IMPL for a key torch's C shim cannot name (TypedLibraryImplT).
#define ATENGEN_TYPED_LIBRARY_IMPL(ns, k, m) ATENGEN_TYPED_LIBRARY_IMPL_(ns, k, m, C10_UID)
#define ATENGEN_TYPED_LIBRARY_IMPL_(ns, k, m, uid)                                          \
  static void C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid)(                \
      ::atengen::LibraryRef&);                                                              \
  static const ::atengen::TypedLibraryImpl C10_CONCATENATE(                                 \
      ATENGEN_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                                 \
      #ns, ::c10::DispatchKey::k,                                                           \
      &C10_CONCATENATE(ATENGEN_LIBRARY_IMPL_init_##ns##_##k##_, uid), __FILE__, __LINE__);  \
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
      #ns, &C10_CONCATENATE(ATENGEN_LIBRARY_FRAGMENT_init_##ns##_, uid), __FILE__,  \
      __LINE__);                                                                     \
  void C10_CONCATENATE(ATENGEN_LIBRARY_FRAGMENT_init_##ns##_, uid)(::atengen::LibraryRef & m)
