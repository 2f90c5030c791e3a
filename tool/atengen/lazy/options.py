"""What a lazy backend customizes in the generated code: names, not code edits.

The defaults are the TorchScript backend's, the one the torch wheel ships
(``torch/csrc/lazy/ts_backend``). A backend with its own node base, tensor
class or device getter (torch_xla's ``XlaNode``/``XLATensor``) changes these.
Every header is an include path relative to an include root, never absolute.

Each field is pasted into the generated C++ as one kind of token (FIELD_FORMS): a
(qualified) name, a header path, or the metrics counter's macro call. check_field says
whether a value is one, so that a flag like ``--node_base='a b;'`` is refused by name instead
of writing ``class Abs : public a b; {``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED_NAME = rf"(?:::)?{_NAME}(?:::{_NAME})*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\[\\"nt])*"'
_MACRO_ARGUMENT = rf"(?:{_STRING}|{_QUALIFIED_NAME}|-?[0-9]+)"
# A path's parts (as `atengen backend --include_prefix` takes them): names of letters, digits
# and `_.+-` that do not start with `.` (so never `.` or `..`).
_PATH_PART = r"[A-Za-z0-9_][A-Za-z0-9_.+-]*"
_HEADER = rf"{_PATH_PART}(?:/{_PATH_PART})*"

# field: (the form it must have, how to say it in an error)
_QUALIFIED = (re.compile(_QUALIFIED_NAME), "a C++ name like 'my_backend::MyNode'")
_HEADER_PATH = (re.compile(_HEADER), "a relative header path like 'my_backend/node.h'")
FIELD_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "node_base": _QUALIFIED,
    # empty: the node base's header is included by some other header
    "node_base_hdr": (re.compile(f"(?:{_HEADER})?"), "empty, or " + _HEADER_PATH[1]),
    "tensor_class": _QUALIFIED,
    "tensor_class_hdr": _HEADER_PATH,
    "tensor_ptr": _QUALIFIED,
    "backend_namespace": (re.compile(_QUALIFIED_NAME), "a C++ namespace like 'my_backend'"),
    "get_device_fn": _QUALIFIED,
    "lazy_value_class": _QUALIFIED,
    "shape_inference_hdr": _HEADER_PATH,
    # empty: no counter (the statement is `;`)
    "metrics_counter": (
        re.compile(rf"(?:{_QUALIFIED_NAME}\((?:{_MACRO_ARGUMENT}(?:, ?{_MACRO_ARGUMENT})*)?\))?"),
        "empty, or a macro call with string, name or integer arguments like "
        "'MY_FN_COUNTER(\"my_backend::\")'",
    ),
    "create_aten_from_tensor": _QUALIFIED,
    "tuple_aten_from_tensors": _QUALIFIED,
    # relative: the generated headers go there, under the output directory
    "include_prefix": (
        re.compile(rf"(?:{_PATH_PART}(?:/+{_PATH_PART})*/*)?"),
        "empty, or a relative path of plain names like 'my/backend'",
    ),
}


def check_field(name: str, value: str) -> str | None:
    """Why ``value`` cannot be the LazyOptions field ``name`` (None: it can)."""
    pattern, form = FIELD_FORMS[name]
    if pattern.fullmatch(value):
        return None
    return f"must be {form}, got {value!r}"


@dataclass(frozen=True)
class LazyOptions:
    node_base: str = "torch::lazy::TsNode"
    node_base_hdr: str = "torch/csrc/lazy/ts_backend/ts_node.h"
    tensor_class: str = "torch::lazy::LazyTensor"
    tensor_class_hdr: str = "torch/csrc/lazy/core/tensor.h"
    tensor_ptr: str = "torch::lazy::LazyTensorPtr"
    # Namespace of the bridge helpers GetTensorList, GetLtcTensorOrCreateForWrappedNumber
    # and TryGetLtcTensor.
    backend_namespace: str = "torch::lazy"
    get_device_fn: str = "torch::lazy::GetBackendDevice"
    lazy_value_class: str = "torch::lazy::Value"
    shape_inference_hdr: str = "torch/csrc/lazy/core/shape_inference.h"
    metrics_counter: str = 'TORCH_LAZY_FN_COUNTER("lazy::")'
    create_aten_from_tensor: str = "torch::lazy::CreateAtenFromLtcTensor"
    tuple_aten_from_tensors: str = "torch::lazy::TupleAtenFromLtcTensors"
    # TorchScript backend: nodes get Lower() (per their Lower/LowerDeclOnly property),
    # CanBeReused() comparing operands and attributes, and Create() when asked.
    # Without it, CanBeReused() returns false and nodes have no lowering.
    ts_lowerings: bool = True
    # Where the generated headers live, relative to the include root.
    include_prefix: str = ""

    @property
    def create_tensor(self) -> str:
        return f"{self.tensor_class}::Create"

    def __post_init__(self) -> None:
        for f in fields(self):
            why = check_field(f.name, getattr(self, f.name)) if f.name in FIELD_FORMS else None
            if why is not None:
                raise ValueError(f"LazyOptions.{f.name} {why}")

    def generated_header(self, name: str) -> str:
        prefix = self.include_prefix.strip("/")
        return f"{prefix}/{name}" if prefix else name
