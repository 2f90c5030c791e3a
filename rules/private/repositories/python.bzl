"""Finds the Python interpreter that rules_aten builds with, and wraps it in a toolchain.

The interpreter is, in order:
  1. the value of the environment variable RULES_ATEN_PYTHON (a path, or a name on PATH);
  2. <main workspace>/.venv/bin/python3, if it exists;
  3. python3 on PATH.
It must be Python 3.11 or newer.

The toolchain is part of the build, so that the key of an action that runs a py_binary holds no
path of this machine, and the action reads no file of the installation: @rules_aten_python has
copies of the real interpreter binary (a venv's python resolves to its base interpreter) as
bin/python3, of the shared libpython if there is one, and of the standard library, all declared
files. The py_binary launcher names the interpreter by its runfiles path
(rules_aten_python/bin/python3), starts it from /bin/sh, with no absolute interpreter path in its
shebang, and points it at its libpython and standard library in the runfiles.
"""

load("//rules/private:repositories/repo_error.bzl", "one_line", "write_error_repository")

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

# Copies the interpreter into the repository (the current directory) and prints, as one JSON
# line, where the copy put what. A venv's python resolves to the base interpreter: the tool needs
# none of a venv's packages (they come from @rules_aten_pip), and the base binary is the same for
# every venv made from it, so action keys do not depend on where a venv lives.
#
# Copies, not symlinks: a symlink into the installation would make every action read that
# installation's files, which a sandbox or a remote worker without them cannot, and the copied
# binary would still find its libpython and standard library by their absolute installed paths
# (its RUNPATH, its compiled-in prefix). The launcher (_STUB_SHEBANG) points the copy at its
# runfiles instead. The standard library goes where the interpreter looks for it under a
# PYTHONHOME (its path under the installation's prefix), without the parts the tools never
# import. Its modules are compiled here into checked-hash .pyc files, with relative paths and a
# fixed hash seed (set order in constants), so that the repository is the same bytes on every
# machine with the same interpreter and no action compiles the standard library itself.
_RUNTIME_COPY = """
import compileall, json, os, py_compile, shutil, sys, sysconfig

def fail(message):
    sys.stderr.write(message + "\\n")
    sys.exit(1)

def under(path, root):
    rel = os.path.relpath(path, root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        fail(path + " is not under the interpreter's prefix " + root)
    return rel

ANYWHERE = {"__pycache__", "test", "tests", "idle_test", "site-packages", "dist-packages"}
TOP = {"ensurepip", "idlelib", "tkinter", "turtledemo"}

def left_out(directory, names):
    top = os.path.samefile(directory, stdlib)
    return [
        n for n in names
        if n in ANYWHERE or n.endswith(".pyc")
        # config-* and _sysconfigdata* hold the prefix the interpreter was built for; only
        # sysconfig reads them.
        or (top and (n in TOP or n.startswith("config-") or n.startswith("_sysconfigdata")))
    ]

prefix = os.path.realpath(sys.base_prefix)
stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
dest = under(stdlib, prefix)
shutil.copytree(stdlib, dest, ignore=left_out, ignore_dangling_symlinks=True)
for entry in sys.path:
    if os.path.basename(entry) == "lib-dynload" and os.path.isdir(entry):
        dynload = os.path.realpath(entry)
        if os.path.relpath(dynload, stdlib).startswith(os.pardir):
            shutil.copytree(dynload, under(dynload, os.path.realpath(sys.base_exec_prefix)))
os.makedirs("bin")
shutil.copy2(os.path.realpath(sys.executable), "bin/python3")
libpython = ""
if sysconfig.get_config_var("Py_ENABLE_SHARED"):
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY") or ""
    path = os.path.join(sysconfig.get_config_var("LIBDIR") or "", name)
    if name and os.path.isfile(path):
        libpython = "lib/" + os.path.basename(name)
        os.makedirs("lib", exist_ok=True)
        shutil.copy2(os.path.realpath(path), libpython)
compileall.compile_dir(
    dest, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
)
# Paths as their bytes, not JSON's \\u escapes: Bazel reads the output, and holds paths, as
# Latin-1, one character per byte (tool/torch_probe.py's print_json).
sys.stdout.buffer.write((json.dumps({
    "executable": os.path.realpath(sys.executable),
    "libpython": libpython,
    "stdlib": dest,
}, ensure_ascii=False) + "\\n").encode("utf-8", "surrogateescape"))
"""

# Run by the copied interpreter as the launcher starts it: it must take its shared library, its
# prefix and every sys.path entry from the repository, not from the installation it was copied
# from (which this machine still has, so a copy that fell back to it would otherwise work here
# and fail in a sandbox or on a remote worker without it).
_RUNTIME_CHECK = """
import os, sys
root = os.path.realpath(sys.argv[1])
inside = lambda p: (os.path.realpath(p) + os.sep).startswith(root + os.sep)
with open("/proc/self/maps") as maps:
    libs = {line.split()[-1] for line in maps if "libpython" in line}
outside = [p for p in [sys.prefix, sys.exec_prefix] + sys.path[1:] + sorted(libs) if not inside(p)]
print(" ".join(outside) or "ok")
"""

# What the launcher and the check above set for the copied interpreter, for its repository at
# ROOT: its shared libpython from ROOT/lib (LD_LIBRARY_PATH comes before the copied binary's
# RUNPATH, which still names the installation), its standard library under ROOT, no user
# site-packages (~/.local) on sys.path, and not the main script's directory first on sys.path
# (PYTHONSAFEPATH, Python 3.11): that is the directory of the script's real file, in the source
# tree, where any file, declared or not, would be importable and shadow the runfiles.
def _runtime_environment(root):
    return {
        "LD_LIBRARY_PATH": root + "/lib",
        "PYTHONHOME": root,
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
    }

# The py_binary launcher starts as a shell script and execs the in-build interpreter from its
# runfiles, which then runs the same file as Python (the shell part is the module's docstring).
# So the launcher holds no interpreter path, and it needs no python3 on the action's PATH.
# Its runfiles are found as Bazel's own stub finds them: <launcher>.runfiles, or the runfiles
# tree the launcher is in, or $RUNFILES_DIR. It sets _runtime_environment's variables for the
# interpreter's repository in those runfiles, by an absolute path (Bazel's stub may change the
# directory); the program the stub then starts with the same interpreter inherits them.
_STUB_SHEBANG = """#!/bin/sh
''':'
for d in "$0.runfiles" "${{0%%.runfiles/*}}.runfiles" "${{RUNFILES_DIR:-.}}"; do
  if [ -x "$d/{repo}/bin/python3" ]; then
    case "$d" in /*) ;; *) d="$PWD/$d" ;; esac
    PYTHONHOME="$d/{repo}"
    LD_LIBRARY_PATH="$d/{repo}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    PYTHONNOUSERSITE=1
    PYTHONSAFEPATH=1
    export PYTHONHOME LD_LIBRARY_PATH PYTHONNOUSERSITE PYTHONSAFEPATH
    exec "$d/{repo}/bin/python3" "$0" "$@"
  fi
done
echo "$0: no {repo}/bin/python3 in its runfiles" >&2
exit 1
'''"""

_TOOLCHAIN_BUILD = """\
# Generated by @rules_aten//rules/private:python.bzl. Interpreter: {source}, Python {version}.
load("@rules_python//python:defs.bzl", "py_runtime", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

exports_files(["interpreter.txt"])

# bin/python3, its shared libpython and its standard library (with compiled modules) are copies
# of the interpreter's files, and declared: every action that runs a py_binary has their
# contents in its key, and reads them, by relative paths, from its runfiles alone.
filegroup(
    name = "runtime_files",
    srcs = {libpython} + glob(["{stdlib}/**"]),
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

    result = rctx.execute(
        [python.path, "-B", "-c", _RUNTIME_COPY],
        environment = {"PYTHONHASHSEED": "0"},
        quiet = True,
    )
    if result.return_code != 0:
        _toolchain_error(rctx, "rules_aten: cannot copy {} ({}) with its standard library: {}; set {} to another interpreter".format(
            python.path,
            python.source,
            one_line(result.stderr) or "exit status {}".format(result.return_code),
            PYTHON_ENV,
        ))
        return
    runtime = json.decode(result.stdout.strip().split("\n")[-1])
    root = str(rctx.path("."))
    check = rctx.execute(
        [root + "/bin/python3", "-c", _RUNTIME_CHECK, root],
        # An empty PYTHONPATH is none: the user's would add entries outside the repository.
        environment = dict(_runtime_environment(root), PYTHONPATH = ""),
    )
    if check.return_code != 0 or check.stdout.strip() != "ok":
        _toolchain_error(rctx, "rules_aten: the copy of {} ({}) does not run from {} alone: {}; set {} to another interpreter".format(
            python.path,
            python.source,
            root,
            one_line(check.stderr) or "it reads " + one_line(check.stdout),
            PYTHON_ENV,
        ))
        return
    libpython = [runtime["libpython"]] if runtime["libpython"] else []

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
        stdlib = runtime["stdlib"],
        stub_shebang = repr(_STUB_SHEBANG.format(repo = rctx.name)),
        version = python.version,
    ), executable = False)

python_toolchain_repo = repository_rule(
    implementation = _python_toolchain_repo_impl,
    doc = "A Python toolchain (py_runtime_pair + toolchain) around a copy of the discovered " +
          "interpreter, which is part of the build: bin/python3, its libpython and its " +
          "standard library are declared files, and actions read them from their runfiles.",
    attrs = PYTHON_ATTRS,
    environ = [PYTHON_ENV],
    local = True,
    configure = True,
)
