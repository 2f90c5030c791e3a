"""Finds the Python interpreter that rules_aten builds with, and wraps it in a toolchain.

The interpreter is, in order:
  1. the value of the environment variable RULES_ATEN_PYTHON (a path, or a name on PATH);
  2. <main workspace>/.venv/bin/python3, if it exists;
  3. python3 on PATH.
It must be Python 3.11 or newer.

The toolchain is part of the build, so that the key of an action that runs a py_binary holds no
path of this machine: @rules_aten_python has bin/python3 (a symlink to the real interpreter
binary; a venv's python resolves to its base interpreter), the shared libpython if there is one,
and the standard library, all declared files. The py_binary launcher names the interpreter by
its runfiles path (rules_aten_python/bin/python3) and starts it from /bin/sh, with no absolute
interpreter path in its shebang.
"""

load(":repo_error.bzl", "one_line", "write_error_repository")

PYTHON_ENV = "RULES_ATEN_PYTHON"

MIN_PYTHON = (3, 11)

_VERSION_SCRIPT = "import sys; print('%d.%d.%d' % sys.version_info[:3])"

# Attributes of every repository rule that calls find_python.
PYTHON_ATTRS = {
    # No default: a default Label("@//:WORKSPACE") is resolved in rules_aten's own repository
    # mapping, where under Bzlmod the main repository has no name, and every run then warned
    # that the extension "produced an invalid lockfile entry" and wrote no MODULE.bazel.lock.
    # Bazel 4 needs it (rules_aten_dependencies() passes @//:WORKSPACE); Bazel 6 and newer
    # have repository_ctx.workspace_root and ignore it.
    "main_workspace_file": attr.label(
        allow_single_file = True,
        doc = "A file at the root of the main workspace (Bazel 4 cannot tell where that is " +
              "otherwise); its directory is searched for .venv. Set it to @//:WORKSPACE.bazel " +
              "in a workspace without a WORKSPACE file. Newer Bazel uses workspace_root.",
    ),
}

def main_workspace_root(rctx):
    """Returns the path of the main workspace's root directory.

    Args:
      rctx: a repository_ctx of a rule with PYTHON_ATTRS.

    Returns:
      A path object.
    """
    if hasattr(rctx, "workspace_root"):
        return rctx.workspace_root
    if rctx.attr.main_workspace_file == None:
        fail("rules_aten: {} needs main_workspace_file on this Bazel (no workspace_root): ".format(rctx.name) +
             "declare it with rules_aten_dependencies()")
    return rctx.path(rctx.attr.main_workspace_file).dirname

def _resolve(rctx, candidate):
    if "/" in candidate:
        path = rctx.path(candidate)
        return path if path.exists else None
    return rctx.which(candidate)

def find_python(rctx):
    """Finds and checks the interpreter.

    Args:
      rctx: a repository_ctx whose rule has PYTHON_ATTRS and lists PYTHON_ENV in `environ`.

    Returns:
      A struct with `path` (absolute path string), `version` (string) and `source`, and `error`:
      None, or the one-line message saying why there is no usable interpreter (then the other
      fields may be empty; see python_error_repository).
    """
    override = rctx.os.environ.get(PYTHON_ENV, "").strip()
    if override:
        python = _resolve(rctx, override)
        if python == None:
            return _no_python("rules_aten: {}={} does not name an existing interpreter; set it to a Python {}.{}+ with torch".format(
                PYTHON_ENV,
                override,
                MIN_PYTHON[0],
                MIN_PYTHON[1],
            ))
        source = PYTHON_ENV
    else:
        venv_python = main_workspace_root(rctx).get_child(".venv").get_child("bin").get_child("python3")
        if venv_python.exists:
            python = venv_python
            source = ".venv"
        else:
            python = rctx.which("python3")
            if python == None:
                return _no_python("rules_aten: no python3 on PATH; set {} to a Python {}.{}+ interpreter".format(
                    PYTHON_ENV,
                    MIN_PYTHON[0],
                    MIN_PYTHON[1],
                ))
            source = "PATH"

    result = rctx.execute([python, "-c", _VERSION_SCRIPT])
    if result.return_code != 0:
        return _no_python("rules_aten: cannot run {} ({}): {}; set {} to a Python {}.{}+ interpreter".format(
            python,
            source,
            one_line(result.stderr) or "exit status {}".format(result.return_code),
            PYTHON_ENV,
            MIN_PYTHON[0],
            MIN_PYTHON[1],
        ))
    version = result.stdout.strip()
    parts = [int(p) for p in version.split(".")[:2]]
    if (parts[0], parts[1]) < MIN_PYTHON:
        return _no_python("rules_aten: {} ({}) is Python {}; need {}.{}+ (set {})".format(
            python,
            source,
            version,
            MIN_PYTHON[0],
            MIN_PYTHON[1],
            PYTHON_ENV,
        ))
    return struct(path = str(python), version = version, source = source, error = None)

def _no_python(message):
    return struct(path = "", version = "", source = "", error = message)

# The repository that reports an interpreter problem: the others that need the interpreter point
# their targets at its :error, so that the message is printed once.
PYTHON_REPOSITORY = "rules_aten_python"

def python_error_repository(rctx, python, targets, bzl_files = {}):
    """Writes rctx's repository for an interpreter problem (python.error) found by find_python.

    The python toolchain repository reports it; another repository (@torch, @rules_aten_pip) has
    every target alias that repository's :error, so that the message is printed once.

    Args:
      rctx: the repository_ctx.
      python: what find_python returned, with an error.
      targets: as write_error_repository's.
      bzl_files: as write_error_repository's.
    """
    actual = ":error" if rctx.name == PYTHON_REPOSITORY else "@{}//:error".format(PYTHON_REPOSITORY)
    write_error_repository(rctx, python.error, targets, bzl_files = bzl_files, actual = actual)

# Asks the interpreter where its real binary, its shared libpython (if any) and its standard
# library are. A venv's python resolves to the base interpreter: the tool needs none of a venv's
# packages (they come from @rules_aten_pip), and the base binary is the same for every venv made
# from it, so action keys do not depend on where a venv lives.
_RUNTIME_PROBE = """
import json, os, sys, sysconfig
lib = ""
if sysconfig.get_config_var("Py_ENABLE_SHARED"):
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY") or ""
    path = os.path.join(sysconfig.get_config_var("LIBDIR") or "", name)
    if name and os.path.isfile(path):
        lib = os.path.realpath(path)
# Paths as their bytes, not JSON's \\u escapes: Bazel reads the output, and holds paths, as
# Latin-1, one character per byte (tool/torch_probe.py's print_json).
sys.stdout.buffer.write((json.dumps({
    "executable": os.path.realpath(sys.executable),
    "libpython": lib,
    "stdlib": os.path.realpath(sysconfig.get_paths()["stdlib"]),
}, ensure_ascii=False) + "\\n").encode("utf-8", "surrogateescape"))
"""

# The py_binary launcher starts as a shell script and execs the in-build interpreter from its
# runfiles, which then runs the same file as Python (the shell part is the module's docstring).
# So the launcher holds no interpreter path, and it needs no python3 on the action's PATH.
# Its runfiles are found as Bazel's own stub finds them: <launcher>.runfiles, or the runfiles
# tree the launcher is in, or $RUNFILES_DIR.
_STUB_SHEBANG = """#!/bin/sh
''':'
for d in "$0.runfiles" "${{0%%.runfiles/*}}.runfiles" "${{RUNFILES_DIR:-.}}"; do
  if [ -x "$d/{repo}/bin/python3" ]; then exec "$d/{repo}/bin/python3" "$0" "$@"; fi
done
echo "$0: no {repo}/bin/python3 in its runfiles" >&2
exit 1
'''"""

_TOOLCHAIN_BUILD = """\
# Generated by @rules_aten//rules/private:python.bzl. Interpreter: {source}, Python {version}.
load("@rules_python//python:defs.bzl", "py_runtime", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

exports_files(["interpreter.txt"])

# bin/python3 and the standard library are symlinks to the interpreter's own files. They are
# declared, so every action that runs a py_binary has their contents in its key, and the
# launcher names the interpreter by its runfiles path, not by an absolute one.
filegroup(
    name = "runtime_files",
    srcs = {libpython} + glob(
        ["stdlib/**"],
        exclude = [
            # Other packages, tests, caches and build-time files: the tools import none of them.
            "stdlib/site-packages/**",
            "stdlib/dist-packages/**",
            "stdlib/**/__pycache__/**",
            "stdlib/**/*.pyc",
            "stdlib/test/**",
            "stdlib/**/test/**",
            "stdlib/**/tests/**",
            "stdlib/**/idle_test/**",
            "stdlib/ensurepip/**",
            "stdlib/idlelib/**",
            "stdlib/tkinter/**",
            "stdlib/turtledemo/**",
            # These hold the absolute prefix the interpreter was installed under; only the
            # sysconfig module reads them.
            "stdlib/config-*/**",
            "stdlib/_sysconfigdata*",
        ],
    ),
)

py_runtime(
    name = "py3_runtime",
    files = [":runtime_files"],
    interpreter = "bin/python3",
    python_version = "PY3",
    stub_shebang = {stub_shebang},
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

# The targets of the toolchain repository, which an error repository aliases.
_TOOLCHAIN_TARGETS = ["interpreter.txt", "py3_runtime", "runtime_files", "runtime_pair"]

def _toolchain_error(rctx, message):
    """Writes the repository for an unusable interpreter.

    The toolchain resolves, and its runtime fails analysis with the message (printed once)."""
    write_error_repository(rctx, message, _TOOLCHAIN_TARGETS)
    rctx.file("BUILD.bazel", rctx.read("BUILD.bazel") + """
toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""", executable = False)

def _python_toolchain_repo_impl(rctx):
    python = find_python(rctx)
    if python.error:
        _toolchain_error(rctx, python.error)
        return
    result = rctx.execute([python.path, "-c", _RUNTIME_PROBE])
    if result.return_code != 0:
        _toolchain_error(rctx, "rules_aten: cannot ask {} ({}) for its standard library: {}; set {} to another interpreter".format(
            python.path,
            python.source,
            one_line(result.stderr),
            PYTHON_ENV,
        ))
        return
    runtime = json.decode(result.stdout.strip().split("\n")[-1])
    stdlib = rctx.path(runtime["stdlib"])
    if not stdlib.get_child("os.py").exists:
        _toolchain_error(rctx, "rules_aten: {} ({}) reports its standard library at {}, which has no os.py; set {} to another interpreter".format(
            python.path,
            python.source,
            stdlib,
            PYTHON_ENV,
        ))
        return
    rctx.symlink(runtime["executable"], "bin/python3")
    rctx.symlink(stdlib, "stdlib")
    libpython = []
    if runtime["libpython"]:
        name = "lib/" + rctx.path(runtime["libpython"]).basename
        rctx.symlink(runtime["libpython"], name)
        libpython = [name]

    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("interpreter.txt", "{}\n{}\n{}\n{}\n".format(
        python.path,
        python.version,
        python.source,
        runtime["executable"],
    ), executable = False)
    rctx.file("BUILD.bazel", _TOOLCHAIN_BUILD.format(
        libpython = repr(libpython),
        source = python.source,
        stub_shebang = repr(_STUB_SHEBANG.format(repo = rctx.name)),
        version = python.version,
    ), executable = False)

python_toolchain_repo = repository_rule(
    implementation = _python_toolchain_repo_impl,
    doc = "A Python toolchain (py_runtime_pair + toolchain) around the discovered interpreter, " +
          "which is part of the build: bin/python3 and its standard library are declared files.",
    attrs = PYTHON_ATTRS,
    environ = [PYTHON_ENV],
    local = True,
    configure = True,
)
