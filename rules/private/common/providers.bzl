"""Providers of rules_aten's rules, re-exported by //rules:defs.bzl."""

AtenCodegenInfo = provider(
    doc = "The generated trees of an aten_codegen target.",
    fields = {
        "autograd_srcs": "Tree artifact of the generated autograd sources, or None without derivatives.",
        "cpu_srcs": "Tree artifact: registration sources of the CPU-side keys (and schemas).",
        "cuda_srcs": "Tree artifact of the CUDA keys' sources, or None when CUDA is off.",
        "headers": "Tree artifact: `<ns>/ops/<root>_native.h` of custom namespaces.",
        "include_dir": "Execroot-relative include directory of `headers`.",
        "signature_srcs": "Tree artifact: `KernelSignatures_<bucket>.cpp`, the registration " +
                          "code of each kernel signature, which `cpu_srcs` need (None for the " +
                          "stable ABI, whose `cpu_srcs` hold everything).",
    },
)

AtenLibraryInfo = provider(
    doc = "What a `lib<name>.so` of aten_codegen is, for aten_wheel: its ABI mode, the torch " +
          "releases it loads into, the CUDA it needs and the op YAML it registers.",
    fields = {
        "abi": "`\"release\"` (bound to the build's torch release) or `\"stable\"`.",
        "cuda": "The CUDA version its CUDA code needs (`\"13.0\"`), or `\"\"` without CUDA code.",
        "library": "The shared library (File).",
        "op_yaml": "Its op YAML (File).",
        "python_module": "With abi = `\"stable\"`: its generated Python module (autograd " +
                         "formulas, fake kernels; File), which aten_wheel ships; else None.",
        "tags_yaml": "The op YAML's tags YAML (File).",
        "torch_release": "The build's torch release, major.minor (`\"2.13\"`).",
        "torch_target": "With abi = `\"stable\"`: the oldest release it loads into; else `\"\"`.",
    },
)

AtenOpsInfo = provider(
    doc = "The value of an aten_ops_flag build setting: an op selection, or \"\".",
    fields = {"value": "The string given on the command line (or the default)."},
)

CudaArchsInfo = provider(
    doc = "The value of a cuda_archs_flag build setting, and the nvcc -gencode flags it gives.",
    fields = {
        "gencode": "nvcc's -gencode flags; empty when `value` is.",
        "value": "The string given on the command line (TORCH_CUDA_ARCH_LIST's syntax), or \"\".",
    },
)
