"""What a lazy backend customizes in the generated code: names, not code edits.

The defaults are the TorchScript backend's, the one the torch wheel ships
(``torch/csrc/lazy/ts_backend``). A backend with its own node base, tensor
class or device getter (torch_xla's ``XlaNode``/``XLATensor``) changes these.
Every header is an include path relative to an include root, never absolute.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def generated_header(self, name: str) -> str:
        prefix = self.include_prefix.strip("/")
        return f"{prefix}/{name}" if prefix else name
