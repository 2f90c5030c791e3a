"""The lazy-tensor (LTC) customizations of external_backend_codegen, as rule attributes.

A backend YAML with `full_codegen`, `ir_gen` or `non_native` ops is a lazy-tensor backend: the
generator (`atengen backend --allow_lazy`) then also writes the IR node classes (`LazyIr*.h`,
`LazyNonNativeIr.h`) and the kernels of the full_codegen ops. These attributes say which C++
names and headers that code uses. Empty strings keep the generator's defaults, the TorchScript
backend's that the torch wheel ships; a YAML without lazy ops ignores them all.
"""

# attribute (and generator flag) -> what it names, with the default.
LAZY_NAME_ATTRS = {
    "backend_namespace": "Namespace of the bridge helpers GetTensorList, " +
                         "GetLtcTensorOrCreateForWrappedNumber and TryGetLtcTensor. " +
                         "Default: `torch::lazy`.",
    "get_device_fn": "Function that gives the BackendDevice of the kernels' tensor arguments. " +
                     "Default: `torch::lazy::GetBackendDevice`.",
    "lazy_value_class": "C++ class of IR values (node operands). Default: `torch::lazy::Value`.",
    "node_base": "Base class of the generated IR nodes. Default: `torch::lazy::TsNode`.",
    "node_base_hdr": "Include path of `node_base`'s header (put its cc_library in `deps`). " +
                     "Default: `torch/csrc/lazy/ts_backend/ts_node.h`.",
    "shape_inference_hdr": "Include path of the header that declares the compute_shape_* " +
                           "functions. Default: `shape_inference_file`'s workspace-relative " +
                           "path, or `torch/csrc/lazy/core/shape_inference.h` for the wheel's.",
    "tensor_class": "The lazy tensor class. Default: `torch::lazy::LazyTensor`.",
    "tensor_class_hdr": "Include path of `tensor_class`'s header. " +
                        "Default: `torch/csrc/lazy/core/tensor.h`.",
}

_WHEEL_SHAPE_INFERENCE = "@torch//:include/torch/csrc/lazy/core/shape_inference.h"

def lazy_attrs():
    """The rule attributes of the LTC customizations.

    Returns:
      A new dict of attribute name to attribute.
    """
    attrs = {name: attr.string(doc = doc) for name, doc in LAZY_NAME_ATTRS.items()}
    attrs["shape_inference_file"] = attr.label(
        default = Label(_WHEEL_SHAPE_INFERENCE),
        allow_single_file = [".h"],
        doc = "The shape-inference header the full_codegen kernels' compute_shape_* calls are " +
              "checked against at generation time. Default: the torch wheel's.",
    )
    attrs["ts_lowerings"] = attr.bool(
        default = True,
        doc = "TorchScript Lower()/CanBeReused() in the node classes; False for backends " +
              "with their own lowering (torch_xla).",
    )
    return attrs

def _include_path(file):
    """A header's path relative to its repository's root, as #include spells it."""
    path = file.short_path
    if path.startswith("../"):  # a file of an external repository: ../<repo>/<path>
        path = path.split("/", 2)[2]
    return path

def add_lazy_args(ctx, args):
    """Adds `--allow_lazy` and the LTC flags of the rule's attributes to `args`.

    Args:
      ctx: the rule context (attributes from lazy_attrs()).
      args: the generator's Args.

    Returns:
      The list of input files the flags name.
    """
    args.add("--allow_lazy")
    for name in LAZY_NAME_ATTRS:
        value = getattr(ctx.attr, name)
        if value:
            args.add("--{}={}".format(name, value))
    if not ctx.attr.ts_lowerings:
        args.add("--no_ts_lowerings")
    header = ctx.file.shape_inference_file
    args.add("--shape_inference_file=" + header.path)
    custom = ctx.attr.shape_inference_file.label != Label(_WHEEL_SHAPE_INFERENCE)
    if custom and not ctx.attr.shape_inference_hdr:
        args.add("--shape_inference_hdr=" + _include_path(header))
    return [header]
