"""The `@torch` repository: C++ headers, libraries and operator YAML of an installed torch wheel.

The torch directory is, in order:
  1. the value of the environment variable RULES_ATEN_TORCH_DIR (the `torch` package directory,
     i.e. the one holding `include/` and `lib/`);
  2. `os.path.dirname(torch.__file__)` as reported by the interpreter python.bzl finds.
The operator YAML comes from the `torchgen` package next to it
(`torchgen/packaged/ATen/native/{native_functions,tags}.yaml`, `torchgen/packaged/autograd/derivatives.yaml`).
Nothing is copied: the repository holds symlinks into the wheel.

The facts (torch_facts.json, defs.bzl) are read once, when the repository is set up, while a
build follows the symlinks by itself: the repository reads torch/version.py (and the .venv's
pyvenv.cfg) so that Bazel sets it up again when torch changes (_track), and, where Bazel cannot
see such a change, the generator compares the facts with @torch//:version.py.
"""

load("//rules/private:repositories/python.bzl", "PYTHON_ATTRS", "PYTHON_ENV", "find_python", "main_workspace_root", "python_error_repository")
load("//rules/private:repositories/repo_error.bzl", "ERROR_TEMPLATES", "one_line", "write_error_repository")

TORCH_DIR_ENV = "RULES_ATEN_TORCH_DIR"

# tool/torch_probe.py prints a JSON object describing the torch installation (see its doc).
_PROBE = Label("//tool:torch_probe.py")

# The modules the probe imports, named here so that a change to one sets the repository up
# again: wheel_symbols.py reads the wheel's symbol tables and FunctionsManual.h, torch_facts.py
# holds the supported releases and the policy the probe's release_support applies, and
# wheel_facts.py (with cached.py, which it imports) reads torch/version.py.
_PROBE_MODULES = [
    Label("//tool:atengen/cached.py"),
    Label("//tool:atengen/facts/__init__.py"),
    Label("//tool:atengen/facts/torch_facts.py"),
    Label("//tool:atengen/facts/wheel_facts.py"),
    Label("//tool:atengen/facts/wheel_symbols.py"),
]

# The facts the generator reads (`atengen generate --torch_facts`): the probe's, without the
# machine's paths, so that an action reading them is keyed the same in every checkout.
_GENERATOR_FACTS = [
    "arch_list",
    "autograd_helpers_declared",
    "autograd_helpers_defined",
    "autograd_helpers_exported",
    "cuda",
    "cxx11_abi",
    "facts_release",
    "headers",
    "native_kernels",
    "release",
    "structured_meta_classes",
    "version",
]

_YAML = {
    "derivatives.yaml": "packaged/autograd/derivatives.yaml",
    "native_functions.yaml": "packaged/ATen/native/native_functions.yaml",
    "tags.yaml": "packaged/ATen/native/tags.yaml",
}

# The text @torch writes, with {placeholders} that _set_up and _cuda_parts fill with format():
# its BUILD file, then the CUDA targets of a CUDA wheel or the empty ones of a CPU wheel (put in
# at {cuda}), and defs.bzl. The CUDA libraries' headers of the nvidia-* wheels beside torch come
# after the toolkit's (@local_cuda//:cuda_headers), which a target compiling CUDA code also needs.
_BUILD = Label("//rules/private/templates:torch.BUILD.tpl")
_CUDA_BUILD = Label("//rules/private/templates:torch_cuda.BUILD.tpl")
_CPU_ONLY_BUILD = Label("//rules/private/templates:torch_cpu_only.BUILD.tpl")
_DEFS = Label("//rules/private/templates:torch_defs.bzl.tpl")

_TEMPLATES = [_BUILD, _CUDA_BUILD, _CPU_ONLY_BUILD, _DEFS]

def _template(rctx, label):
    return rctx.read(rctx.path(label))

def _facts_release(info, torch_dir):
    """(the release whose facts the generator uses, the one-line error or None).

    The verdict is the probe's (its release_support field, from tool/atengen/facts/torch_facts.py): a
    release older than the oldest supported one is an error; one newer than the newest is built
    with the newest one's facts, after one warning (printed when the repository is fetched;
    torch_facts.json names that release, so the generator does not warn again). An unreadable
    release is left to the generator, which says so at its first action."""
    support = info["release_support"]
    supported = support["supported_releases"]
    if support["verdict"] == "older":
        return info["release"], ("rules_aten: torch {} at {} is older than torch {}, the oldest release " +
                                 "rules_aten supports; install torch {} or newer, or point {} at one").format(
            info["version"],
            torch_dir,
            supported[0],
            supported[0],
            TORCH_DIR_ENV,
        )
    if support["verdict"] == "newer":
        # buildifier: disable=print
        print(("rules_aten: warning: torch {} at {} is newer than the releases rules_aten knows " +
               "({} to {}): building it with the facts of torch {} (tool/atengen/facts/torch_facts.py)").format(
            info["version"],
            torch_dir,
            supported[0],
            supported[-1],
            support["facts_release"],
        ))
        return support["facts_release"], None
    return info["release"], None

def _check_release(info, torch_dir):
    """The one-line error when the release is not supported or a library is missing, or None."""
    facts_release, error = _facts_release(info, torch_dir)
    if error:
        return error
    if facts_release != info["release"]:
        info["facts_release"] = facts_release
    missing = [lib for lib in ["libc10.so", "libtorch_cpu.so", "libtorch.so"] if lib not in info["libraries"]]
    if info["cuda"]:
        missing += [lib for lib in ["libc10_cuda.so", "libtorch_cuda.so"] if lib not in info["libraries"]]
    if missing:
        return "rules_aten: torch {} at {} is not supported: its lib/ has no {}".format(
            info["version"],
            torch_dir,
            ", ".join(missing),
        )
    return None

def _cuda_parts(rctx, info, torch_dir):
    """Links a CUDA wheel's nvidia-* include directories and CUDA runtime into the repository.

    Returns (the BUILD text of the CUDA targets (empty ones for a CPU wheel), None), or
    (None, the one-line error)."""
    if not info["cuda"]:
        return _template(rctx, _CPU_ONLY_BUILD).format(version = info["version"]), None
    if not info["cuda_runtime"]:
        return None, "rules_aten: torch {} at {} is a CUDA {} build, but no nvidia-*/lib/libcudart.so* is installed beside it; install the nvidia-cuda-runtime wheel torch requires".format(
            info["version"],
            torch_dir,
            info["cuda"],
        )
    includes = []
    for path in info["cuda_include_dirs"]:
        package = path.split("/")[-2]  # site-packages/nvidia/<package>/include
        rctx.symlink(path, "nvidia/{}/include".format(package))
        includes.append("nvidia/{}/include".format(package))
    rctx.symlink(info["cuda_runtime"], "cuda_runtime/libcudart.so")
    return _template(rctx, _CUDA_BUILD).format(
        version = info["version"],
        cuda = info["cuda"],
        cuda_includes = repr(includes),
    ), None

# Every target of @torch (its BUILD templates') that an error repository aliases.
_TARGETS = [
    "c10",
    "c10_cuda",
    "cpu_libraries",
    "cuda_libraries",
    "cuda_package_headers",
    "derivatives.yaml",
    "headers",
    "include/torch/csrc/lazy/core/shape_inference.h",
    "libc10",
    "libc10_cuda",
    "libcudart",
    "libtorch",
    "libtorch_cpu",
    "libtorch_cuda",
    "native_functions.yaml",
    "op_yaml",
    "shim_library",
    "tags.yaml",
    "torch",
    "torch_cpu",
    "torch_cuda",
    "torch_cuda_headers",
    "torch_facts.json",
    "version.py",
]

# defs.bzl of an error repository: rules_aten's .bzl files load it.
def _error_defs(rctx):
    return _template(rctx, _DEFS).format(version = "", release = "", torch_dir = "", abi = 1, cuda = "", arch_list = "[]")

def _torch_error(rctx, message):
    write_error_repository(rctx, message, _TARGETS, bzl_files = {"defs.bzl": _error_defs(rctx)})

# A path of the main workspace that a label can name (Bazel 4 tracks a file it reads by label
# only): no character a label refuses, no `.` or `..` part.
_LABEL_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+@/"

def _workspace_label(rctx, path):
    """The label of the main workspace's file at `path` (a string), or None.

    None: the file is outside the main workspace, or no label can name it."""
    workspace_file = rctx.attr.main_workspace_file
    if workspace_file == None:
        return None
    root = str(rctx.path(workspace_file).dirname) + "/"
    if not path.startswith(root):
        return None
    relative = path[len(root):]
    for part in relative.split("/"):
        if part in ["", ".", ".."]:
            return None
    for character in relative.elems():
        if character not in _LABEL_CHARACTERS:
            return None
    return workspace_file.relative(":" + relative)

def _track(rctx, path, python):
    """Sets @torch up again at the next build when the file at `path` changes, appears or goes.

    This is how @torch follows the torch install it describes (torch/version.py, which every
    install of torch writes afresh, and the venv's pyvenv.cfg) without `bazel sync`: the headers
    and libraries are symlinks into the wheel, which a build follows by itself, and the facts the
    generator reads (torch_facts.json) and defs.bzl must follow with them. Bazel 7.1 and newer
    watch any path, one that does not exist yet too. Bazel 4 refetches a repository when a file it read by label changes, and
    follows a change through the symlinks on its path (a `.venv` link pointed at another venv),
    but names by label only a file of the main workspace that exists: a torch elsewhere
    ($RULES_ATEN_PYTHON, python3 on PATH) is looked at again after `bazel sync --configure`.

    Only for an interpreter from the workspace's .venv does Bazel 4 name a file by label here:
    that found the main workspace's root already, and a label of a workspace without a root
    package (a library in //some/pkg alone) fails the repository instead of naming nothing.

    Args:
      rctx: the repository_ctx.
      path: an absolute path, a string.
      python: find_python's result.
    """
    if hasattr(rctx, "watch"):
        rctx.watch(path)
        return
    if python.source != ".venv":
        return
    label = _workspace_label(rctx, path)
    if label != None and rctx.path(path).exists:
        rctx.path(label)

def _venv_files(rctx, python):
    """The files of the workspace's .venv that tell which torch it holds.

    Known before the probe runs: its pyvenv.cfg and where its torch/version.py is, for an
    interpreter from .venv (none for another)."""
    if python.source != ".venv":
        return []
    venv = main_workspace_root(rctx).get_child(".venv")
    return [
        str(venv.get_child("pyvenv.cfg")),
        str(venv.get_child("lib").get_child("python" + ".".join(python.version.split(".")[:2]))
            .get_child("site-packages").get_child("torch").get_child("version.py")),
    ]

def _torch_repo_impl(rctx):
    # Every label the function reads, resolved before anything runs: Bazel restarts a repository
    # function from the top at the first label it has not resolved yet, and a restart after the
    # probe would run the probe (seconds: it imports torch) a second time in every new output base.
    for label in [_PROBE] + _PROBE_MODULES + _TEMPLATES + ERROR_TEMPLATES:
        rctx.path(label)
    python = find_python(rctx)
    if python.error:
        python_error_repository(rctx, python, _TARGETS, bzl_files = {"defs.bzl": _error_defs(rctx)})
        return
    override = rctx.os.environ.get(TORCH_DIR_ENV, "").strip()

    # The files that tell which torch the probe will find, tracked before it runs, for the same
    # reason (the probe names torch_dir, which _set_up tracks too: a label only in a layout other
    # than a venv's lib/pythonX.Y/site-packages costs the rare restart).
    tracked = _venv_files(rctx, python)
    if override.startswith("/"):
        tracked.append(str(rctx.path(override).get_child("version.py")))
    for path in tracked:
        _track(rctx, path, python)
    error = _set_up(rctx, python, override)
    if error:
        _torch_error(rctx, error)

def _set_up(rctx, python, override):
    """Writes @torch; returns None, or the one-line error that stopped it."""

    # -B: the probe imports tool/atengen from rules_aten's own tree (a user's clone, or the
    # unpacked release archive), where Python would otherwise write __pycache__ directories.
    # link/: the link interfaces of torch's libraries (what a linker reads of each), which
    # cpu_libraries and cuda_libraries name instead of the wheel's files: Bazel digests every file
    # an action reads, and libtorch_cpu.so's 434 MB took a cold build's thread for over 3 s.
    result = rctx.execute([python.path, "-B", rctx.path(_PROBE), "--link_interfaces=" + str(rctx.path("link")), override])
    if result.return_code != 0:
        return "rules_aten: cannot locate torch with {} ({}): {}; install torch there, {}or set {} (or {}), then run `bazel sync --configure`".format(
            python.path,
            python.source,
            one_line(result.stderr) or "exit status {}".format(result.return_code),
            "or create a .venv with torch at the workspace root, " if python.source == "PATH" else "",
            PYTHON_ENV,
            TORCH_DIR_ENV,
        )
    info = json.decode(result.stdout.strip().split("\n")[-1])
    torch_dir = rctx.path(info["torch_dir"])
    torchgen_dir = rctx.path(info["torchgen_dir"])
    version_py = torch_dir.get_child("version.py")
    _track(rctx, str(version_py), python)
    if version_py.exists:
        rctx.symlink(version_py, "version.py")
    else:
        # A torch directory named by RULES_ATEN_TORCH_DIR may lack it: nothing to compare.
        rctx.file("version.py", "# {} has no version.py\n".format(torch_dir), executable = False)

    for sub in ["include", "lib"]:
        if not torch_dir.get_child(sub).exists:
            return "rules_aten: {} has no {}/ (is it a torch package directory?); point {} at one".format(torch_dir, sub, TORCH_DIR_ENV)
        rctx.symlink(torch_dir.get_child(sub), sub)
    error = _check_release(info, torch_dir)
    if error:
        return error
    for name, rel in _YAML.items():
        src = torchgen_dir
        for part in rel.split("/"):
            src = src.get_child(part)
        if not src.exists:
            return "rules_aten: {} not found (torchgen next to {}); reinstall torch".format(src, torch_dir)
        rctx.symlink(src, name)

    abi = 1 if info["cxx11_abi"] else 0
    cuda_build, error = _cuda_parts(rctx, info, torch_dir)
    if error:
        return error
    rctx.file("torch_facts.json", json.encode({k: info[k] for k in _GENERATOR_FACTS if k in info}) + "\n", executable = False)
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("BUILD.bazel", _template(rctx, _BUILD).format(
        version = info["version"],
        torch_dir = torch_dir,
        abi = abi,
        abi_source = info["abi_source"],
        cuda = cuda_build,
    ), executable = False)
    rctx.file("defs.bzl", _template(rctx, _DEFS).format(
        version = info["version"],
        release = info["release"],
        torch_dir = torch_dir,
        abi = abi,
        cuda = info["cuda"],
        arch_list = repr(info["arch_list"]),
    ), executable = False)
    return None

torch_repo = repository_rule(
    implementation = _torch_repo_impl,
    doc = "Exposes an installed torch wheel's headers, libraries and operator YAML as @torch.",
    attrs = PYTHON_ATTRS,
    environ = [PYTHON_ENV, TORCH_DIR_ENV],
    local = True,
    configure = True,
)
