#pragma once
// Shape functions of custom_lazy.yaml (a test header: declared, never defined).
#include <torch/csrc/lazy/core/shape.h>
namespace torch {
namespace lazy {
TORCH_API std::vector<torch::lazy::Shape> compute_shape_abs(const at::Tensor & self);
}  // namespace lazy
}  // namespace torch
