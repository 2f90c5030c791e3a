"""The `@local_cuda` repository: the CUDA toolkit's headers and nvcc, if there is a toolkit.

Which toolkit, given the torch wheel (@torch's defs.bzl: a CUDA wheel's CUDA version, or none):
  1. the environment variable RULES_ATEN_CUDA_DIR, when set: `none` means build without CUDA;
     `pypi` means nvcc from PyPI (4.); any other value must be a toolkit (include/cuda_runtime.h)
     of the wheel's CUDA major version, else the build fails with one line saying so;
  2. else the first of $CUDA_HOME and /usr/local/cuda that is a toolkit of the wheel's CUDA major
     version (a CPU wheel takes any toolkit); one of another major version is passed over;
  3. else, for a CPU wheel: no toolkit;
  4. else, for a CUDA wheel: nvcc from PyPI, at the CUDA version the wheel pins
     (@rules_aten_cuda_nvcc: rules/private/repositories/cuda_pypi.bzl and
     //third_party:cuda_nvcc_wheels.lock).
     When it cannot be installed, the build fails with one line saying why.
The toolkit's version is CUDART_VERSION in its include/cuda_runtime_api.h. The choice, and why, is
one line (`rules_aten: ...`) printed when the repository is fetched for a CUDA build of torch (or
with RULES_ATEN_VERBOSE=1). Nothing is copied: the
repository's include/ is a symlink to the toolkit's.

The repository always exists, so BUILD files can depend on it unconditionally:
  - `@local_cuda//:cuda_headers`: the toolkit's include/ (empty without a toolkit), plus a stub
    `c10/cuda/impl/cuda_cmake_macros.h`. The CPU torch wheel ships the c10/cuda headers but not
    that one, which CMake writes when it builds a CUDA torch; the stub defines what it would.
  - `@local_cuda//:defs.bzl`: HAS_CUDA (True/False), CUDA_DIR, CUDA_VERSION ("13.0", or ""),
    NVCC (the toolkit's bin/nvcc, or "").

The rule that compiles `.cu` sources with that nvcc (aten_codegen's `cuda_srcs`) is
`aten_cuda_objects`, in rules/private/rules/cuda_objects.bzl.
"""

load("//rules/private:common/cuda_archs.bzl", "TORCH_CUDA_ARCH_LIST_ENV", "parse_arch_list")
load("//rules/private:repositories/cuda_pypi.bzl", "PYPI_NVCC_JSON", "torch_defs")
load("//rules/private:repositories/repo_error.bzl", "ERROR_RULE_LOAD", "ERROR_TEMPLATES", "write_error_repository", "write_error_rule")

CUDA_DIR_ENV = "RULES_ATEN_CUDA_DIR"

CUDA_HOME_ENV = "CUDA_HOME"

VERBOSE_ENV = "RULES_ATEN_VERBOSE"

DEFAULT_CUDA_DIR = "/usr/local/cuda"

# What CMake writes into c10/cuda/impl/cuda_cmake_macros.h for a CUDA build of torch with shared
# libraries (the wheels' configuration), written as it is.
_CMAKE_MACROS = Label("//rules/private/templates:cuda_cmake_macros.h")

# The repository's BUILD file and defs.bzl, with {placeholders} for format(), and the
# :arch_list_check target the BUILD file gets when $TORCH_CUDA_ARCH_LIST does not parse.
_BUILD = Label("//rules/private/templates:local_cuda.BUILD.tpl")
_DEFS = Label("//rules/private/templates:local_cuda_defs.bzl.tpl")
_ARCH_LIST_ERROR = Label("//rules/private/templates:local_cuda_arch_list_error.BUILD.tpl")

def _is_toolkit(path):
    return path.get_child("include").get_child("cuda_runtime.h").exists

def _major(version):
    return version.split(".")[0]

def _chosen(path, version, line):
    return struct(path = path, version = version, line = line, error = None)

def _failed(error):
    return struct(path = None, version = "", line = None, error = error)

def _torch_name(torch):
    if torch.cuda:
        return "torch {} (CUDA {})".format(torch.version, torch.cuda)
    return "torch {} (a CPU build)".format(torch.version or "(not found)")

def _system(rctx, path, source, torch):
    """The toolkit at path when it suits the wheel: (_chosen(...), None), or (None, why not).

    It suits a CPU wheel whatever its version, and a CUDA wheel when its CUDA major version is
    the wheel's."""
    if not _is_toolkit(path):
        return None, "none at {} ({})".format(path, source)
    version = _cuda_version(rctx, path.get_child("include"))
    if not torch.cuda or not version or _major(version) == _major(torch.cuda):
        line = "rules_aten: CUDA {} toolkit at {} ({}), {} {}".format(
            version or "(version unknown)",
            path,
            source,
            "matching" if torch.cuda else "for",
            _torch_name(torch),
        )
        return _chosen(path, version, line), None
    return None, "the CUDA {} toolkit at {} ({}) is not CUDA {}".format(version, path, source, _major(torch.cuda))

def _from_pypi(rctx, torch, why):
    """nvcc from PyPI (@rules_aten_cuda_nvcc), or its one-line error."""
    info = json.decode(rctx.read(rctx.path(PYPI_NVCC_JSON)))
    if "error" in info:
        return _failed(info["error"])
    line = "rules_aten: nvcc {} from PyPI, cuda-toolkit {}'s ({}; {})".format(
        info["nvcc"],
        info["pin"] or info["cuda"],
        why,
        _torch_name(torch),
    )
    return _chosen(rctx.path(info["root"]), info["cuda"], line)

def _choose(rctx, torch):
    """The toolkit (the file's doc says which): _chosen(path or None, version, line) or _failed."""
    named = rctx.os.environ.get(CUDA_DIR_ENV, "").strip()
    if named == "none":
        return _chosen(None, "", "rules_aten: no CUDA toolkit (${}=none), for {}".format(CUDA_DIR_ENV, _torch_name(torch)))
    if named == "pypi":
        if not torch.cuda:
            return _failed(("rules_aten: {}=pypi installs the nvcc of torch's CUDA version from " +
                            "PyPI, but torch {} is a CPU build: unset it to use a local toolkit, " +
                            "or set it to none").format(CUDA_DIR_ENV, torch.version or "(not found)"))
        return _from_pypi(rctx, torch, "${}=pypi".format(CUDA_DIR_ENV))
    if named:
        path = rctx.path(named)
        if not _is_toolkit(path):
            return _failed("rules_aten: {}={} has no include/cuda_runtime.h; point it at a CUDA toolkit, set it to pypi to install nvcc from PyPI, or to none to build without CUDA".format(CUDA_DIR_ENV, named))
        chosen, _ = _system(rctx, path, "$" + CUDA_DIR_ENV, torch)
        if chosen:
            return chosen
        return _failed(("rules_aten: the CUDA toolkit at {} is CUDA {}, but torch {} is built with " +
                        "CUDA {}: install a CUDA {} toolkit and point {} at it, set it to pypi " +
                        "to install nvcc {} from PyPI, or set it to none to build without CUDA").format(
            path,
            _cuda_version(rctx, path.get_child("include")),
            torch.version,
            torch.cuda,
            _major(torch.cuda),
            CUDA_DIR_ENV,
            torch.cuda,
        ))
    candidates = []
    home = rctx.os.environ.get(CUDA_HOME_ENV, "").strip()
    if home:
        candidates.append((home, "$" + CUDA_HOME_ENV))
    candidates.append((DEFAULT_CUDA_DIR, "the default path"))
    passed_over = []
    for value, source in candidates:
        chosen, note = _system(rctx, rctx.path(value), source, torch)
        if chosen:
            return chosen
        passed_over.append(note)
    if torch.cuda:
        found = [n for n in passed_over if not n.startswith("none at ")]
        return _from_pypi(rctx, torch, "; ".join(found) if found else "no CUDA toolkit found")
    return _chosen(None, "", "rules_aten: no CUDA toolkit ({}), for {}".format("; ".join(passed_over), _torch_name(torch)))

def _cuda_version(rctx, include):
    """"13.0" from CUDART_VERSION in cuda_runtime_api.h, or "" if it cannot be read."""
    header = include.get_child("cuda_runtime_api.h")
    if not header.exists:
        return ""
    for line in rctx.read(header).split("\n"):
        # Bazel 4's split() needs a separator.
        parts = [p for p in line.replace("\t", " ").split(" ") if p]
        if len(parts) == 3 and parts[0] == "#define" and parts[1] == "CUDART_VERSION" and parts[2].isdigit():
            number = int(parts[2])
            return "{}.{}".format(number // 1000, (number % 1000) // 10)
    return ""

def _local_cuda_impl(rctx):
    # Every label is resolved before anything is printed: resolving one that is not fetched yet
    # runs this function again from the start.
    for label in [_CMAKE_MACROS, _BUILD, _DEFS, _ARCH_LIST_ERROR] + ERROR_TEMPLATES:
        rctx.path(label)
    torch = torch_defs(rctx)
    choice = _choose(rctx, torch)
    if choice.error:
        write_error_repository(rctx, choice.error, ["arch_list_check", "check", "cuda_headers", "cudart_static"], bzl_files = {
            "defs.bzl": 'HAS_CUDA = False\nCUDA_DIR = ""\nCUDA_VERSION = ""\nNVCC = ""\n' +
                        'TORCH_CUDA_ARCH_LIST = ""\nTORCH_CUDA_ARCH_LIST_GENCODE = []\n',
        })
        return

    # Said where it decides something: CUDA code is built for a CUDA torch. For a CPU torch the
    # toolkit only compiles (a stable library's kernels), and the line on every fetch is noise;
    # RULES_ATEN_VERBOSE=1 prints it anyway.
    if torch.cuda or rctx.os.environ.get(VERBOSE_ENV, "").strip() == "1":
        # buildifier: disable=print
        print(choice.line)
    path = choice.path
    arch_list = rctx.os.environ.get(TORCH_CUDA_ARCH_LIST_ENV, "").strip()
    arch_gencode, arch_error = [], None
    if arch_list:
        arch_gencode, arch_error = parse_arch_list(arch_list, TORCH_CUDA_ARCH_LIST_ENV)
    write_error_rule(rctx)
    if arch_error:
        arch_list_check = rctx.read(rctx.path(_ARCH_LIST_ERROR)).format(message = repr(arch_error))
        arch_gencode = []
    else:
        arch_list_check = "filegroup(name = \"arch_list_check\")"
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("stub/c10/cuda/impl/cuda_cmake_macros.h", rctx.read(rctx.path(_CMAKE_MACROS)), executable = False)
    version = choice.version
    summary = choice.line
    cudart_static = []
    if path == None:
        includes = ["stub"]
    else:
        rctx.symlink(path.get_child("include"), "include")
        includes = ["include", "stub"]

        # lib64/ in a toolkit, lib/ in the PyPI layout (nvidia/cu13/lib).
        for lib in ["lib64", "lib"]:
            archive = path.get_child(lib).get_child("libcudart_static.a")
            if archive.exists:
                rctx.symlink(archive, "cudart/libcudart_static.a")
                cudart_static = ["cudart/libcudart_static.a"]
                break
    rctx.file("BUILD.bazel", rctx.read(rctx.path(_BUILD)).format(
        summary = summary,
        includes = repr(includes),
        error_rule_load = ERROR_RULE_LOAD,
        arch_list_check = arch_list_check,
        cudart_static = repr(cudart_static),
    ), executable = False)
    rctx.file("defs.bzl", rctx.read(rctx.path(_DEFS)).format(
        arch_list = repr(arch_list),
        arch_gencode = repr(arch_gencode),
        summary = summary,
        has_cuda = path != None,
        cuda_dir = path or "",
        version = version,
        nvcc = path.get_child("bin").get_child("nvcc") if path and path.get_child("bin").get_child("nvcc").exists else "",
    ), executable = False)

local_cuda_repo = repository_rule(
    implementation = _local_cuda_impl,
    doc = "Exposes the local CUDA toolkit's headers as @local_cuda//:cuda_headers (see the file's doc).",
    environ = [CUDA_DIR_ENV, CUDA_HOME_ENV, TORCH_CUDA_ARCH_LIST_ENV, VERBOSE_ENV],
    local = True,
    configure = True,
)
