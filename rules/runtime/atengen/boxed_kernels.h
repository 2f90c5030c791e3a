// The definition of atengen::call_boxed, for the generated
// KernelSignatures_*.cpp sources only: they instantiate it once per C++
// signature of their library's boxed kernels ("atengen/library.h" says which
// kernels are registered boxed).
//
// libtorch hands a boxed kernel its arguments as 64-bit words (StableIValue),
// converted by the operator's schema, in the encoding of the release passed
// to torch_library_impl; torch's own conversions of that release
// (torch/csrc/stable/stableivalue_conversions.h) read and write them here.
// A tensor arrives as a handle that the kernel owns: an at::Tensor made for
// the call, which shares the caller's TensorImpl, so an in-place kernel
// changes the caller's tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/stable/stableivalue_conversions.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "atengen/library.h"

namespace atengen {
// Hidden, as the handles' types in torch's stable headers.
namespace __attribute__((visibility("hidden"))) boxing {

namespace convert = torch::stable::detail;

// The at::Tensor behind a stable tensor's handle: torch's shim makes every
// AtenTensorHandle with `new at::Tensor` (aoti_torch's
// tensor_handle_to_tensor_pointer), which a library bound to one torch
// release may rely on.
inline at::Tensor& unwrap(const torch::stable::Tensor& t) {
  return *reinterpret_cast<at::Tensor*>(t.get());
}

inline AtenTensorHandle new_handle(at::Tensor t) {
  return reinterpret_cast<AtenTensorHandle>(new at::Tensor(std::move(t)));
}

// One argument of the kernel, read from its word and held for the call; get()
// gives it as the kernel's parameter type T. Left undefined for the types the
// generator never registers boxed: a signature with one does not compile.
template <typename T>
struct Arg;

template <typename T>
struct PlainArg {
  explicit PlainArg(uint64_t word) : held(convert::to<T>(word)) {}
  T get() const {
    return held;
  }
  T held;
};

template <>
struct Arg<int64_t> : PlainArg<int64_t> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<double> : PlainArg<double> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<bool> : PlainArg<bool> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<std::optional<int64_t>> : PlainArg<std::optional<int64_t>> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<std::optional<double>> : PlainArg<std::optional<double>> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<std::optional<bool>> : PlainArg<std::optional<bool>> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<at::ScalarType> : PlainArg<at::ScalarType> {
  using PlainArg::PlainArg;
};
template <>
struct Arg<std::optional<at::ScalarType>> : PlainArg<std::optional<at::ScalarType>> {
  using PlainArg::PlainArg;
};

template <typename Ref>
struct TensorArg {
  explicit TensorArg(uint64_t word) : held(convert::to<torch::stable::Tensor>(word)) {}
  Ref get() const {
    return unwrap(held);
  }
  torch::stable::Tensor held;
};

template <>
struct Arg<const at::Tensor&> : TensorArg<const at::Tensor&> {
  using TensorArg::TensorArg;
};
template <>
struct Arg<at::Tensor&> : TensorArg<at::Tensor&> {
  using TensorArg::TensorArg;
};

template <>
struct Arg<const std::optional<at::Tensor>&> {
  explicit Arg(uint64_t word) {
    if (auto t = convert::to<std::optional<torch::stable::Tensor>>(word)) {
      held = unwrap(*t);
    }
  }
  const std::optional<at::Tensor>& get() const {
    return held;
  }
  std::optional<at::Tensor> held;
};

template <typename T>
struct ArrayArg {
  explicit ArrayArg(uint64_t word) : held(convert::to<std::vector<T>>(word)) {}
  c10::ArrayRef<T> get() const {
    return held;
  }
  std::vector<T> held;
};

template <>
struct Arg<c10::ArrayRef<int64_t>> : ArrayArg<int64_t> {
  using ArrayArg::ArrayArg;
};
template <>
struct Arg<c10::ArrayRef<double>> : ArrayArg<double> {
  using ArrayArg::ArrayArg;
};

template <>
struct Arg<c10::ArrayRef<at::Tensor>> {
  explicit Arg(uint64_t word) {
    for (const auto& t : convert::to<std::vector<torch::stable::Tensor>>(word)) {
      held.push_back(unwrap(t));
    }
  }
  at::TensorList get() const {
    return held;
  }
  std::vector<at::Tensor> held;
};

template <>
struct Arg<c10::string_view> {
  explicit Arg(uint64_t word) : held(convert::to<std::string>(word)) {}
  c10::string_view get() const {
    return held;
  }
  std::string held;
};

// One result as its word; the caller (libtorch) owns what it refers to.
inline uint64_t box(const at::Tensor& t) {
  return convert::from(new_handle(t));
}
inline uint64_t box(int64_t v) {
  return convert::from(v);
}
inline uint64_t box(double v) {
  return convert::from(v);
}
inline uint64_t box(bool v) {
  return convert::from(v);
}
inline uint64_t box(const std::vector<at::Tensor>& ts) {
  std::vector<torch::stable::Tensor> stable;
  stable.reserve(ts.size());
  for (const auto& t : ts) {
    stable.emplace_back(new_handle(t));
  }
  return convert::from(std::move(stable));
}

template <typename R>
struct ResultCount : std::integral_constant<std::size_t, 1> {};
template <>
struct ResultCount<void> : std::integral_constant<std::size_t, 0> {};
template <typename... T>
struct ResultCount<std::tuple<T...>> : std::integral_constant<std::size_t, sizeof...(T)> {};

// How many arguments and results a kernel of `Signature` has.
template <typename Signature>
struct Traits;
template <typename R, typename... A>
struct Traits<R(A...)> {
  static constexpr std::size_t arguments = sizeof...(A);
  static constexpr std::size_t results = ResultCount<std::decay_t<R>>::value;
};

template <typename... T, std::size_t... I>
void put_tuple(uint64_t* stack, const std::tuple<T...>& results, std::index_sequence<I...>) {
  ((stack[I] = box(std::get<I>(results))), ...);
}

template <typename R>
void put(uint64_t* stack, const R& result) {
  stack[0] = box(result);
}
template <typename... T>
void put(uint64_t* stack, const std::tuple<T...>& results) {
  put_tuple(stack, results, std::index_sequence_for<T...>{});
}

template <typename R, typename... A, std::size_t... I>
void call(R (*kernel)(A...), uint64_t* stack, std::index_sequence<I...>) {
  // Braces: the words are read in order, and each argument is held until the
  // kernel returns (or throws).
  std::tuple<Arg<A>...> args{Arg<A>(stack[I])...};
  if constexpr (std::is_void_v<R>) {
    kernel(std::get<I>(args).get()...);
  } else {
    put(stack, kernel(std::get<I>(args).get()...));
  }
}

}  // namespace boxing
}  // namespace atengen

namespace atengen {

template <typename Signature>
void call_boxed(Signature* kernel, uint64_t* stack, uint64_t num_args, uint64_t num_outputs) {
  using Traits = boxing::Traits<Signature>;
  if (num_args != Traits::arguments || num_outputs != Traits::results) {
    throw std::runtime_error(
        "atengen: a boxed kernel was called with " + std::to_string(num_args) +
        " arguments and " + std::to_string(num_outputs) + " results, not " +
        std::to_string(Traits::arguments) + " and " + std::to_string(Traits::results));
  }
  boxing::call(kernel, stack, std::make_index_sequence<Traits::arguments>{});
}

}  // namespace atengen
