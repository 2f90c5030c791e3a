// The CUDA kernel of stableops::scaled_add, compiled by nvcc (aten_codegen's cuda_srcs) with
// -DTORCH_TARGET_VERSION like every source of the library, in torch's stable types only.
#include <cuda_runtime.h>

#include <cstdint>

#include <torch/csrc/stable/accelerator.h>
#include <torch/headeronly/util/Exception.h>

#include "atengen/stable/ops/contiguous.h"
#include "atengen/stable/ops/empty_like.h"
#include "stableops/ops/scaled_add_native.h"

namespace {

__global__ void scaled_add_kernel(const float* x, const float* y, float alpha, float* z, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    z[i] = x[i] + alpha * y[i];
  }
}

// The stream to launch on: torch's current one. The stable ABI gives its native handle from
// torch 2.13 on (Stream::nativeHandle); built for an older target, the kernel runs on the default
// stream, which is torch's current one unless the caller chose another (refused, not raced).
cudaStream_t current_stream(torch::stable::accelerator::DeviceIndex device) {
  torch::stable::accelerator::Stream stream = torch::stable::accelerator::getCurrentStream(device);
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_13_0
  return static_cast<cudaStream_t>(stream.nativeHandle());
#else
  STD_TORCH_CHECK(
      stream.id() == 0,
      "scaled_add: built for a torch before 2.13, it runs on the default CUDA stream only");
  return nullptr;
#endif
}

}  // namespace

namespace stableops {

torch::stable::Tensor scaled_add_cuda(
    const torch::stable::Tensor& self, const torch::stable::Tensor& other, double alpha) {
  STD_TORCH_CHECK(
      self.scalar_type() == torch::headeronly::ScalarType::Float &&
          other.scalar_type() == torch::headeronly::ScalarType::Float,
      "scaled_add: float32 tensors only");
  STD_TORCH_CHECK(self.numel() == other.numel() && self.dim() == other.dim(),
      "scaled_add: self and other must have one shape");
  STD_TORCH_CHECK(other.get_device_index() == self.get_device_index(),
      "scaled_add: self and other must be on one device");
  torch::stable::accelerator::DeviceGuard guard(self.get_device_index());
  torch::stable::Tensor a = atengen::stable::contiguous(self);
  torch::stable::Tensor b = atengen::stable::contiguous(other);
  torch::stable::Tensor out = atengen::stable::empty_like(a);
  const int64_t n = a.numel();
  if (n == 0) {
    return out;
  }
  constexpr int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  scaled_add_kernel<<<blocks, threads, 0, current_stream(self.get_device_index())>>>(
      static_cast<const float*>(a.const_data_ptr()),
      static_cast<const float*>(b.const_data_ptr()),
      static_cast<float>(alpha),
      static_cast<float*>(out.mutable_data_ptr()),
      n);
  const cudaError_t status = cudaGetLastError();
  STD_TORCH_CHECK(status == cudaSuccess, "scaled_add: ", cudaGetErrorString(status));
  return out;
}

}  // namespace stableops
