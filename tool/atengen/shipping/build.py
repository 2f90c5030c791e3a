"""The action of aten_wheel (rules/private/rules/wheel.bzl): one operator library, its typed stubs and
the user's Python modules, as a wheel `pip install` puts into any venv of a torch it loads into;
and, with the layout `kernel_hub`, the action of aten_kernel_hub (rules/private/rules/kernel_hub.bzl):
the same library as `build/<variant>/` for Hugging Face's `kernels` (kernel_hub.py).
`atengen wheel` (atengen/cli/wheel_command.py) fills ShippingOptions from its flags.

Every bad input is a WheelInputError or HubInputError (an AtengenError for the op YAML), raised
before anything is written; a write that fails half-way leaves nothing behind.
"""

from __future__ import annotations

import keyword
import re
import shutil
import struct
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atengen.model.operator_model import load_model
from atengen.model.selection import select_functions
from atengen.render.templates import TemplateOptions, Templates
from atengen.shipping.elf import LibraryFacts, read_library_facts
from atengen.shipping.kernel_hub import (
    HubContents,
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


def printable(text: str) -> str:
    """``text`` on one line: a control character (a newline in a flag) shown escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass(frozen=True)
class ShippingOptions:
    """What the rule passes (atengen/cli/wheel_command.py names the flags)."""

    label: str
    library: str
    op_yaml: str
    tags_yaml: str
    version: str
    abi: str
    output_dir: str
    layout: str = "wheel"
    distribution: str = ""
    kernel_name: str = ""
    license: str = ""
    cxx11_abi: str = "1"
    torch_release: str = ""
    torch_target: str = ""
    cuda: str = ""
    summary: str = ""
    py_src: tuple[str, ...] = ()
    py_src_label: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


def _torch_requirement(options: ShippingOptions) -> tuple[str, str]:
    """The torch requirement and the sentence of the package's docstring that explains it."""
    # The rule passes these from the library's provider: a wrong one is the rule's mistake,
    # still one line, never a broken requirement or docstring.
    if options.abi not in ("stable", "release"):
        raise WheelInputError(f'abi = {options.abi!r} is not "stable" or "release"')
    release = options.torch_target if options.abi == "stable" else options.torch_release
    if not _RELEASE.fullmatch(release):
        which = "torch_target" if options.abi == "stable" else "torch_release"
        raise WheelInputError(f"{which} = {release!r} is not a torch release (major.minor)")
    if not _CUDA.fullmatch(options.cuda):
        raise WheelInputError(f"cuda = {options.cuda!r} is not a CUDA version (such as 13.0)")
    if options.abi == "stable":
        return (
            f"torch>={options.torch_target}",
            f"Its library uses torch's stable ABI: it loads into torch {options.torch_target} and later.",
        )
    return (
        f"torch=={options.torch_release}.*",
        f"Its library is bound to torch {options.torch_release}: it loads into that release only.",
    )


def _library_facts(path: Path) -> tuple[LibraryFacts, bytes]:
    if not _LIBRARY_NAME.fullmatch(path.name):
        raise WheelInputError(
            f"library {printable(str(path))!r}: its file name is not lib<name>.so with ASCII "
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
    options: ShippingOptions, package: str, requires: list[str], generated: frozenset[str]
) -> list[PySource]:
    sources: list[PySource] = []
    labels = options.py_src_label or options.py_src
    if len(labels) != len(options.py_src):
        raise WheelInputError(
            f"{len(options.py_src)} --py_src and {len(options.py_src_label)} --py_src_label: one each"
        )
    for path, given in zip(options.py_src, labels, strict=True):
        label = printable(given)
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


def build(options: ShippingOptions) -> Path:
    names = check_names(options.distribution, options.version)
    torch_requirement, abi_note = _torch_requirement(options)
    requires = [torch_requirement] + list(options.requires)
    sources = _python_sources(options, names.package, requires, _GENERATED)
    library = Path(options.library)
    facts, library_bytes = _library_facts(library)
    templates = Templates(TemplateOptions())
    model = load_model(options.op_yaml, options.tags_yaml)
    stub = ops_stub(select_functions(model, "all"), templates, f"the op YAML of {library.name}")
    cuda_major = options.cuda.split(".")[0] if options.cuda and options.abi != "stable" else ""
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
    if options.cuda:
        classifiers.append(f"Environment :: GPU :: NVIDIA CUDA :: {options.cuda.split('.')[0]}")
    contents = WheelContents(
        names=names,
        tag=wheel_tag(facts),
        requires=tuple(requirement(r) for r in requires),
        classifiers=tuple(sorted(classifiers)),
        summary=options.summary or f"The operators torch.ops.{stub.namespace} ({library.name})",
        files=tuple(files),
    )
    return _write(lambda: write_wheel(contents, Path(options.output_dir)), Path(options.output_dir))


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


def build_kernel_hub(options: ShippingOptions) -> Path:
    package = check_kernel_name(options.kernel_name)
    version = check_version(options.version)
    license_text = check_license(options.license)
    _, abi_note = _torch_requirement(options)
    sources = _python_sources(options, package, ["torch"], _HUB_GENERATED)
    library = Path(options.library)
    facts, library_bytes = _library_facts(library)
    templates = Templates(TemplateOptions())
    model = load_model(options.op_yaml, options.tags_yaml)
    functions = select_functions(model, "all")
    stub = ops_stub(functions, templates, f"the op YAML of {library.name}")
    names = [str(f.func.name.name) for f in functions if f.namespace == stub.namespace]
    modules = sorted(s.module for s in sources)
    taken = _HUB_GENERATED | {"add_op_namespace_prefix"} | set(modules)
    release = options.torch_target if options.abi == "stable" else options.torch_release
    name = variant(
        abi=options.abi,
        release=release,
        cxx11_abi=options.cxx11_abi == "1",
        cuda=options.cuda,
        machine=facts.machine,
    )
    values = {
        "kernel_name": options.kernel_name,
        "version": version,
        "namespace": stub.namespace,
        "namespace_literal": repr(stub.namespace),
        "library": library.name,
        "library_literal": repr(library.name),
        "abi_note": abi_note,
        "cuda_major": options.cuda.split(".")[0]
        if options.cuda and options.abi != "stable"
        else "",
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
        kernel_name=options.kernel_name,
        package=package,
        version=version,
        license=license_text,
        variant=name,
        backend="cuda" if device(options.cuda) != "cpu" else "cpu",
        files=tuple(files),
    )
    output_dir = Path(options.output_dir)
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
