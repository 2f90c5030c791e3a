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

load("//rules/private:repositories/repo_error.bzl", "ERROR_TEMPLATES", "one_line", "write_error_repository")

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

# The programs the repository rule runs: the copy of the interpreter (with its standard library)
# into the repository, and the check that the copy runs from the repository alone. Their docs say
# why each is so.
_RUNTIME_COPY = Label("//rules/private/programs:copy_python_runtime.py")
_RUNTIME_CHECK = Label("//rules/private/programs:check_python_runtime.py")

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
# directory); the program the stub then starts with the same interpreter inherits them. It puts
# the repository's bin/ first on PYTHONPATH: Bazel's stub deletes sys.path[0], the script's
# directory, which PYTHONSAFEPATH keeps off already, and would otherwise delete the standard
# library's zip (bin/ holds no module). Its {repo} is the repository's name (a plain
# replacement: the shell's own braces stay as they are).
_STUB_SHEBANG = Label("//rules/private/templates:python_launcher.sh.tpl")

# The toolchain repository's BUILD file, with {placeholders} for format(); and the toolchain an
# error repository adds to write_error_repository()'s BUILD file.
_TOOLCHAIN_BUILD = Label("//rules/private/templates:python_toolchain.BUILD.tpl")
_TOOLCHAIN_ERROR_BUILD = Label("//rules/private/templates:python_toolchain_error.BUILD.tpl")

# The targets of the toolchain repository, which an error repository aliases.
_TOOLCHAIN_TARGETS = ["interpreter.txt", "py3_runtime", "runtime_files", "runtime_pair"]

# The repository's .bzl file: what @rules_aten//tool's BUILD file loads (see there why).
_VERSION_BZL = "# Generated by @rules_aten//rules/private:repositories/python.bzl.\nPYTHON_VERSION = \"{version}\"\n"

def _toolchain_error(rctx, message):
    """Writes the repository for an unusable interpreter.

    The toolchain resolves, and its runtime fails analysis with the message (printed once)."""
    write_error_repository(rctx, message, _TOOLCHAIN_TARGETS, bzl_files = {"version.bzl": "PYTHON_VERSION = \"\"\n"})
    rctx.file("BUILD.bazel", rctx.read("BUILD.bazel") + rctx.read(rctx.path(_TOOLCHAIN_ERROR_BUILD)), executable = False)

def _python_toolchain_repo_impl(rctx):
    # Every label the function reads, resolved before anything runs: Bazel restarts a repository
    # function from the top at the first label it has not resolved yet, and a restart after the
    # copy would copy the interpreter and its standard library a second time.
    for label in [_RUNTIME_COPY, _RUNTIME_CHECK, _STUB_SHEBANG, _TOOLCHAIN_BUILD, _TOOLCHAIN_ERROR_BUILD] + ERROR_TEMPLATES:
        rctx.path(label)
    python = find_python(rctx)
    if python.error:
        _toolchain_error(rctx, python.error)
        return

    result = rctx.execute(
        [python.path, "-B", rctx.path(_RUNTIME_COPY)],
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
        [root + "/bin/python3", rctx.path(_RUNTIME_CHECK), root],
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
    rctx.file("version.bzl", _VERSION_BZL.format(version = python.version), executable = False)
    rctx.file("interpreter.txt", "{}\n{}\n{}\n{}\n".format(
        python.path,
        python.version,
        python.source,
        runtime["executable"],
    ), executable = False)
    rctx.file("BUILD.bazel", rctx.read(rctx.path(_TOOLCHAIN_BUILD)).format(
        libpython = repr(libpython),
        source = python.source,
        stdlib = runtime["stdlib"],
        stdlib_zip = runtime["stdlib_zip"],
        stub_shebang = repr(rctx.read(rctx.path(_STUB_SHEBANG)).replace("{repo}", rctx.name)),
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
