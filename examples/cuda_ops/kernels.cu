// The CUDA kernel of ops.yaml, compiled by nvcc (aten_codegen's cuda_srcs) into the same
// library. The generated CUDA registration has already made x's device current (device guard)
// and checked that y is on it.
//
// It includes the headers of what it uses (one per operator, as torch's own kernels do) rather
// than <ATen/ATen.h>, every operator's: nvcc parses headers more slowly than g++, and with
// ATen/ATen.h this file took 47 CPU s to compile for one architecture instead of 34.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "cudaops/ops/mul_add_scalar_native.h"

namespace {

template <typename T>
__global__ void mul_add_scalar_kernel(const T* x, const T* y, T alpha, T* out, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = x[i] * y[i] + alpha;
  }
}

}  // namespace

namespace at::native {

at::Tensor mul_add_scalar_cuda(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK(x.sizes() == y.sizes(), "mul_add_scalar: x and y must have the same shape");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "mul_add_scalar: x and y must have one dtype");
  at::Tensor xc = x.contiguous();
  at::Tensor yc = y.contiguous();
  at::Tensor out = at::empty_like(xc);
  int64_t n = xc.numel();
  if (n == 0) {
    return out;
  }
  constexpr int threads = 256;
  int blocks = static_cast<int>((n + threads - 1) / threads);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "mul_add_scalar_cuda", [&] {
    mul_add_scalar_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        xc.const_data_ptr<scalar_t>(),
        yc.const_data_ptr<scalar_t>(),
        static_cast<scalar_t>(alpha),
        out.mutable_data_ptr<scalar_t>(),
        n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace at::native
