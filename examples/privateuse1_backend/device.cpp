// The hostdev device itself: allocator, device guard, PrivateUse1 hooks and a CPU fallback.
// Kernels are in kernels.cpp; their registrations are generated from backend.yaml.
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>

#include "host_device.h"

namespace hostdev {
namespace {

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;

struct HostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    // c10's aligned host allocation, tagged with our device: torch sees hostdev memory.
    void* data = nbytes == 0 ? nullptr : c10::alloc_cpu(nbytes);
    return {data, data, &c10::free_cpu, c10::Device(kDevice, 0)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &c10::free_cpu; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

HostAllocator host_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_allocator);

// One device, hostdev:0, with one (synchronous) stream.
struct HostGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDevice; }
  c10::Device exchangeDevice(c10::Device d) const override {
    setDevice(d);
    return c10::Device(kDevice, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kDevice, 0); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kDevice && (!d.has_index() || d.index() == 0),
                "hostdev has one device, hostdev:0; got ", d);
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, HostGuardImpl);

// What torch asks a PrivateUse1 backend outside the dispatcher (device checks, storage resize).
struct HostHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  at::Device getDeviceFromPtr(void*) const override { return at::Device(kDevice, 0); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    // Host memory: the CPU resize applies, and it reallocates with the storage's own allocator.
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

const bool hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new HostHooks());  // lives as long as the process
  return true;
}();

// Operators without a hostdev kernel run on the CPU: inputs are copied over (with our
// _copy_from), the CPU kernel runs, results are copied back. Views cannot work that way, which is
// why backend.yaml lists view, as_strided and _reshape_alias. The functional build
// (HOSTDEV_FUNCTIONAL) registers a stricter fallback of its own in kernels_functional.cpp, and a
// key takes only one fallback.
#ifndef HOSTDEV_FUNCTIONAL
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}
#endif

}  // namespace

c10::Allocator* allocator() { return &host_allocator; }

at::Tensor host_view(const at::Tensor& t) {
  if (!t.defined() || t.device().type() != kDevice) {
    return t;
  }
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

at::Tensor to_device(const at::Tensor& cpu) {
  at::Tensor out = at::detail::empty_generic(cpu.sizes(), allocator(),
                                             c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                             cpu.scalar_type(), c10::nullopt);
  host_view(out).copy_(cpu);
  return out;
}

}  // namespace hostdev
