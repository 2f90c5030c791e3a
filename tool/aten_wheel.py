"""The action of aten_wheel (rules/private/wheel.bzl): one operator library, its typed stubs and
the user's Python modules, as a wheel `pip install` puts into any venv of a torch it loads into.

    aten_wheel.py --label=//:wheel --library=libx.so --op_yaml=ops.yaml --tags_yaml=tags.yaml
        --distribution=x-ops --version=1.0 --abi=stable --torch_target=2.11 ... --output_dir=D

Every bad input is one `rules_aten: <label>: ...` line and exit 1, with nothing written.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aten_wheel", description=__doc__.split("\n")[0])
    for flag in ("label", "library", "op_yaml", "tags_yaml", "distribution", "version", "abi"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--torch_release", default="", help="The build's torch, major.minor.")
    p.add_argument("--torch_target", default="", help="abi = stable: the oldest release.")
    p.add_argument("--cuda", default="", help="The CUDA version the library's code needs.")
    p.add_argument("--summary", default="")
    p.add_argument("--py_src", action="append", default=[], help="PATH=SHORT_PATH")
    p.add_argument("--requires", action="append", default=[])
    p.add_argument("--template_code_dir", action="append", default=[])
    return p


def _torch_requirement(args: argparse.Namespace) -> tuple[str, str]:
    """The torch requirement and the sentence of the package's docstring that explains it."""
    if args.abi == "stable":
        return (
            f"torch>={args.torch_target}",
            f"Its library uses torch's stable ABI: it loads into torch {args.torch_target} and later.",
        )
    return (
        f"torch=={args.torch_release}.*",
        f"Its library is bound to torch {args.torch_release}: it loads into that release only.",
    )


def _library_facts(path: Path) -> LibraryFacts:
    try:
        facts = read_library_facts(path)
    except (ValueError, struct.error) as e:
        raise WheelInputError(f"cannot read the library: {e}") from None
    # A RUNPATH would lead back into the build's tree, which the installed wheel lacks.
    outside = [p for p in facts.runpath if not p.startswith("$ORIGIN")]
    if outside:
        raise WheelInputError(
            f"{path.name} has the RUNPATH {':'.join(outside)}, which no installed wheel has"
        )
    return facts


def _python_sources(args: argparse.Namespace, names: Names, requires: list[str]) -> list[PySource]:
    sources: list[PySource] = []
    for spec in args.py_src:
        path, _, label = spec.partition("=")
        module = Path(label).name.removesuffix(".py")
        if not module.isidentifier():
            raise WheelInputError(f"py_srcs: {label}'s name is not a Python module name")
        if module in _GENERATED:
            raise WheelInputError(
                f"py_srcs: {label} would replace the wheel's own {module}.py: rename it"
            )
        if module in {s.module for s in sources}:
            raise WheelInputError(f"py_srcs: two files named {module}.py")
        sources.append(PySource(module, label, Path(path).read_text(encoding="utf-8")))
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
    facts = _library_facts(library)
    templates = Templates(TemplateOptions(code_dirs=tuple(args.template_code_dir)))
    model = YamlInputs(args.op_yaml, args.tags_yaml).load()
    stub = ops_stub(select_functions(model, "all"), templates, f"the op YAML of {library.name}")
    cuda_major = args.cuda.split(".")[0] if args.cuda and args.abi != "stable" else ""
    values = {
        "distribution": names.distribution,
        "version": str(names.version),
        "package": names.package,
        "namespace": stub.namespace,
        "library": library.name,
        "abi_note": abi_note,
        "cuda_major": cuda_major,
        "modules": sorted(s.module for s in sources),
    }
    files = [
        ("__init__.py", templates.render("wheel_init.py.j2", **values).encode(), False),
        ("ops.py", templates.render("wheel_ops.py.j2", **values).encode(), False),
        ("ops.pyi", stub.text.encode(), False),
        ("py.typed", b"", False),
        (library.name, library.read_bytes(), True),
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
    os.makedirs(args.output_dir, exist_ok=True)
    return write_wheel(contents, Path(args.output_dir))


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        build(args)
    except WheelInputError as e:
        print(f"rules_aten: {args.label}: {e}", file=sys.stderr)
        return 1
    except AtengenError as e:
        print(f"rules_aten: {args.label}: {e.format_all()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
