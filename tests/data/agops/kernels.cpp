// CPU kernels and schema definitions of the agops test library (ops.yaml). The
// autograd sources are generated from derivatives.yaml by atengen.autograd.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor scaled_tanh_cpu(const at::Tensor& self, double factor) {
  return at::tanh(self) * factor;
}

at::Tensor& scaled_tanh_cpu_(at::Tensor& self, double factor) {
  return self.tanh_().mul_(factor);
}

at::Tensor& scaled_tanh_out_cpu(const at::Tensor& self, double factor, at::Tensor& out) {
  return at::mul_out(out, at::tanh(self), factor);
}

std::tuple<at::Tensor, at::Tensor> mul_add_cpu(const at::Tensor& x, const at::Tensor& y) {
  return {x * y, x + y};
}

at::Tensor take_rows_cpu(const at::Tensor& self, const at::Tensor& index) {
  return self.index_select(0, index);
}

at::Tensor fused_mul_cpu(
    const at::Tensor& x, const at::Tensor& y, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? x * y + *bias : x * y;
}

at::Tensor list_mul_cpu(at::TensorList tensors) {
  at::Tensor result = tensors[0].clone();
  for (size_t i = 1; i < tensors.size(); ++i) result = result * tensors[i];
  return result;
}

// A view: the result shares self's storage.
at::Tensor diag_view_cpu(const at::Tensor& self) {
  return self.diagonal();
}

at::Tensor diag_view_copy_cpu(const at::Tensor& self) {
  return self.diagonal().clone();
}

// Rows start .. start + length of self, a view.
at::Tensor row_block_cpu(const at::Tensor& self, c10::SymInt start, c10::SymInt length) {
  return self.narrow_symint(0, start, length);
}

at::Tensor row_block_copy_cpu(const at::Tensor& self, c10::SymInt start, c10::SymInt length) {
  return self.narrow_symint(0, start, length).clone();
}

std::tuple<at::Tensor, at::Tensor> sort_rows_cpu(const at::Tensor& self) {
  auto [values, indices] = self.sort(-1);
  return {values, indices};
}

at::Tensor cube_cpu(const at::Tensor& self) {
  return self.pow(3);
}

std::tuple<at::Tensor, at::Tensor> mean_std_cpu(const at::Tensor& self) {
  auto mu = self.mean();
  return {mu, (self - mu).pow(2).mean().sqrt()};
}

at::Tensor& square_cpu_(at::Tensor& self) {
  return self.mul_(self);
}

at::Tensor& exp_scale_cpu_(at::Tensor& self, double factor) {
  return self.exp_().mul_(factor);
}

}  // namespace

TORCH_LIBRARY(agops, m) {
  m.def("scaled_tanh(Tensor self, float factor) -> Tensor");
  m.def("scaled_tanh_(Tensor(a!) self, float factor) -> Tensor(a!)");
  m.def("scaled_tanh.out(Tensor self, float factor, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mul_add(Tensor x, Tensor y) -> (Tensor prod, Tensor total)");
  m.def("take_rows(Tensor self, Tensor index) -> Tensor");
  m.def("fused_mul(Tensor x, Tensor y, Tensor? bias=None) -> Tensor");
  m.def("list_mul(Tensor[] tensors) -> Tensor");
  m.def("diag_view(Tensor(a) self) -> Tensor(a)");
  m.def("diag_view_copy(Tensor self) -> Tensor");
  m.def("row_block(Tensor(a) self, SymInt start, SymInt length) -> Tensor(a)");
  m.def("row_block_copy(Tensor self, SymInt start, SymInt length) -> Tensor");
  m.def("sort_rows(Tensor self) -> (Tensor values, Tensor indices)");
  m.def("cube(Tensor self) -> Tensor");
  m.def("mean_std(Tensor self) -> (Tensor mu, Tensor sigma)");
  m.def("square_(Tensor(a!) self) -> Tensor(a!)");
  m.def("exp_scale_(Tensor(a!) self, float factor) -> Tensor(a!)");
}

TORCH_LIBRARY_IMPL(agops, CPU, m) {
  m.impl("scaled_tanh", TORCH_FN(scaled_tanh_cpu));
  m.impl("scaled_tanh_", TORCH_FN(scaled_tanh_cpu_));
  m.impl("mul_add", TORCH_FN(mul_add_cpu));
  m.impl("take_rows", TORCH_FN(take_rows_cpu));
  m.impl("scaled_tanh.out", TORCH_FN(scaled_tanh_out_cpu));
  m.impl("fused_mul", TORCH_FN(fused_mul_cpu));
  m.impl("list_mul", TORCH_FN(list_mul_cpu));
  m.impl("diag_view", TORCH_FN(diag_view_cpu));
  m.impl("diag_view_copy", TORCH_FN(diag_view_copy_cpu));
  m.impl("row_block", TORCH_FN(row_block_cpu));
  m.impl("row_block_copy", TORCH_FN(row_block_copy_cpu));
  m.impl("sort_rows", TORCH_FN(sort_rows_cpu));
  m.impl("cube", TORCH_FN(cube_cpu));
  m.impl("mean_std", TORCH_FN(mean_std_cpu));
  m.impl("square_", TORCH_FN(square_cpu_));
  m.impl("exp_scale_", TORCH_FN(exp_scale_cpu_));
}
