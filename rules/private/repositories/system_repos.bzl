"""Repositories for the Bazel rule sets that Debian's bazel-* packages put under /usr/share/bazel.

Bazel 4.2.3 (Debian's bazel-bootstrap) cannot download anything here, so rules_cc, rules_java,
rules_proto, platforms and bazel_skylib come from the local disk. Debian's rules_cc needs a patch
(third_party/rules_cc/use_cpp_toolchain.patch) to load with that Bazel: its files are
symlinked, except the ones the patch touches, which are copied and then patched.

rules_python has no Debian package: `python_rules_shim` provides the names of
`@rules_python//python:defs.bzl` that rules_aten uses, on top of Bazel's built-in rules, so that
rules_aten's BUILD files load them from the same place as under Bzlmod with the real rules_python.

`offline_coverage_tools` stands in for @remote_coverage_tools, which Bazel 4 downloads for every
`bazel test`.
"""

def _patched_paths(rctx, patches):
    """Paths (relative, after stripping one component) that the patches touch."""
    paths = {}
    for patch in patches:
        for line in rctx.read(patch).split("\n"):
            if line.startswith("+++ ") or line.startswith("--- "):
                name = line[4:].split("\t")[0].strip()
                if name != "/dev/null" and "/" in name:
                    paths[name.split("/", 1)[1]] = True
    return paths

def _mirror_tree(rctx, src, copy):
    """Symlinks every file under src into the repository, except those in `copy`, which are copied.

    Copies are what patches edit, so the patched files never write through to src.
    """

    # Bazel 4's path objects cannot tell files from directories, so let find(1) list the files.
    result = rctx.execute(["find", ".", "-type", "f"], working_directory = str(src))
    if result.return_code != 0:
        fail("rules_aten: cannot list {}: {}".format(src, result.stderr))
    for line in sorted(result.stdout.split("\n")):
        rel = line.strip()
        if not rel:
            continue
        if rel.startswith("./"):
            rel = rel[2:]

        # Bazel 4's path.get_child takes one component only.
        path = rctx.path("{}/{}".format(src, rel))
        if rel in copy:
            rctx.file(rel, rctx.read(path), executable = False)
        else:
            rctx.symlink(path, rel)

def _bazel_tools_defines(rctx, label, name):
    """Whether the .bzl file `label` of the running Bazel's @bazel_tools defines `name`."""
    return ("\ndef {}(".format(name)) in rctx.read(rctx.path(label))

def _patched_local_repo_impl(rctx):
    src = rctx.path(rctx.attr.path)
    if not src.exists:
        fail("rules_aten: {} does not exist (apt-get install {})".format(src, rctx.attr.package))
    patches = [rctx.path(p) for p in rctx.attr.patches]
    if rctx.attr.unless_bazel_tools_defines:
        # The patch stands in for a function of @bazel_tools that old Bazel lacks (rules_cc's
        # use_cpp_toolchain, missing from 4.2.3): where the running Bazel has it, the package
        # is used as it is, and the patch, written for one rules_cc release, is not applied to
        # another (Bazel 7's Debian rules_cc is 0.0.11, on which it fails).
        label, _, name = rctx.attr.unless_bazel_tools_defines.rpartition("%")
        if _bazel_tools_defines(rctx, Label(label), name):
            patches = []
    _mirror_tree(rctx, src, _patched_paths(rctx, patches))
    for patch in patches:
        rctx.patch(patch, strip = 1)

patched_local_repo = repository_rule(
    implementation = _patched_local_repo_impl,
    doc = "Copies a directory from the local disk into a repository and applies patches to it.",
    attrs = {
        "package": attr.string(doc = "The Debian package that provides `path` (for errors)."),
        "patches": attr.label_list(allow_files = True, doc = "-p1 patches, applied in order."),
        "path": attr.string(mandatory = True, doc = "Absolute path of the directory to copy."),
        "unless_bazel_tools_defines": attr.string(
            doc = "`<label of a @bazel_tools .bzl>%<name>`: no patch where that file defines name.",
        ),
    },
)

def _first_local_repo_impl(rctx):
    for candidate in rctx.attr.paths:
        path = rctx.path(candidate)
        if rctx.path(candidate + "/" + rctx.attr.marker).exists:
            for child in path.readdir():
                rctx.symlink(child, child.basename)
            if not path.get_child("WORKSPACE").exists:
                # (Bazel 4 wants one at a repository's root; sid's platforms has a MODULE.bazel)
                rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
            return
    fail("rules_aten: none of {} has {} (apt-get install {})".format(", ".join(rctx.attr.paths), rctx.attr.marker, rctx.attr.package))

first_local_repo = repository_rule(
    implementation = _first_local_repo_impl,
    doc = "The first directory of `paths` that has `marker`, as a repository (Debian moved " +
          "some rule sets between releases: bookworm's platforms is /usr/share/bazel/platforms, " +
          "sid's /usr/share/bazel/tools/platforms, where .../platforms/platforms is another copy).",
    attrs = {
        "marker": attr.string(mandatory = True, doc = "A file the right directory has."),
        "package": attr.string(doc = "The Debian package that provides the paths (for errors)."),
        "paths": attr.string_list(mandatory = True, doc = "Absolute paths, in order."),
    },
)

# python/defs.bzl of python_rules_shim, written as it is.
_PY_SHIM_DEFS = Label("//rules/private/templates:python_rules_shim_defs.bzl.tpl")

def _python_rules_shim_impl(rctx):
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("BUILD.bazel", "", executable = False)
    rctx.file("python/BUILD.bazel", "exports_files([\"defs.bzl\"])\n", executable = False)
    rctx.file("python/defs.bzl", rctx.read(rctx.path(_PY_SHIM_DEFS)), executable = False)

python_rules_shim = repository_rule(
    implementation = _python_rules_shim_impl,
    doc = "A stand-in for rules_python under WORKSPACE-mode Bazel that has no rules_python.",
)

# What both tools of offline_coverage_tools run, and its BUILD file, written as they are.
_COVERAGE_STUB = Label("//rules/private/programs:coverage_unavailable.sh")
_COVERAGE_BUILD = Label("//rules/private/templates:offline_coverage_tools.BUILD.tpl")

def _offline_coverage_tools_impl(rctx):
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name), executable = False)
    rctx.file("unavailable.sh", rctx.read(rctx.path(_COVERAGE_STUB)), executable = True)
    rctx.file("BUILD.bazel", rctx.read(rctx.path(_COVERAGE_BUILD)), executable = False)

offline_coverage_tools = repository_rule(
    implementation = _offline_coverage_tools_impl,
    doc = """Stands in for @remote_coverage_tools, which Bazel 4 downloads for every `bazel test`.

Tests run; `bazel coverage` does not (its tools exit with an error).""",
)
