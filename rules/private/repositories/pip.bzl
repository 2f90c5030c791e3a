"""Installs the generator's pinned, hashed Python dependencies into an external repository.

`pip install --require-hashes --no-deps --target site -r <lock>` runs with the interpreter that
python.bzl finds; nothing is taken from that interpreter's site-packages. The repository has one
py_library per installed distribution (named after the normalized distribution name, e.g.
`@rules_aten_pip//:pyyaml`) and `:all` with every one of them.
"""

load("//rules/private:repositories/python.bzl", "PYTHON_ATTRS", "PYTHON_ENV", "find_python", "python_error_repository")
load("//rules/private:repositories/repo_error.bzl", "ERROR_TEMPLATES", "one_line", "write_error_repository")

_SITE = "site"

def normalize_name(name):
    """PEP 503 name normalization, with `_` instead of `-` so the result is a valid target name.

    Args:
      name: a distribution name.

    Returns:
      The normalized name.
    """
    out = name.lower()
    for sep in ["-", "."]:
        out = out.replace(sep, "_")

    # PEP 503 makes a run of separators one (Starlark has no while: each pass halves a run).
    for _ in range(len(out)):
        if "__" not in out:
            break
        out = out.replace("__", "_")
    return out

def _metadata_field(text, field):
    prefix = field + ":"
    values = []
    for line in text.split("\n"):
        if line == "":
            break  # The headers end at the first empty line.
        if line.startswith(prefix):
            values.append(line[len(prefix):].strip())
    return values

def _requirement_name(spec):
    name = ""
    for ch in spec.elems():
        if ch.isalnum() or ch in "-_.":
            name += ch
        else:
            break
    return name

# Files of an install that can hold paths of this machine, and which nothing imports: console
# scripts (their shebang is the interpreter's absolute path), direct_url.json (the file:// URL of
# a local wheel) and RECORD (the hashes of those scripts). Leaving them out of the py_library
# keeps them out of the inputs, and so out of the keys, of the actions that run the tool.
_MACHINE_SPECIFIC = ["RECORD", "direct_url.json"]

def _machine_specific(path):
    parts = path.split("/")
    if parts[0] == "bin":
        return True
    return len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _MACHINE_SPECIFIC

# Compiles every installed module into checked-hash .pyc files, and prints the interpreter's
# cache tag (its doc says why).
_COMPILE_SCRIPT = Label("//rules/private/programs:compile_site_packages.py")

# The repository's BUILD file and one py_library of it, with {placeholders} for format().
_BUILD = Label("//rules/private/templates:pip.BUILD.tpl")
_LIBRARY = Label("//rules/private/templates:pip_library.BUILD.tpl")

def _bytecode_of(rctx, site, path, cache_tag):
    """The site-relative path of the compiled module of `path` (a .py file), or None."""
    directory, _, filename = path.rpartition("/")
    pyc = "{}__pycache__/{}.{}.pyc".format(
        directory + "/" if directory else "",
        filename[:-len(".py")],
        cache_tag,
    )
    return pyc if rctx.path("{}/{}".format(site, pyc)).exists else None

def _read_distribution(rctx, site, dist_info, cache_tag):
    metadata = rctx.read(site.get_child(dist_info).get_child("METADATA"))
    names = _metadata_field(metadata, "Name")
    if not names:
        fail("{}: METADATA has no Name".format(dist_info))
    requires = []
    for spec in _metadata_field(metadata, "Requires-Dist"):
        if "extra ==" in spec:
            continue
        requires.append(normalize_name(_requirement_name(spec)))

    srcs = []
    data = []
    record = rctx.read(site.get_child(dist_info).get_child("RECORD"))
    for line in record.split("\n"):
        path = line.split(",")[0].strip()
        if not path or path.startswith("..") or path.startswith("/") or "__pycache__" in path:
            continue
        if _machine_specific(path):
            continue
        if not rctx.path("{}/{}".format(site, path)).exists:
            continue
        if path.endswith(".py"):
            srcs.append(_SITE + "/" + path)
            pyc = _bytecode_of(rctx, site, path, cache_tag)
            if pyc:
                data.append(_SITE + "/" + pyc)
        else:
            data.append(_SITE + "/" + path)
    return struct(
        name = normalize_name(names[0]),
        requires = requires,
        srcs = sorted(srcs),
        data = sorted(data),
    )

def _starlark_list(items, indent):
    if not items:
        return "[]"
    pad = " " * indent
    return "[\n" + "".join([pad + "    \"{}\",\n".format(i) for i in items]) + pad + "]"

def _locked_names(rctx, lock):
    """The target names the lock's requirements would have (`name==version` lines), and `all`."""
    names = ["all"]
    for line in rctx.read(lock).split("\n"):
        if line and not line[0].isspace() and not line.startswith("#") and not line.startswith("-"):
            names.append(normalize_name(_requirement_name(line)))
    return names

_ERROR_BZL_FILES = {"requirements.bzl": "INSTALLED = []\n"}

def _pip_repo_impl(rctx):
    # Every label the function reads, resolved before anything runs: Bazel restarts a repository
    # function from the top at the first label it has not resolved yet, which would run pip again.
    for label in [_COMPILE_SCRIPT, _BUILD, _LIBRARY] + ERROR_TEMPLATES:
        rctx.path(label)
    python = find_python(rctx)
    lock = rctx.path(rctx.attr.lock)
    if python.error:
        python_error_repository(rctx, python, _locked_names(rctx, lock), bzl_files = _ERROR_BZL_FILES)
        return
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    result = rctx.execute(
        [
            python.path,
            "-m",
            "pip",
            "install",
            "--require-hashes",
            "--no-deps",
            "--no-compile",
            "--disable-pip-version-check",
            "--target",
            _SITE,
            "-r",
            str(lock),
        ],
        timeout = rctx.attr.timeout,
        quiet = True,
    )
    if result.return_code != 0:
        write_error_repository(rctx, "rules_aten: pip install -r {} failed ({}): {}; pip's index or wheel directory must have these pinned files (see `pip config list`), then run `bazel sync --only={}`".format(
            rctx.attr.lock,
            python.path,
            one_line(result.stderr) or one_line(result.stdout) or "exit status {}".format(result.return_code),
            rctx.name,
        ), _locked_names(rctx, lock), bzl_files = _ERROR_BZL_FILES)
        return

    compiled = rctx.execute([python.path, rctx.path(_COMPILE_SCRIPT), _SITE], quiet = True)
    if compiled.return_code != 0:
        write_error_repository(rctx, "rules_aten: cannot compile the modules pip installed ({}): {}".format(
            python.path,
            one_line(compiled.stderr),
        ), _locked_names(rctx, lock), bzl_files = _ERROR_BZL_FILES)
        return
    cache_tag = compiled.stdout.strip().split("\n")[-1]

    site = rctx.path(_SITE)
    by_name = {}
    for child in site.readdir():
        if child.basename.endswith(".dist-info"):
            dist = _read_distribution(rctx, site, child.basename, cache_tag)
            by_name[dist.name] = dist
    installed = sorted(by_name.keys())
    dists = [by_name[n] for n in installed]

    # Once read, the machine-specific files go too, so that every copy of the repository is the
    # same bytes (a console script's shebang names this machine's interpreter).
    rctx.delete(site.get_child("bin"))
    for child in site.readdir():
        if child.basename.endswith(".dist-info"):
            for name in _MACHINE_SPECIFIC:
                rctx.delete(child.get_child(name))

    library = rctx.read(rctx.path(_LIBRARY))
    libraries = []
    for d in dists:
        deps = [":" + r for r in sorted(d.requires) if r in installed and r != d.name]
        libraries.append(library.format(
            name = d.name,
            srcs = _starlark_list(d.srcs, 4),
            data = _starlark_list(d.data, 4),
            site = _SITE,
            deps = _starlark_list(deps, 4),
        ))
    rctx.file("BUILD.bazel", rctx.read(rctx.path(_BUILD)).format(
        lock = rctx.attr.lock,
        libraries = "".join(libraries),
        all = _starlark_list([":" + n for n in installed], 4),
    ), executable = False)
    rctx.file("requirements.bzl", "# Generated by @rules_aten//rules/private:repositories/pip.bzl.\nINSTALLED = {}\n".format(
        repr(installed),
    ), executable = False)

pip_repo = repository_rule(
    implementation = _pip_repo_impl,
    doc = "pip-installs a hashed lock file (--require-hashes --no-deps) into this repository.",
    attrs = dict(PYTHON_ATTRS, **{
        "lock": attr.label(
            mandatory = True,
            allow_single_file = True,
            doc = "A requirements file in which every requirement is pinned with --hash.",
        ),
        "timeout": attr.int(default = 600, doc = "Seconds pip may take."),
    }),
    environ = [PYTHON_ENV],
)
