"""The action of aten_wheel (rules/private/wheel.bzl): one operator library, its typed stubs and
the user's Python modules, as a wheel `pip install` puts into any venv of a torch it loads into.

    aten_wheel.py --label=//:wheel --library=libx.so --op_yaml=ops.yaml --tags_yaml=tags.yaml
        --distribution=x-ops --version=1.0 --abi=stable --torch_target=2.11 ... --output_dir=D

`--py_src=PATH` names a module of py_srcs, and the `--py_src_label=SHORT_PATH` of the same
position how messages name it (two flags, not one `PATH=SHORT_PATH`: a Bazel path may hold `=`).

Every bad input is one `rules_aten: <label>: ...` line (one per problem of the op YAML) and exit
1 (a flag the rule never passes wrong, exit 2), with nothing written.
"""

from __future__ import annotations

import argparse
import keyword
import re
import shutil
import struct
import sys
import unicodedata
from pathlib import Path
from typing import NoReturn

from atengen.errors import AtengenError
from atengen.model.selection import select_functions
from atengen.pipelines.inputs import YamlInputs
from atengen.render.templates import TemplateOptions, Templates
from atengen.shipping.elf import LibraryFacts, read_library_facts
from atengen.shipping.py_imports import PySource, import_problems
from atengen.shipping.stubs import ops_stub
from atengen.shipping.wheel_file import (
    Names,
    WheelContents,
    WheelInputError,
    check_names,
    requirement,
    wheel_tag,
    write_wheel,
)

# The files of the package the wheel generates: py_srcs may not replace them.
_GENERATED = frozenset({"__init__", "ops"})
# What a library's file name may be: aten_codegen's lib<name>.so, whose name takes ASCII
# letters, digits, `_`, `-` and `.` (generator_attrs.bzl's target_name_error). The name is
# written into the package's Python (as a literal) and its file list.
_LIBRARY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\.so")
_RELEASE = re.compile(r"[0-9]+\.[0-9]+")
_CUDA = re.compile(r"(?:[0-9]+(?:\.[0-9]+)*)?")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's usage and message are several lines: one, as every other error.
        print(f"rules_aten: aten_wheel: {_printable(message)}", file=sys.stderr)
        sys.exit(2)


def _printable(text: str) -> str:
    """``text`` on one line: a control character (a newline in a flag) shown escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aten_wheel", description=__doc__.split("\n")[0])
    for flag in ("label", "library", "op_yaml", "tags_yaml", "distribution", "version", "abi"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--torch_release", default="", help="The build's torch, major.minor.")
    p.add_argument("--torch_target", default="", help="abi = stable: the oldest release.")
    p.add_argument("--cuda", default="", help="The CUDA version the library's code needs.")
    p.add_argument("--summary", default="")
    p.add_argument("--py_src", action="append", default=[], help="A module of py_srcs.")
    p.add_argument("--py_src_label", action="append", default=[], help="Its SHORT_PATH.")
    p.add_argument("--requires", action="append", default=[])
    p.add_argument("--template_code_dir", action="append", default=[])
    return p


def _torch_requirement(args: argparse.Namespace) -> tuple[str, str]:
    """The torch requirement and the sentence of the package's docstring that explains it."""
    # The rule passes these from the library's provider: a wrong one is the rule's mistake,
    # still one line, never a broken requirement or docstring.
    if args.abi not in ("stable", "release"):
        raise WheelInputError(f'abi = {args.abi!r} is not "stable" or "release"')
    release = args.torch_target if args.abi == "stable" else args.torch_release
    if not _RELEASE.fullmatch(release):
        which = "torch_target" if args.abi == "stable" else "torch_release"
        raise WheelInputError(f"{which} = {release!r} is not a torch release (major.minor)")
    if not _CUDA.fullmatch(args.cuda):
        raise WheelInputError(f"cuda = {args.cuda!r} is not a CUDA version (such as 13.0)")
    if args.abi == "stable":
        return (
            f"torch>={args.torch_target}",
            f"Its library uses torch's stable ABI: it loads into torch {args.torch_target} and later.",
        )
    return (
        f"torch=={args.torch_release}.*",
        f"Its library is bound to torch {args.torch_release}: it loads into that release only.",
    )


def _library_facts(path: Path) -> tuple[LibraryFacts, bytes]:
    if not _LIBRARY_NAME.fullmatch(path.name):
        raise WheelInputError(
            f"library {_printable(str(path))!r}: its file name is not lib<name>.so with ASCII "
            "letters, digits, '_', '-', '+' and '.': give aten_codegen's lib<name>.so"
        )
    try:
        facts, data = read_library_facts(path)
    except (ValueError, struct.error) as e:
        raise WheelInputError(f"cannot read the library: {e}") from None
    # A RUNPATH would lead back into the build's tree, which the installed wheel lacks.
    outside = [p for p in facts.runpath if not p.startswith("$ORIGIN")]
    if outside:
        raise WheelInputError(
            f"{path.name} has the RUNPATH {':'.join(outside)}, which no installed wheel has"
        )
    return facts, data


def _module_name(label: str) -> str:
    """The module a py_srcs file becomes, or a WheelInputError naming the file."""
    module = Path(label).name.removesuffix(".py")
    if not label.endswith(".py") or not module.isidentifier():
        raise WheelInputError(f"py_srcs: {label}'s name is not a Python module name")
    if keyword.iskeyword(module):
        # `from . import class` in __init__.py would not parse, nor would any import of it.
        raise WheelInputError(
            f"py_srcs: {label}: {module} is a Python keyword, which cannot be a module name: "
            "rename the file"
        )
    normal = unicodedata.normalize("NFKC", module)
    if normal != module:
        raise WheelInputError(
            f"py_srcs: {label}: Python imports {module} as {normal} (its NFKC form), which no "
            f"file of the installed wheel is: rename the file to {normal}.py"
        )
    return module


def _python_sources(args: argparse.Namespace, names: Names, requires: list[str]) -> list[PySource]:
    sources: list[PySource] = []
    labels = args.py_src_label or args.py_src
    if len(labels) != len(args.py_src):
        raise WheelInputError(
            f"{len(args.py_src)} --py_src and {len(args.py_src_label)} --py_src_label: one each"
        )
    for path, given in zip(args.py_src, labels, strict=True):
        label = _printable(given)
        module = _module_name(label)
        if module in _GENERATED:
            raise WheelInputError(
                f"py_srcs: {label} would replace the wheel's own {module}.py: rename it"
            )
        if module in {s.module for s in sources}:
            raise WheelInputError(f"py_srcs: two files named {module}.py")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) else "not UTF-8"
            raise WheelInputError(f"py_srcs: cannot read {label}: {why}") from None
        sources.append(PySource(module, label, text))
    shipped = frozenset(s.module for s in sources) | _GENERATED
    required = frozenset(
        requirement(r).name.lower().replace("-", "_").replace(".", "_") for r in requires
    )
    problems = import_problems(sources, names.package, shipped, required)
    if problems:
        raise WheelInputError("py_srcs " + problems[0])
    return sources


def build(args: argparse.Namespace) -> Path:
    names = check_names(args.distribution, args.version)
    torch_requirement, abi_note = _torch_requirement(args)
    requires = [torch_requirement] + list(args.requires)
    sources = _python_sources(args, names, requires)
    library = Path(args.library)
    facts, library_bytes = _library_facts(library)
    templates = Templates(TemplateOptions(code_dirs=tuple(args.template_code_dir)))
    model = YamlInputs(args.op_yaml, args.tags_yaml).load()
    stub = ops_stub(select_functions(model, "all"), templates, f"the op YAML of {library.name}")
    cuda_major = args.cuda.split(".")[0] if args.cuda and args.abi != "stable" else ""
    values = {
        "distribution": names.distribution,
        "version": str(names.version),
        "package": names.package,
        "namespace": stub.namespace,
        # As Python string literals: the namespace may be a Python keyword (`torch.ops.lambda`
        # would not parse).
        "namespace_literal": repr(stub.namespace),
        "library": library.name,
        "library_literal": repr(library.name),
        "abi_note": abi_note,
        "cuda_major": cuda_major,
        "modules": sorted(s.module for s in sources),
    }
    files = [
        ("__init__.py", templates.render("wheel_init.py.j2", **values).encode(), False),
        ("ops.py", templates.render("wheel_ops.py.j2", **values).encode(), False),
        ("ops.pyi", stub.text.encode(), False),
        ("py.typed", b"", False),
        (library.name, library_bytes, True),
    ]
    files += [(f"{s.module}.py", s.text.encode(), False) for s in sources]
    classifiers = ["Programming Language :: Python :: 3", "Operating System :: POSIX :: Linux"]
    if args.cuda:
        classifiers.append(f"Environment :: GPU :: NVIDIA CUDA :: {args.cuda.split('.')[0]}")
    contents = WheelContents(
        names=names,
        tag=wheel_tag(facts),
        requires=tuple(requirement(r) for r in requires),
        classifiers=tuple(sorted(classifiers)),
        summary=args.summary or f"The operators torch.ops.{stub.namespace} ({library.name})",
        files=tuple(files),
    )
    return _write(contents, Path(args.output_dir))


def _write(contents: WheelContents, output_dir: Path) -> Path:
    """The wheel written into output_dir; a directory this call made is removed again when the
    write fails, so that a failure leaves nothing behind."""
    made = []
    for directory in (output_dir, *output_dir.parents):
        if directory.exists() or directory.is_symlink():
            break
        made.append(directory)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        return write_wheel(contents, output_dir)
    except OSError as e:
        for directory in made:  # innermost first
            shutil.rmtree(directory, ignore_errors=True)
        raise WheelInputError(f"cannot write the wheel into {output_dir}: {e.strerror}") from None
    except BaseException:
        for directory in made:
            shutil.rmtree(directory, ignore_errors=True)
        raise


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    label = _printable(args.label)
    try:
        build(args)
    except WheelInputError as e:
        print(f"rules_aten: {label}: {_printable(str(e))}", file=sys.stderr)
        return 1
    except AtengenError as e:
        # One line per problem of the op YAML (`ops.yaml:4: error: ...`), each saying whose.
        for line in e.format_all().splitlines():
            print(f"rules_aten: {label}: {_printable(line)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
