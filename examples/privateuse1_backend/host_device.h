// The hostdev backend's helpers, shared by device.cpp and kernels.cpp (and included by the
// generated registration sources through backend.yaml's extra_headers).
//
// hostdev is a toy accelerator whose "device memory" is ordinary host memory. That lets its
// kernels run torch's CPU kernels on a CPU tensor over the same bytes (host_view), which keeps
// the example about codegen and registration rather than about numerics.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

namespace hostdev {

// The allocator of hostdev memory (also registered for PrivateUse1 with REGISTER_ALLOCATOR).
c10::Allocator* allocator();

// A CPU tensor over t's bytes (no copy); t itself when it is already a CPU tensor.
at::Tensor host_view(const at::Tensor& t);

// A new hostdev tensor with the values of the CPU tensor `cpu`.
at::Tensor to_device(const at::Tensor& cpu);

}  // namespace hostdev
