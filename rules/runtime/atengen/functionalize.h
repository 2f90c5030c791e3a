// Helpers for the generated Functionalize-key kernels.
//
// The generated kernels say *which* ops to call with which arguments; how a
// functional tensor is unwrapped, updated and re-wrapped, and how a view is
// recorded so that it can be replayed and undone, lives here once.
//
// Only the public, exported API of the installed torch is used:
// FunctionalTensorWrapper.h's isFunctionalTensor/sync/from_functional_tensor/
// to_functional_tensor/replace_/commit_update, and the abstract ViewMeta of
// FunctionalStorageImpl.h. The wheel ships neither torch's generated ViewMeta
// classes nor its view inverses, so views get their own ViewMeta below.
#pragma once

#include <ATen/FunctionalStorageImpl.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/env.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "atengen/dispatch.h"
#include "atengen/runtime.h"

namespace atengen::fz {

namespace fimpl = at::functionalization::impl;

// ---- calling below functionalization --------------------------------------------------

// Keys skipped while computing shapes on meta tensors: modes and transforms must
// not see (or trace) these shape-only calls.
constexpr c10::DispatchKeySet kMetaComputeExcluded =
    c10::functorch_transforms_ks |
    c10::DispatchKeySet({
        c10::DispatchKey::FuncTorchDynamicLayerBackMode,
        c10::DispatchKey::FuncTorchDynamicLayerFrontMode,
        c10::DispatchKey::Python,
        c10::DispatchKey::PreDispatch,
    });

struct MetaComputeGuard {
  at::AutoDispatchSkipFunctionalize skip_functionalize;
  c10::impl::ExcludeDispatchKeyGuard exclude{kMetaComputeExcluded};
};

// torch's switch for the meta-tensor shape checks of functionalization.
inline bool meta_reference_disabled() {
  static const bool disabled =
      c10::utils::get_env("TORCH_DISABLE_FUNCTIONALIZATION_META_REFERENCE") == "1";
  return disabled;
}

// ---- meta copies, for shape checks and view geometry ----------------------------------

inline at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) {
    return t;
  }
  static const auto op = find_op<at::Tensor(
      c10::SymIntArrayRef, c10::SymIntArrayRef, std::optional<at::ScalarType>,
      std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>)>(
      "aten::empty_strided", "");
  return op.call(
      t.sym_sizes(), t.sym_strides(), t.scalar_type(), t.layout(), c10::Device(c10::kMeta),
      std::nullopt);
}
inline std::optional<at::Tensor> to_meta(const std::optional<at::Tensor>& t) {
  return t.has_value() ? std::make_optional(to_meta(*t)) : std::nullopt;
}
inline std::vector<at::Tensor> to_meta(at::ITensorListRef ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) {
    out.push_back(to_meta(t));
  }
  return out;
}
inline std::vector<at::Tensor> to_meta(at::TensorList ts) {
  return to_meta(at::ITensorListRef(ts));
}
inline c10::List<std::optional<at::Tensor>> to_meta(
    const c10::List<std::optional<at::Tensor>>& ts) {
  c10::List<std::optional<at::Tensor>> out;
  out.reserve(ts.size());
  for (const auto i : c10::irange(ts.size())) {
    out.push_back(to_meta(static_cast<std::optional<at::Tensor>>(ts[i])));
  }
  return out;
}

// ---- unwrapping -----------------------------------------------------------------------

inline bool is_functional(const at::Tensor& t) {
  return fimpl::isFunctionalTensor(t);
}
inline bool is_functional(const std::optional<at::Tensor>& t) {
  return fimpl::isFunctionalTensor(t);
}
inline bool is_functional(at::ITensorListRef ts) {
  return fimpl::isFunctionalTensor(ts);
}
inline bool is_functional(at::TensorList ts) {
  return fimpl::isFunctionalTensor(at::ITensorListRef(ts));
}
inline bool is_functional(const c10::List<std::optional<at::Tensor>>& ts) {
  return fimpl::isFunctionalTensor(ts);
}

// The value under a functional tensor (after applying pending updates when
// `sync`: views defer that until a non-view op reads them); other values as is.
inline at::Tensor unwrap(const at::Tensor& t, bool sync) {
  if (!is_functional(t)) {
    return t;
  }
  if (sync) {
    fimpl::sync(t);
  }
  return fimpl::from_functional_tensor(t);
}
inline std::optional<at::Tensor> unwrap(const std::optional<at::Tensor>& t, bool sync) {
  if (!is_functional(t)) {
    return t;
  }
  if (sync) {
    fimpl::sync(t);
  }
  return fimpl::from_functional_tensor(t);
}
inline std::vector<at::Tensor> unwrap(at::ITensorListRef ts, bool sync) {
  if (!is_functional(ts)) {
    return std::vector<at::Tensor>(ts.begin(), ts.end());
  }
  if (sync) {
    fimpl::sync(ts);
  }
  return fimpl::from_functional_tensor(ts);
}
inline std::vector<at::Tensor> unwrap(at::TensorList ts, bool sync) {
  return unwrap(at::ITensorListRef(ts), sync);
}
inline c10::List<std::optional<at::Tensor>> unwrap(
    const c10::List<std::optional<at::Tensor>>& ts, bool sync) {
  if (!is_functional(ts)) {
    return ts;
  }
  if (sync) {
    fimpl::sync(ts);
  }
  return fimpl::from_functional_tensor(ts);
}

// cpu_tensor.copy_(xla_tensor) is valid code, so mixing is only an error when
// no XLA tensor takes part.
inline bool on_xla(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::XLA;
}

[[noreturn]] inline void fail_mixed_inputs() {
  TORCH_INTERNAL_ASSERT(
      false, "mutating a non-functional tensor with a functional tensor is not allowed.",
      " Please ensure that all of your inputs are wrapped inside of a functionalize() call.");
  std::abort();  // not reached
}

// ---- results of the functional op ----------------------------------------------------

inline at::Tensor wrap(const at::Tensor& t) {
  return fimpl::to_functional_tensor(t);
}
inline std::vector<at::Tensor> wrap(const std::vector<at::Tensor>& ts) {
  return fimpl::to_functional_tensor(ts);
}
inline std::optional<at::Tensor> wrap(const std::optional<at::Tensor>& t) {
  return fimpl::to_functional_tensor(t);
}

// A mutated argument takes the functional op's new value: replace its data,
// commit the update to its storage (and so to its aliases), and sync.
inline void write_back(const at::Tensor& arg, const at::Tensor& value) {
  auto before = fimpl::from_functional_tensor(arg);
  fimpl::replace_(arg, value);
  fimpl::commit_update(arg);
  fimpl::sync(arg);
  fimpl::propagate_xla_data_direct(before, fimpl::from_functional_tensor(arg));
}
inline void write_back(const std::optional<at::Tensor>& arg, const at::Tensor& value) {
  if (arg.has_value() && arg->defined()) {
    write_back(*arg, value);
  }
}
inline void write_back(at::ITensorListRef args, at::ITensorListRef values) {
  auto before = fimpl::from_functional_tensor(args);
  fimpl::replace_(args, values);
  fimpl::commit_update(args);
  fimpl::sync(args);
  auto after = fimpl::from_functional_tensor(args);
  fimpl::propagate_xla_data_direct(before, after);
}
inline void write_back(at::TensorList args, const std::vector<at::Tensor>& values) {
  write_back(at::ITensorListRef(args), at::ITensorListRef(values));
}

// ---- views ----------------------------------------------------------------------------

// Owning copies of view arguments, kept in a ViewMeta for replaying the view
// later; `borrow` turns them back into the dispatcher's argument types.
template <typename T>
T own(const T& x) {
  return x;
}
template <typename T>
std::vector<T> own(c10::ArrayRef<T> x) {
  return x.vec();
}
template <typename T>
std::optional<std::vector<T>> own(const c10::OptionalArrayRef<T>& x) {
  return x.has_value() ? std::make_optional(x->vec()) : std::nullopt;
}
inline std::string own(c10::string_view x) {
  return std::string(x);
}
inline std::optional<std::string> own(const std::optional<c10::string_view>& x) {
  return x.has_value() ? std::make_optional(std::string(*x)) : std::nullopt;
}

template <typename T>
const T& borrow(const T& x) {
  return x;
}
template <typename T>
c10::ArrayRef<T> borrow(const std::vector<T>& x) {
  return x;
}
template <typename T>
c10::OptionalArrayRef<T> borrow(const std::optional<std::vector<T>>& x) {
  return x.has_value() ? c10::OptionalArrayRef<T>(*x) : c10::OptionalArrayRef<T>();
}
inline c10::string_view borrow(const std::string& x) {
  return x;
}
inline std::optional<c10::string_view> borrow(const std::optional<std::string>& x) {
  return x.has_value() ? std::make_optional(c10::string_view(*x)) : std::nullopt;
}

// Whether the view's arguments carry symbolic sizes (the ViewMeta records it).
inline bool symbolic(const c10::SymInt& x) {
  return x.is_symbolic();
}
inline bool symbolic(c10::SymIntArrayRef xs) {
  for (const auto& x : xs) {
    if (x.is_symbolic()) {
      return true;
    }
  }
  return false;
}
inline bool symbolic(const std::optional<c10::SymInt>& x) {
  return x.has_value() && x->is_symbolic();
}
inline bool symbolic(const at::OptionalSymIntArrayRef& xs) {
  return xs.has_value() && symbolic(*xs);
}
template <typename T>
bool symbolic(const T&) {
  return false;
}
template <typename... Ts>
bool any_symbolic(const Ts&... xs) {
  return (false || ... || symbolic(xs));
}

inline const at::Tensor& pick(const at::Tensor& t, int64_t) {
  return t;
}
inline const at::Tensor& pick(const std::vector<at::Tensor>& ts, int64_t i) {
  return ts.at(i);
}

// How to undo a view on its base: given the base and the mutated view, return
// the new base. The default scatters the view back where it lies in the base.
using Reverse = std::function<at::Tensor(
    const at::Tensor& base, const at::Tensor& mutated_view, const at::Tensor& view_geometry)>;

// The new value of `base` after its view (whose geometry on a meta copy of the
// base is `geometry`) was replaced by `mutated_view`. Functional: no aliasing op
// reaches the traced program, only as_strided_scatter.
inline at::Tensor scatter_into_base(
    const at::Tensor& base, const at::Tensor& mutated_view, const at::Tensor& geometry) {
  static const auto op = find_op<at::Tensor(
      const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, c10::SymIntArrayRef,
      std::optional<c10::SymInt>)>("aten::as_strided_scatter", "");
  return op.call(
      base, mutated_view, geometry.sym_sizes(), geometry.sym_strides(),
      geometry.sym_storage_offset());
}

// One ViewMeta type for every generated view op. `view(base, reapply)` runs the
// view (reapply: the aliasing op; otherwise its non-aliasing *_copy op) with the
// arguments the kernel saw; multi-output views pick output `out_index`.
template <typename Result>
class GeneratedViewMeta final : public at::functionalization::ViewMeta {
 public:
  using View = std::function<Result(const at::Tensor& base, bool reapply)>;

  GeneratedViewMeta(
      std::shared_ptr<const View> view,
      Reverse reverse,
      bool reapply,
      bool has_symbolic_inputs,
      bool is_as_strided,
      int64_t out_index = 0)
      : ViewMeta(has_symbolic_inputs, std::is_same_v<Result, std::vector<at::Tensor>>,
                 is_as_strided, out_index),
        view_(std::move(view)),
        reverse_(std::move(reverse)),
        reapply_(reapply) {}

  at::Tensor forward(const at::Tensor& base) override {
    return pick((*view_)(base, reapply_), out_index);
  }

  at::Tensor reverse(const at::Tensor& base, const at::Tensor& mutated_view) override {
    at::Tensor geometry;
    {
      MetaComputeGuard guard;
      geometry = pick((*view_)(to_meta(base), /*reapply=*/true), out_index);
    }
    if (reverse_) {
      return reverse_(base, mutated_view, geometry);
    }
    return scatter_into_base(base, mutated_view, geometry);
  }

  std::shared_ptr<at::functionalization::ViewMeta> to_out_index(int64_t out_index) override {
    return std::make_shared<GeneratedViewMeta>(
        view_, reverse_, reapply_, has_symbolic_inputs, is_as_strided, out_index);
  }

 private:
  std::shared_ptr<const View> view_;
  Reverse reverse_;
  bool reapply_;
};

// XLA and Lazy tensors do not propagate strides through views, so their views
// take sizes, strides and offset from a meta-tensor reference.
inline bool needs_meta_reference(const at::Tensor& t) {
  return !meta_reference_disabled() &&
      (t.key_set().has_backend(c10::BackendComponent::XLABit) ||
       t.key_set().has_backend(c10::BackendComponent::LazyBit));
}

inline void set_sizes_strides_offset(const at::Tensor& out, const at::Tensor& reference) {
  if (out.defined()) {
    out.unsafeGetTensorImpl()->set_sizes_and_strides(
        reference.sym_sizes(), reference.sym_strides(), reference.sym_storage_offset());
  }
}
inline void set_sizes_strides_offset(
    const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& references) {
  for (const auto i : c10::irange(outs.size())) {
    set_sizes_strides_offset(outs[i], references[i]);
  }
}

// The Functionalize kernel of a view op. `view` runs the view on unwrapped
// arguments; `self` is the viewed (functional) tensor.
template <typename Result>
Result functionalize_view(
    const at::Tensor& self,
    const at::Tensor& self_unwrapped,
    typename GeneratedViewMeta<Result>::View view,
    Reverse reverse,
    bool has_symbolic_inputs,
    bool is_as_strided) {
  if (!is_functional(self)) {
    // Functionalization is re-entrant but does nothing for plain tensors.
    at::AutoDispatchSkipFunctionalize guard;
    return view(self_unwrapped, /*reapply=*/true);
  }
  const bool reapply = fimpl::getFunctionalizationReapplyViewsTLS();
  const bool reference = needs_meta_reference(self);
  Result reference_out;
  if (reference) {
    MetaComputeGuard guard;
    reference_out = view(to_meta(self), /*reapply=*/true);
  }
  Result out;
  {
    at::AutoDispatchSkipFunctionalize guard;
    out = view(self_unwrapped, reapply);
  }
  auto shared_view = std::make_shared<const typename GeneratedViewMeta<Result>::View>(view);
  auto meta = std::make_shared<GeneratedViewMeta<Result>>(
      shared_view, std::move(reverse), reapply, has_symbolic_inputs, is_as_strided);
  Result wrapped;
  if constexpr (std::is_same_v<Result, at::Tensor>) {
    TORCH_INTERNAL_ASSERT(!is_functional(out));
    wrapped = at::detail::make_tensor<at::FunctionalTensorWrapper>(
        out, fimpl::unsafeGetFunctionalWrapper(self), meta);
  } else {
    wrapped.reserve(out.size());
    for (const auto i : c10::irange(out.size())) {
      wrapped.push_back(at::detail::make_tensor<at::FunctionalTensorWrapper>(
          out[i], fimpl::unsafeGetFunctionalWrapper(self), meta->to_out_index(i)));
    }
  }
  if (reference) {
    set_sizes_strides_offset(wrapped, reference_out);
  }
  return wrapped;
}

// The Functionalize kernel of an inplace_view op (transpose_, unsqueeze_, ...):
// `view` runs its out-of-place view; `self` itself starts to view differently.
inline void functionalize_inplace_view(
    const at::Tensor& self,
    typename GeneratedViewMeta<at::Tensor>::View view,
    Reverse reverse,
    bool has_symbolic_inputs,
    bool is_as_strided) {
  const bool reapply = fimpl::getFunctionalizationReapplyViewsTLS();
  const bool reference = needs_meta_reference(self);
  at::Tensor reference_out;
  if (reference) {
    // Before the view meta is applied: it changes self's sizes.
    MetaComputeGuard guard;
    reference_out = view(to_meta(self), /*reapply=*/true);
  }
  auto shared_view = std::make_shared<const GeneratedViewMeta<at::Tensor>::View>(view);
  auto meta = std::make_shared<GeneratedViewMeta<at::Tensor>>(
      shared_view, std::move(reverse), reapply, has_symbolic_inputs, is_as_strided);
  fimpl::unsafeGetFunctionalWrapper(self)->mutate_view_meta(meta);
  if (reference) {
    set_sizes_strides_offset(self, reference_out);
  }
}

}  // namespace atengen::fz
