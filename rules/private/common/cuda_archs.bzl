"""The GPU architectures nvcc compiles `cuda_srcs` for.

In order of precedence:
  1. an aten_codegen's own `cuda_gencode` (nvcc's -gencode flags, for that target);
  2. the build setting `--@rules_aten//:cuda_archs=8.0;9.0+PTX` (cuda_archs_flag);
  3. the environment variable TORCH_CUDA_ARCH_LIST, which torch's extension builder reads too;
     @local_cuda reads it (its `environ`), so a change fetches that repository again and changes
     the nvcc command lines, and nothing else;
  4. the wheel's torch.cuda.get_arch_list(): machine code for every `sm_`, PTX of the newest.
     Then a line says which they are and how to narrow them: each architecture is a compile.

2 and 3 take the syntax of torch.utils.cpp_extension's TORCH_CUDA_ARCH_LIST (torch 2.14's; 2.13's
is the same without Rubin and 10.7): architectures `X.Y` (or `X.Ya`), each optionally `+PTX`,
separated by `;` or spaces, and the names below, which stand for their lists. As there, `8.0`
gives `-gencode=arch=compute_80,code=sm_80` and `9.0+PTX` adds
`-gencode=arch=compute_90,code=compute_90`. `native` (the visible GPUs) is refused: a build need
not run where the GPU is.

Beyond torch's extension builder, the family codes `X.Yf` of Blackwell and later (`10.0f`,
`12.0f`, ...; CUDA 12.9 and newer): torch's own CMake build and vLLM's take them in the same
variable, and a wheel built so lists `sm_100f` in torch.cuda.get_arch_list(). `10.0f` gives
`-gencode=arch=compute_100f,code=sm_100f`: machine code that runs on every GPU of the family
(10.0 and 10.3), with the features they share.
"""

load("//rules/private:common/providers.bzl", "CudaArchsInfo")

TORCH_CUDA_ARCH_LIST_ENV = "TORCH_CUDA_ARCH_LIST"

# torch 2.14's torch.utils.cpp_extension._get_cuda_arch_flags's named_arches, in its order (combined names
# first: they are replaced as text).
_NAMED_ARCHES = [
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
    ("Blackwell+Tegra", "11.0"),
    ("Blackwell", "10.0;10.3;12.0;12.1+PTX"),
    ("Rubin", "10.7+PTX"),
]

# Its supported_arches (in its order).
_SUPPORTED = [
    "3.5",
    "3.7",
    "5.0",
    "5.2",
    "5.3",
    "6.0",
    "6.1",
    "6.2",
    "7.0",
    "7.2",
    "7.5",
    "8.0",
    "8.6",
    "8.7",
    "8.9",
    "9.0",
    "9.0a",
    "10.0",
    "10.0a",
    "11.0",
    "11.0a",
    "10.3",
    "10.3a",
    "10.7",
    "10.7a",
    "12.0",
    "12.0a",
    "12.1",
    "12.1a",
]

# The family codes: one for each architecture above from Blackwell on (nvcc has no family of 9.0
# or older); the toolkit still decides which of them it can compile.
_FAMILIES = [a[:-1] + "f" for a in _SUPPORTED if a.endswith("a") and a != "9.0a"]

def parse_arch_list(value, setting):
    """nvcc's -gencode flags for a TORCH_CUDA_ARCH_LIST value, as torch's extension builder's.

    Args:
      value: the value, e.g. "8.0;9.0+PTX", "8.0 9.0" or "Hopper".
      setting: how the user set it, for the error message (`TORCH_CUDA_ARCH_LIST`).

    Returns:
      (the sorted flags, None), or (None, a one-line error message).
    """
    text = value.strip().replace(" ", ";")
    for name, archs in _NAMED_ARCHES:
        text = text.replace(name, archs)
    flags = {}
    for arch in text.split(";"):
        version = arch[:-len("+PTX")] if arch.endswith("+PTX") else arch
        if version not in _SUPPORTED and version not in _FAMILIES:
            hint = ""
            if arch == "native":
                hint = " (`native`, the GPUs of this machine, is not taken: a build need not run where they are)"
            elif arch == "":
                hint = " (an empty entry: two separators in a row)"
            return None, ("rules_aten: {}=\"{}\": unknown CUDA architecture \"{}\"{}; give " +
                          "architectures X.Y (or X.Ya, or the family code X.Yf from 10.0 on), each " +
                          "optionally with +PTX, separated by ; or spaces, or names ({}); known: {}").format(
                setting,
                value,
                arch,
                hint,
                ", ".join([n for n, _ in _NAMED_ARCHES]),
                " ".join(_SUPPORTED + _FAMILIES),
            )
        number = version.replace(".", "")
        flags["-gencode=arch=compute_{0},code=sm_{0}".format(number)] = True
        if arch.endswith("+PTX"):
            flags["-gencode=arch=compute_{0},code=compute_{0}".format(number)] = True
    return sorted(flags.keys()), None

def wheel_gencode_flags(arch_list):
    """nvcc's -gencode flags for torch.cuda.get_arch_list() values (`sm_90`, `compute_90`).

    Machine code for each `sm_`, PTX for each `compute_`, and PTX of the newest `sm_` as well,
    so that newer GPUs can run it (as torch's extension builder does). That PTX is the plain
    architecture's: the PTX of `sm_100a` or `sm_100f` runs on no GPU beyond 10.x, so it would
    not serve newer GPUs.

    Args:
      arch_list: the architectures, as torch.cuda.get_arch_list() gives them.

    Returns:
      The flags.
    """
    flags = []
    newest = None
    for arch in arch_list:
        kind, _, number = arch.partition("_")
        if kind == "sm":
            flags.append("-gencode=arch=compute_{0},code=sm_{0}".format(number))
            newest = number.rstrip("af")
        elif kind == "compute":
            flags.append("-gencode=arch=compute_{0},code=compute_{0}".format(number))
    if newest != None and "compute_" + newest not in arch_list:
        flags.append("-gencode=arch=compute_{0},code=compute_{0}".format(newest))
    return flags

def _cuda_archs_flag_impl(ctx):
    value = ctx.build_setting_value.strip()
    if not value:
        return [CudaArchsInfo(value = "", gencode = [])]
    gencode, error = parse_arch_list(value, "--" + str(ctx.label))
    if error:
        fail(error)
    return [CudaArchsInfo(value = value, gencode = gencode)]

cuda_archs_flag = rule(
    implementation = _cuda_archs_flag_impl,
    build_setting = config.string(flag = True),
    doc = """A string build setting: the architectures nvcc compiles `cuda_srcs` for, in
`TORCH_CUDA_ARCH_LIST`'s syntax; `//:cuda_archs` is one
([CUDA architectures](docs/rules.md#cuda-architectures)).

The syntax: `8.0;9.0+PTX`, `8.0 9.0`, `Hopper`, `9.0;10.0f`. Empty (the default): the variable's value, else
the wheel's list. An aten_codegen's `cuda_gencode` still wins. A value that does not parse fails
the build with one line.""",
)
