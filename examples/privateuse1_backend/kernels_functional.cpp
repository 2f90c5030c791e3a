// The functional hostdev backend (backend_functional.yaml, built with functional = True): the
// kernels of FunctionalNativeFunctions, a PrivateUse1 fallback that refuses mutating and aliasing
// operators, and a log of every operator that reached PrivateUse1.
//
// Every kernel returns a new tensor; none mutates an argument or returns a view of one. Under
// torch.func.functionalize, torch's Functionalize kernels (above this backend) turn inplace and
// out= ops into calls of these, views into *_copy ops, and writes through a view into *_scatter
// ops on the base. The log, read through torch.ops.hostdev.calls(), lets a test check that.
#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <mutex>
#include <string>
#include <vector>

#include "PrivateUse1NativeFunctions.h"
#include "host_device.h"

namespace hostdev {
namespace {

const c10::DispatchKeySet kKeys(c10::DispatchKey::PrivateUse1);

std::mutex calls_mutex;
std::vector<std::string> call_log;

// Records that `op` (an operator name as the backend YAML writes it) reached PrivateUse1.
void note(std::string op) {
  const std::lock_guard<std::mutex> lock(calls_mutex);
  call_log.push_back(std::move(op));
}

std::vector<std::string> calls() {
  const std::lock_guard<std::mutex> lock(calls_mutex);
  return call_log;
}

void clear_calls() {
  const std::lock_guard<std::mutex> lock(calls_mutex);
  call_log.clear();
}

// The kernels compute on CPU tensors over the same bytes and copy the result to new hostdev
// memory, so no result aliases an input.
at::Tensor fresh(const at::Tensor& cpu_result) { return to_device(cpu_result); }

// Operators without a kernel. A functional backend gets the mutating and aliasing ones only when
// functionalization did not run above it (or for an op it cannot rewrite), and the non-functional
// backend's answer, running them on the CPU and copying the results back, would hide that. So
// they fail, naming the op; functional ones still run on the CPU. Both are logged.
void functional_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::string name = schema.name().substr(schema.name().find("::") + 2);
  if (!schema.overload_name().empty()) {
    name += "." + schema.overload_name();
  }
  bool aliases = false;
  for (const c10::Argument& r : schema.returns()) {
    aliases = aliases || r.alias_info() != nullptr;
  }
  note("fallback:" + name);
  TORCH_CHECK(!schema.is_mutable() && !aliases, "hostdev is a functional backend: ", name,
              schema.is_mutable() ? " mutates its arguments" : " returns a view",
              " and has no kernel; run the program under torch.func.functionalize, which turns it "
              "into functional and view_copy operators");
  at::native::cpu_fallback(op, stack);
}

// Glue for factories. ones, zeros_like, full, ... are CompositeExplicitAutograd: they decompose
// into empty + fill_ (or zero_). Without a Functionalize kernel of their own they reach torch's
// boxed Functionalize fallback, which runs them with functionalization switched off, so that
// fill_ would reach this backend as a mutation. This kernel runs the same decomposition below the
// Functionalize key but with functionalization still on: empty's result is wrapped in a
// FunctionalTensorWrapper by that fallback, and fill_ on it becomes fill. It skips functorch's
// back-mode key as well: that key hands the op to the layer below torch.func.functionalize, which
// must not see functional tensors, while the decomposition's own calls still enter that layer.
void decompose_functionalized(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                              torch::jit::Stack* stack) {
  op.redispatchBoxed(
      (keys & c10::after_func_keyset).remove(c10::DispatchKey::FuncTorchDynamicLayerBackMode),
      stack);
}

}  // namespace

// --- memory and copies ---------------------------------------------------------------------

at::Tensor FunctionalNativeFunctions::empty(at::IntArrayRef size,
                                            std::optional<at::ScalarType> dtype,
                                            std::optional<at::Layout>, std::optional<at::Device>,
                                            std::optional<bool>,
                                            std::optional<at::MemoryFormat> memory_format) {
  note("empty.memory_format");
  return at::detail::empty_generic(size, allocator(), kKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor FunctionalNativeFunctions::empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                                                    std::optional<at::ScalarType> dtype,
                                                    std::optional<at::Layout>,
                                                    std::optional<at::Device>,
                                                    std::optional<bool>) {
  note("empty_strided");
  return at::detail::empty_strided_generic(size, stride, allocator(), kKeys,
                                           c10::dtype_or_default(dtype));
}

// .to(): dispatched on self, so self is on hostdev; the result goes to the CPU or stays here.
at::Tensor FunctionalNativeFunctions::_to_copy(const at::Tensor& self,
                                               std::optional<at::ScalarType> dtype,
                                               std::optional<at::Layout> layout,
                                               std::optional<at::Device> device,
                                               std::optional<bool> pin_memory, bool non_blocking,
                                               std::optional<at::MemoryFormat> memory_format) {
  note("_to_copy");
  const bool to_cpu = device.has_value() && device->is_cpu();
  TORCH_CHECK(to_cpu || !device.has_value() || device->is_privateuseone(),
              "hostdev copies only to the CPU or to hostdev, not to ", *device);
  at::Tensor cpu = at::_to_copy(host_view(self), dtype, layout, at::Device(at::kCPU), pin_memory,
                                non_blocking, memory_format);
  return to_cpu ? cpu : fresh(cpu);
}

// What copy_ (CompositeExplicitAutograd) calls for a copy from, to or within hostdev: the one
// writing kernel of the backend. It is how tensors enter the device (.to(), and functionalize
// copying mutated values back into its inputs), never a result of functionalization.
at::Tensor FunctionalNativeFunctions::_copy_from(const at::Tensor& self, const at::Tensor& dst,
                                                 bool /*non_blocking: copies are synchronous*/) {
  note("_copy_from");
  host_view(dst).copy_(host_view(self));
  return dst;
}

at::Scalar FunctionalNativeFunctions::_local_scalar_dense(const at::Tensor& self) {
  note("_local_scalar_dense");
  return at::_local_scalar_dense(host_view(self));
}

// --- functional arithmetic ----------------------------------------------------------------

at::Tensor FunctionalNativeFunctions::add(const at::Tensor& self, const at::Tensor& other,
                                          const at::Scalar& alpha) {
  note("add.Tensor");
  return fresh(at::add(host_view(self), host_view(other), alpha));
}

at::Tensor FunctionalNativeFunctions::mul(const at::Tensor& self, const at::Tensor& other) {
  note("mul.Tensor");
  return fresh(at::mul(host_view(self), host_view(other)));
}

at::Tensor FunctionalNativeFunctions::abs(const at::Tensor& self) {
  note("abs");
  return fresh(at::abs(host_view(self)));
}

at::Tensor FunctionalNativeFunctions::sum(const at::Tensor& self,
                                          std::optional<at::ScalarType> dtype) {
  note("sum");
  return fresh(at::sum(host_view(self), dtype));
}

// fill_ and zero_-like writes, functionalized.
at::Tensor FunctionalNativeFunctions::fill(const at::Tensor& self, const at::Scalar& value) {
  note("fill.Scalar");
  return fresh(at::fill(host_view(self), value));
}

at::Tensor FunctionalNativeFunctions::zero(const at::Tensor& self) {
  note("zero");
  return fresh(at::zero(host_view(self)));
}

// Its composite kernel would allocate and then copy_ into the new tensor.
at::Tensor FunctionalNativeFunctions::clone(const at::Tensor& self,
                                            std::optional<at::MemoryFormat> memory_format) {
  note("clone");
  return fresh(at::clone(host_view(self), memory_format));
}

// copy_ inside a functionalized program: self's shape and dtype, src's values. self may be a CPU
// tensor (dispatch chose hostdev for src), and then so is the result.
at::Tensor FunctionalNativeFunctions::copy(const at::Tensor& self, const at::Tensor& src,
                                           bool non_blocking) {
  note("copy");
  at::Tensor out = at::copy(host_view(self), host_view(src), non_blocking);
  return self.is_privateuseone() ? fresh(out) : out;
}

// --- view_copy ops, and the scatters that write a mutated view back -------------------------

at::Tensor FunctionalNativeFunctions::view_copy(const at::Tensor& self, at::IntArrayRef size) {
  note("view_copy");
  return fresh(at::view_copy(host_view(self), size));
}

at::Tensor FunctionalNativeFunctions::transpose_copy(const at::Tensor& self, int64_t dim0,
                                                     int64_t dim1) {
  note("transpose_copy.int");
  return fresh(at::transpose_copy(host_view(self), dim0, dim1));
}

at::Tensor FunctionalNativeFunctions::t_copy(const at::Tensor& self) {
  note("t_copy");
  return fresh(at::t_copy(host_view(self)));
}

at::Tensor FunctionalNativeFunctions::unsqueeze_copy(const at::Tensor& self, int64_t dim) {
  note("unsqueeze_copy");
  return fresh(at::unsqueeze_copy(host_view(self), dim));
}

// unsqueeze's inverse: how a write through an unsqueezed view reaches its base.
at::Tensor FunctionalNativeFunctions::squeeze_copy(const at::Tensor& self, int64_t dim) {
  note("squeeze_copy.dim");
  return fresh(at::squeeze_copy(host_view(self), dim));
}

at::Tensor FunctionalNativeFunctions::select_copy(const at::Tensor& self, int64_t dim,
                                                  int64_t index) {
  note("select_copy.int");
  return fresh(at::select_copy(host_view(self), dim, index));
}

at::Tensor FunctionalNativeFunctions::slice_copy(const at::Tensor& self, int64_t dim,
                                                 std::optional<int64_t> start,
                                                 std::optional<int64_t> end, int64_t step) {
  note("slice_copy.Tensor");
  return fresh(at::slice_copy(host_view(self), dim, start, end, step));
}

at::Tensor FunctionalNativeFunctions::select_scatter(const at::Tensor& self, const at::Tensor& src,
                                                     int64_t dim, int64_t index) {
  note("select_scatter");
  return fresh(at::select_scatter(host_view(self), host_view(src), dim, index));
}

at::Tensor FunctionalNativeFunctions::slice_scatter(const at::Tensor& self, const at::Tensor& src,
                                                    int64_t dim, std::optional<int64_t> start,
                                                    std::optional<int64_t> end, int64_t step) {
  note("slice_scatter");
  return fresh(at::slice_scatter(host_view(self), host_view(src), dim, start, end, step));
}

// --- the fallback, and the log for tests ----------------------------------------------------

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&functional_fallback>());
}

// For every device: these decompositions are device-generic, and they are what torch runs today
// with functionalization off.
TORCH_LIBRARY_IMPL(aten, Functionalize, m) {
  for (const char* op : {"full", "ones", "zeros", "scalar_tensor", "full_like", "ones_like",
                         "zeros_like", "new_full", "new_ones", "new_zeros"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&decompose_functionalized>());
  }
}

// torch.ops.hostdev.calls(): the operators that reached PrivateUse1 since clear_calls(), in
// order; fallback ones as "fallback:<name>".
TORCH_LIBRARY(hostdev, m) {
  m.def("calls() -> str[]", &calls);
  m.def("clear_calls() -> ()", &clear_calls);
}

}  // namespace hostdev
