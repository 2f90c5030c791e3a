// Helpers shared by every generated registration shard. Kept out of the
// shards themselves so that a shard's bytes depend only on its operators.
#pragma once

// Only light headers here: every shard includes this file, and each header
// costs every shard's compile (ATen/native/Resize.h alone adds ~3 s). In
// particular not the dispatcher's headers (torch/library.h,
// ATen/core/dispatch/Dispatcher.h): a source that includes them pays about
// 0.7 CPU s more even from a precompiled header, in templates GCC instantiates
// at the end of every translation unit. Shards that call ops through typed
// handles include "atengen/dispatch.h"; the code that needs torch/library.h is
// compiled once per signature (see ATENGEN_LIBRARY_IMPL).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "atengen/library.h"

namespace atengen {

// at::empty / at::empty_strided without their headers: at::_ops declares the
// dispatcher entry points, compiled into libtorch.
inline at::Tensor empty(at::IntArrayRef sizes, const at::TensorOptions& options) {
  return at::_ops::empty_memory_format::call(
      c10::fromIntArrayRefSlow(sizes), c10::optTypeMetaToScalarType(options.dtype_opt()),
      options.layout_opt(), options.device_opt(), options.pinned_memory_opt(),
      options.memory_format_opt());
}

inline at::Tensor empty_strided(
    at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  return at::_ops::empty_strided::call(
      c10::fromIntArrayRefSlow(sizes), c10::fromIntArrayRefSlow(strides),
      c10::optTypeMetaToScalarType(options.dtype_opt()), options.layout_opt(),
      options.device_opt(), options.pinned_memory_opt());
}

// Like at::native::resize_output: resize `out` to `shape`, warning when a
// non-empty tensor changes shape (in aten's words, so that users see one
// warning whichever kernel resized). Returns whether it resized.
inline bool resize_output(const at::Tensor& out, at::IntArrayRef shape) {
  if (out.sizes().equals(shape)) {
    return false;
  }
  if (out.numel() != 0) {
    TORCH_WARN(
        "An output with one or more elements was resized since it had shape ", out.sizes(),
        ", which does not match the required output shape ", shape,
        ". This behavior is deprecated, and in a future PyTorch release outputs will not be "
        "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
        "resizing it, inplace, to zero elements with t.resize_(0).");
  }
  out.resize_(shape);
  return true;
}

// A fresh output for a functional structured kernel: strided when the meta
// function asked for strides, otherwise contiguous in the requested format.
inline at::Tensor create_out(
    at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  if (strides.empty()) {
    return empty(sizes, options);
  }
  return empty_strided(sizes, strides, options);
}

// Resize a user-provided out= tensor to what the meta function computed.
// resize_output warns if a non-empty tensor changes shape; after a resize we
// also honour the requested strides or memory format.
inline void resize_out(
    const at::Tensor& out,
    at::IntArrayRef sizes,
    at::IntArrayRef strides,
    const at::TensorOptions& options) {
  TORCH_CHECK(
      options.dtype() == out.dtype(),
      "Expected out tensor to have dtype ", options.dtype(), ", but got ", out.dtype(),
      " instead");
  TORCH_CHECK(
      options.device() == out.device(),
      "Expected out tensor to have device ", options.device(), ", but got ", out.device(),
      " instead");
  const bool resized = resize_output(out, sizes);
  if (resized) {
    if (!strides.empty()) {
      TORCH_INTERNAL_ASSERT(!options.memory_format_opt().has_value());
      at::Tensor(out).as_strided_(sizes, strides);
    } else if (options.memory_format_opt().has_value()) {
      out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
    }
  }
}

// An inplace op cannot change its self's dtype, device or shape.
inline void check_inplace(
    const at::Tensor& self, at::IntArrayRef sizes, const at::TensorOptions& options) {
  TORCH_CHECK(
      options.dtype() == self.dtype(),
      "Bad in-place call: input tensor dtype ", self.dtype(), " and output tensor dtype ",
      options.dtype(), " should match");
  TORCH_CHECK(
      options.device() == self.device(),
      "Bad in-place call: input tensor device ", self.device(), " and output tensor device ",
      options.device(), " should match");
  TORCH_CHECK(
      sizes == self.sizes(),
      "Bad in-place call: input tensor size ", self.sizes(), " and output tensor size ", sizes,
      " should match");
}

// When an out= or inplace tensor has other strides than the kernel wants, the
// kernel writes into a proxy which is copied back afterwards.
inline std::optional<at::Tensor> maybe_create_proxy(
    const at::Tensor& out,
    at::IntArrayRef sizes,
    at::IntArrayRef strides,
    const at::TensorOptions& options) {
  if (!strides.empty() && out.strides() != strides) {
    return empty_strided(sizes, strides, options);
  }
  return std::nullopt;
}

// Generated out= kernels compute the functional result and copy it over.
inline void resize_and_copy(const at::Tensor& out, const at::Tensor& result) {
  resize_output(out, result.sizes());
  at::Tensor(out).copy_(result);
}

inline void resize_and_copy(at::TensorList out, const std::vector<at::Tensor>& result) {
  TORCH_CHECK(
      out.size() == result.size(), "expected ", result.size(), " out tensors, got ",
      out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    resize_and_copy(out[i], result[i]);
  }
}

}  // namespace atengen

namespace atengen {

// Generated functional kernels run the mutating op on copies of its inputs.
inline at::Tensor clone_arg(const at::Tensor& t) {
  return t.clone();
}

inline std::vector<at::Tensor> clone_arg(at::TensorList ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) {
    out.push_back(t.clone());
  }
  return out;
}

inline std::optional<at::Tensor> clone_arg(const std::optional<at::Tensor>& t) {
  return t.has_value() ? std::make_optional(t->clone()) : std::nullopt;
}

// view_copy kernels: the view's values in fresh, contiguous memory.
inline at::Tensor materialize(const at::Tensor& view) {
  return view.clone(at::MemoryFormat::Contiguous);
}

inline std::vector<at::Tensor> materialize(const std::vector<at::Tensor>& views) {
  std::vector<at::Tensor> out;
  out.reserve(views.size());
  for (const auto& v : views) {
    out.push_back(v.clone(at::MemoryFormat::Contiguous));
  }
  return out;
}

}  // namespace atengen
