// The hostdev kernels: a definition for every static method that the generated
// PrivateUse1NativeFunctions.h declares (the build checks that none is missing).
//
// Computing kernels run torch's CPU kernels on host_view()s of the inputs and copy the result
// into new hostdev memory; views and resizes work on the hostdev tensors directly.
#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <torch/csrc/autograd/custom_function.h>

#include "PrivateUse1NativeFunctions.h"
#include "host_device.h"

namespace hostdev {
namespace {

const c10::DispatchKeySet kKeys(c10::DispatchKey::PrivateUse1);

c10::IntArrayRef ints(c10::SymIntArrayRef s) { return C10_AS_INTARRAYREF_SLOW(s); }

// relu with its own backward pass: registered for AutogradPrivateUse1 (backend.yaml's
// `autograd:`), so autograd's derivative formula for relu is not used on hostdev.
struct HostRelu : torch::autograd::Function<HostRelu> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& self) {
    ctx->save_for_backward({self});
    return to_device(at::relu(host_view(self)));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor self = ctx->get_saved_variables()[0];
    return {to_device(host_view(grads[0]).mul(host_view(self).gt(0)))};
  }
};

}  // namespace

// --- memory and copies ---------------------------------------------------------------------

at::Tensor PrivateUse1NativeFunctions::empty_symint(
    c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
    std::optional<at::Device>, std::optional<bool>, std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(ints(size), allocator(), kKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor PrivateUse1NativeFunctions::empty_strided_symint(
    c10::SymIntArrayRef size, c10::SymIntArrayRef stride, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(ints(size), ints(stride), allocator(), kKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor PrivateUse1NativeFunctions::_copy_from(const at::Tensor& self, const at::Tensor& dst,
                                                  bool /*non_blocking: copies are synchronous*/) {
  host_view(dst).copy_(host_view(self));
  return dst;
}

at::Tensor PrivateUse1NativeFunctions::_copy_from_and_resize(const at::Tensor& self,
                                                             const at::Tensor& dst) {
  dst.resize_(self.sizes());
  host_view(dst).copy_(host_view(self));
  return dst;
}

const at::Tensor& PrivateUse1NativeFunctions::resize__symint(
    const at::Tensor& self, c10::SymIntArrayRef size,
    std::optional<at::MemoryFormat> memory_format) {
  at::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(ints(size));
  const size_t nbytes = at::detail::computeStorageNbytesContiguous(
      impl->sizes(), impl->dtype().itemsize(), impl->storage_offset());
  // Host memory: the CPU resize applies, and it reallocates with the storage's allocator.
  at::native::maybe_resize_storage_cpu(impl, nbytes);
  if (memory_format.has_value()) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Scalar PrivateUse1NativeFunctions::_local_scalar_dense(const at::Tensor& self) {
  return at::_local_scalar_dense(host_view(self));
}

// --- views: new tensors over the same hostdev storage ----------------------------------------

at::Tensor PrivateUse1NativeFunctions::view_symint(const at::Tensor& self,
                                                   c10::SymIntArrayRef size) {
  return at::native::view(self, ints(size));
}

at::Tensor PrivateUse1NativeFunctions::as_strided_symint(
    const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
    std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset.has_value()) {
    offset = storage_offset->guard_int(__FILE__, __LINE__);
  }
  return at::native::as_strided_tensorimpl(self, ints(size), ints(stride), offset);
}

at::Tensor PrivateUse1NativeFunctions::_reshape_alias_symint(const at::Tensor& self,
                                                             c10::SymIntArrayRef size,
                                                             c10::SymIntArrayRef stride) {
  return at::native::as_strided_tensorimpl(self, ints(size), ints(stride), std::nullopt);
}

// --- arithmetic -----------------------------------------------------------------------------

at::Tensor PrivateUse1NativeFunctions::add(const at::Tensor& self, const at::Tensor& other,
                                           const at::Scalar& alpha) {
  return to_device(at::add(host_view(self), host_view(other), alpha));
}

at::Tensor PrivateUse1NativeFunctions::mul(const at::Tensor& self, const at::Tensor& other) {
  return to_device(at::mul(host_view(self), host_view(other)));
}

at::Tensor PrivateUse1NativeFunctions::abs(const at::Tensor& self) {
  return to_device(at::abs(host_view(self)));
}

at::Tensor& PrivateUse1NativeFunctions::fill_(at::Tensor& self, const at::Scalar& value) {
  host_view(self).fill_(value);
  return self;
}

at::Tensor PrivateUse1NativeFunctions::sum(const at::Tensor& self,
                                           std::optional<at::ScalarType> dtype) {
  return to_device(at::sum(host_view(self), dtype));
}

at::Tensor PrivateUse1NativeFunctions::sum(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                           bool keepdim, std::optional<at::ScalarType> dtype) {
  return to_device(at::sum(host_view(self), dim, keepdim, dtype));
}

// tanh's forward pass: its AutogradPrivateUse1 kernel is generated from derivatives.yaml.
at::Tensor PrivateUse1NativeFunctions::tanh(const at::Tensor& self) {
  return to_device(at::tanh(host_view(self)));
}

// --- a structured op: impl() only ---------------------------------------------------------

// torch's meta() (at::meta::structured_sub_Tensor) has checked the arguments, broadcast them,
// promoted their dtypes and given `out` its shape and dtype (a new tensor for sub, self for
// sub_, the resized out= tensor for sub.out): only the values are left to compute.
void structured_sub_out::impl(const at::Tensor& self, const at::Tensor& other,
                              const at::Scalar& alpha, const at::Tensor& out) {
  host_view(out).copy_(at::sub(host_view(self), host_view(other), alpha));
}

// --- autograd override --------------------------------------------------------------------

at::Tensor PrivateUse1NativeFunctions::relu(const at::Tensor& self) {
  return HostRelu::apply(self);
}

}  // namespace hostdev
