#pragma once
// A minimal node base for compiling XLA-shaped lazy IR headers without torch_xla.
#include <torch/csrc/lazy/core/ir.h>
namespace test_lazy {
class TestNode : public torch::lazy::Node {
 public:
  TestNode(torch::lazy::OpKind op, torch::lazy::OpList operands, std::vector<torch::lazy::Shape>&& shapes,
           size_t num_outputs, torch::lazy::hash_t hash_seed)
      : torch::lazy::Node(op, operands, std::move(shapes), num_outputs), seed_(hash_seed) {}
  torch::lazy::hash_t seed_;
};
}
