// Builds against @torch//:torch_cpu and runs an ATen op on the CPU.
#include <ATen/ATen.h>

#include <cstdio>

int main() {
#if !defined(_GLIBCXX_USE_CXX11_ABI)
  std::puts("FAIL: _GLIBCXX_USE_CXX11_ABI is not defined by @torch//:headers");
  return 1;
#else
  const at::Tensor t = at::arange(6, at::kFloat).reshape({2, 3});
  const float sum = t.sum().item<float>();
  std::printf("sum=%g abi=%d\n", sum, _GLIBCXX_USE_CXX11_ABI);
  return sum == 15.0F ? 0 : 1;
#endif
}
