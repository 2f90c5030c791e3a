"""The action of aten_wheel (rules/private/wheel.bzl): one operator library, its typed stubs and
the user's Python modules, as a wheel `pip install` puts into any venv of a torch it loads into;
and, with `--layout=kernel_hub`, the action of aten_kernel_hub (rules/private/kernel_hub.bzl):
the same library as `build/<variant>/` for Hugging Face's `kernels` (atengen/shipping/kernel_hub.py).

    aten_wheel.py --label=//:wheel --library=libx.so --op_yaml=ops.yaml --tags_yaml=tags.yaml
        --distribution=x-ops --version=1.0 --abi=stable --torch_target=2.11 ... --output_dir=D
    aten_wheel.py --layout=kernel_hub --label=//:hub --library=libx.so ... --kernel_name=x-ops
        --version=1 --license=MIT --abi=release --torch_release=2.13 --cxx11_abi=1 --output_dir=D

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
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from atengen.errors import AtengenError
from atengen.model.selection import select_functions
from atengen.pipelines.inputs import YamlInputs
from atengen.render.templates import TemplateOptions, Templates
from atengen.shipping.elf import LibraryFacts, read_library_facts
from atengen.shipping.kernel_hub import (
    HubContents,
    HubInputError,
    check_kernel_name,
    check_license,
    check_version,
    device,
    variant,
    write_hub,
)
from atengen.shipping.py_imports import PySource, import_problems
from atengen.shipping.stubs import ops_stub
from atengen.shipping.wheel_file import (
    WheelContents,
    WheelInputError,
    check_names,
    requirement,
    wheel_tag,
    write_wheel,
)

# The files of the package the wheel generates: py_srcs may not replace them.
_GENERATED = frozenset({"__init__", "ops"})
# Those of a kernel hub's package (and `ops`, an attribute of its __init__).
_HUB_GENERATED = frozenset({"__init__", "_ops", "ops"})
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
    for flag in ("label", "library", "op_yaml", "tags_yaml", "version", "abi"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--layout", choices=("wheel", "kernel_hub"), default="wheel")
    p.add_argument("--distribution", default="", help="wheel: the distribution name.")
    p.add_argument("--kernel_name", default="", help="kernel_hub: the kernel's name.")
    p.add_argument("--license", default="", help="kernel_hub: the kernel's license.")
    p.add_argument("--cxx11_abi", choices=("0", "1"), default="1", help="torch's C++ ABI.")
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


def _python_sources(
    args: argparse.Namespace, package: str, requires: list[str], generated: frozenset[str]
) -> list[PySource]:
    sources: list[PySource] = []
    labels = args.py_src_label or args.py_src
    if len(labels) != len(args.py_src):
        raise WheelInputError(
            f"{len(args.py_src)} --py_src and {len(args.py_src_label)} --py_src_label: one each"
        )
    for path, given in zip(args.py_src, labels, strict=True):
        label = _printable(given)
        module = _module_name(label)
        if module in generated:
            raise WheelInputError(
                f"py_srcs: {label} would replace the package's own {module}.py: rename it"
            )
        if module in {s.module for s in sources}:
            raise WheelInputError(f"py_srcs: two files named {module}.py")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) else "not UTF-8"
            raise WheelInputError(f"py_srcs: cannot read {label}: {why}") from None
        sources.append(PySource(module, label, text))
    shipped = frozenset(s.module for s in sources) | generated
    required = frozenset(
        requirement(r).name.lower().replace("-", "_").replace(".", "_") for r in requires
    )
    problems = import_problems(sources, package, shipped, required)
    if problems:
        raise WheelInputError("py_srcs " + problems[0])
    return sources


def build(args: argparse.Namespace) -> Path:
    names = check_names(args.distribution, args.version)
    torch_requirement, abi_note = _torch_requirement(args)
    requires = [torch_requirement] + list(args.requires)
    sources = _python_sources(args, names.package, requires, _GENERATED)
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
    return _write(lambda: write_wheel(contents, Path(args.output_dir)), Path(args.output_dir))


def _hub_op_names(functions: list[str], taken: frozenset[str]) -> list[str]:
    """The operators the package's __init__.py names as attributes: each one a Python name can
    spell that is not the package's own (the others stay reachable through `ops`)."""
    return sorted(
        n
        for n in set(functions)
        if n.isidentifier()
        and not keyword.iskeyword(n)
        and not n.startswith("_")
        and n not in taken
    )


def build_kernel_hub(args: argparse.Namespace) -> Path:
    package = check_kernel_name(args.kernel_name)
    version = check_version(args.version)
    license_text = check_license(args.license)
    _, abi_note = _torch_requirement(args)
    sources = _python_sources(args, package, ["torch"], _HUB_GENERATED)
    library = Path(args.library)
    facts, library_bytes = _library_facts(library)
    templates = Templates(TemplateOptions(code_dirs=tuple(args.template_code_dir)))
    model = YamlInputs(args.op_yaml, args.tags_yaml).load()
    functions = select_functions(model, "all")
    stub = ops_stub(functions, templates, f"the op YAML of {library.name}")
    names = [str(f.func.name.name) for f in functions if f.namespace == stub.namespace]
    modules = sorted(s.module for s in sources)
    taken = _HUB_GENERATED | {"add_op_namespace_prefix"} | set(modules)
    release = args.torch_target if args.abi == "stable" else args.torch_release
    name = variant(
        abi=args.abi,
        release=release,
        cxx11_abi=args.cxx11_abi == "1",
        cuda=args.cuda,
        machine=facts.machine,
    )
    values = {
        "kernel_name": args.kernel_name,
        "version": version,
        "namespace": stub.namespace,
        "namespace_literal": repr(stub.namespace),
        "library": library.name,
        "library_literal": repr(library.name),
        "abi_note": abi_note,
        "cuda_major": args.cuda.split(".")[0] if args.cuda and args.abi != "stable" else "",
        "modules": modules,
        "op_names": _hub_op_names(names, taken),
    }
    files = [
        ("__init__.py", templates.render("hub_init.py.j2", **values).encode(), False),
        ("_ops.py", templates.render("hub_ops.py.j2", **values).encode(), False),
        (library.name, library_bytes, True),
    ]
    files += [(f"{s.module}.py", s.text.encode(), False) for s in sources]
    contents = HubContents(
        kernel_name=args.kernel_name,
        package=package,
        version=version,
        license=license_text,
        variant=name,
        backend="cuda" if device(args.cuda) != "cpu" else "cpu",
        files=tuple(files),
    )
    output_dir = Path(args.output_dir)
    return _write(lambda: write_hub(contents, output_dir), output_dir)


def _write(write: Callable[[], Path], output_dir: Path) -> Path:
    """What ``write`` writes into output_dir; a directory this call made is removed again when
    the write fails, so that a failure leaves nothing behind."""
    made = []
    for directory in (output_dir, *output_dir.parents):
        if directory.exists() or directory.is_symlink():
            break
        made.append(directory)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        return write()
    except OSError as e:
        for directory in made:  # innermost first
            shutil.rmtree(directory, ignore_errors=True)
        raise WheelInputError(f"cannot write into {output_dir}: {e.strerror}") from None
    except BaseException:
        for directory in made:
            shutil.rmtree(directory, ignore_errors=True)
        raise


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    label = _printable(args.label)
    try:
        if args.layout == "kernel_hub":
            build_kernel_hub(args)
        else:
            build(args)
    except (WheelInputError, HubInputError) as e:
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
