"""What every command shares: the op and tags YAML (found in the installed torch by default),
the --shards, --jobs and --torch_facts flags, and where compiled template code is kept."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import TYPE_CHECKING

from atengen.errors import AtengenError
from atengen.render.shards import AUTO, AUTO_OPERATORS_PER_BUCKET, ShardSetting

# The pipelines are imported by the functions that run them (see atengen.cli.main).
if TYPE_CHECKING:
    from atengen.facts.wheel_facts import AutogradHelpers, WheelFacts
    from atengen.pipelines.inputs import YamlInputs
    from atengen.render.templates import TemplateOptions


# What the package's path holds when it runs from a Bazel runfiles tree (an action, a worker,
# `bazel run`).
RUNFILES_PART = ".runfiles" + os.sep
CACHE_DIR_ENV = "ATENGEN_CACHE_DIR"


def installed_torch_yaml_dir() -> str | None:
    """Where the installed torch keeps its packaged native_functions.yaml.

    Located through the import system without importing torchgen: the generator is our own,
    torch's YAML is only its input.
    """
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], "packaged", "ATen", "native")


def installed_torch_dir() -> str | None:
    """The installed torch's package directory (the one holding include/ and lib/), located like
    installed_torch_yaml_dir, without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return spec.submodule_search_locations[0]


def add_yaml_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--op_yaml", help="Op YAML (native_functions.yaml format). Default: the installed torch's."
    )
    parser.add_argument(
        "--tags_yaml",
        help="Tags YAML. Default: tags.yaml beside --op_yaml, else the installed torch's.",
    )


def yaml_inputs(args: argparse.Namespace) -> YamlInputs:
    from atengen.pipelines.inputs import YamlInputs

    op_yaml = args.op_yaml
    if op_yaml is None:
        d = installed_torch_yaml_dir()
        if d is None:
            raise AtengenError(None, "no --op_yaml given and no installed torch to take it from")
        op_yaml = os.path.join(d, "native_functions.yaml")
    tags_yaml = args.tags_yaml or os.path.join(os.path.dirname(op_yaml), "tags.yaml")
    if args.tags_yaml is None and not os.path.exists(tags_yaml):
        # Custom op libraries usually reuse torch's tags.
        d = installed_torch_yaml_dir()
        if d is not None:
            tags_yaml = os.path.join(d, "tags.yaml")
    # A command runs once and exits: the model may stay frozen (see YamlInputs).
    return YamlInputs(op_yaml, tags_yaml, freeze_heap=True)


# The flags that name input files, in every command that has them: no output may replace them.
INPUT_FILE_FLAGS = (
    "op_yaml",
    "tags_yaml",
    "backend_yaml",
    "derivatives_yaml",
    "ops_file",
    "shape_inference_file",
    "torch_facts",
    "torch_version_py",
)


def input_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(flag, path) of every input file the command reads: its flags', and the op and tags
    YAML it takes from the installed torch when not given."""
    found = [
        (f"--{name}", value)
        for name in INPUT_FILE_FLAGS
        if isinstance(value := getattr(args, name, None), str) and value
    ]
    found += [("--impl_path", p) for p in (getattr(args, "impl_path", "") or "").split(",") if p]
    if hasattr(args, "op_yaml"):
        try:
            inputs = yaml_inputs(args)
        except AtengenError:
            pass  # the command itself reports it
        else:
            found += [("--op_yaml", inputs.op_yaml), ("--tags_yaml", inputs.tags_yaml)]
    return found


def template_options() -> TemplateOptions:
    """Under Bazel none: an action writes only its declared outputs. Elsewhere a user cache of
    the templates' compiled code, ``$ATENGEN_CACHE_DIR`` (empty: none) or
    ``${XDG_CACHE_HOME:-~/.cache}/atengen``; a stale or foreign file there is never used (see
    atengen.render.templates)."""
    from atengen.render.templates import TemplateOptions

    if RUNFILES_PART in os.path.abspath(__file__):
        return TemplateOptions()
    root = os.environ.get(CACHE_DIR_ENV)
    if root is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "atengen")
    if not root:
        return TemplateOptions()
    code_dir = os.path.join(root, "template_code")
    return TemplateOptions(code_dirs=(code_dir,), write_dir=code_dir)


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """--ops or --ops_file: the operators a command generates for."""
    selection = parser.add_mutually_exclusive_group()
    selection.add_argument(
        "--ops",
        default="all",
        help="`all`, or comma-separated op roots (add) or names (add.Tensor).",
    )
    selection.add_argument(
        "--ops_file", help="A file with the op selection, one or more per line; # comments."
    )


def selected_ops(args: argparse.Namespace) -> str:
    """The selection of add_selection_flags' flags, as --ops spells it."""
    from atengen.pipelines.inputs import read_text

    if args.ops_file is None:
        ops: str = args.ops
        return ops
    lines = [line.split("#", 1)[0] for line in read_text(args.ops_file, "--ops_file").splitlines()]
    return ",".join(x for line in lines for x in line.split(",") if x.strip())


def add_shards_flag(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--shards",
        type=_shard_setting,
        default=ShardSetting.parse(default),
        help=(
            f"0 = one file per operator; N > 0 = N hash buckets per file set; {AUTO} = buckets of "
            f"at most {AUTO_OPERATORS_PER_BUCKET} operators on average, per file set. "
            f"Default: {default}."
        ),
    )


def _shard_setting(text: str) -> ShardSetting:
    try:
        return ShardSetting.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_jobs_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=_jobs_or_auto,
        default=None,
        help=(
            f"Processes to generate with: a number, or {AUTO} (the default: one per CPU, up to "
            "4, for selections large enough to gain from it). The output is the same bytes "
            "with any number."
        ),
    )


def _jobs_or_auto(text: str) -> int | None:
    if text == AUTO:
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, or {AUTO}")
    return value


def add_torch_facts_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--torch_facts",
        help="The installed torch's facts (@torch//:torch_facts.json, from tool/torch_probe.py): "
        + what,
    )
    p.add_argument(
        "--torch_version_py",
        help="The torch/version.py of the torch the facts are of (@torch//:version.py): one "
        "naming another version stops the run (torch changed after the facts were read).",
    )


def wheel_facts(path: str | None, version_py: str | None = None) -> WheelFacts | None:
    """--torch_facts read; one `file:1: error:` when it is not for a supported release, or when
    --torch_version_py (``version_py``) names another torch than the facts."""
    if path is None:
        return None
    from atengen.errors import Location
    from atengen.facts.wheel_facts import parse_wheel_facts, stale_facts
    from atengen.pipelines.inputs import read_text

    try:
        wheel = parse_wheel_facts(read_text(path, "--torch_facts"))
    except ValueError as e:
        raise AtengenError(Location(path, 1), str(e)) from None
    if version_py is not None:
        stale = stale_facts(wheel, read_text(version_py, "--torch_version_py"))
        if stale:
            # The real path: in a build, the file is a link (through @torch) into the wheel.
            raise AtengenError(Location(os.path.realpath(version_py), 1), stale)
    if wheel.warning:
        print(f"{path}:1: warning: {wheel.warning}", file=sys.stderr)
    return wheel


def autograd_helpers(wheel: WheelFacts | None, facts_path: str | None) -> AutogradHelpers:
    """The FunctionsManual.h helpers formulas may call: those of --torch_facts (``wheel``, read
    from ``facts_path``), or, without it, those read from the installed torch's libtorch_cpu.so
    and FunctionsManual.h. One-line errors when neither tells them."""
    from atengen.errors import Location

    if wheel is not None:
        if wheel.autograd_helpers is None:
            raise AtengenError(
                Location(facts_path or "--torch_facts", 1),
                "torch facts: no 'autograd_helpers_exported' (what libtorch_cpu exports of "
                "FunctionsManual.h); write them with tool/torch_probe.py",
            )
        return wheel.autograd_helpers
    torch_dir = installed_torch_dir()
    if torch_dir is None:
        raise AtengenError(
            None,
            "no --torch_facts given and no installed torch to read the FunctionsManual.h "
            "helpers from",
        )
    return read_autograd_helpers(torch_dir)


def read_autograd_helpers(torch_dir: str) -> AutogradHelpers:
    """The FunctionsManual.h helpers of the torch package at ``torch_dir``, read from its
    lib/libtorch_cpu.so and its header; one-line errors when either cannot be read."""
    from atengen.facts import wheel_symbols
    from atengen.facts.wheel_facts import AutogradHelpers
    from atengen.pipelines.inputs import read_text

    header = os.path.join(torch_dir, "include", "torch", "csrc", "autograd", "FunctionsManual.h")
    native = os.path.join(
        os.path.dirname(torch_dir), "torchgen", wheel_symbols.NATIVE_FUNCTIONS_YAML
    )
    try:
        exported = wheel_symbols.exported_names(os.path.join(torch_dir, "lib", "libtorch_cpu.so"))
        names = wheel_symbols.functions_manual_names(read_text(header, "FunctionsManual.h"), header)
    except ValueError as e:
        raise AtengenError(None, str(e)) from None
    aten = (
        wheel_symbols.native_function_names(read_text(native, "native_functions.yaml"))
        if os.path.exists(native)
        else frozenset()
    )
    return AutogradHelpers.of(exported.autograd_details, names.declared, names.defined, aten)
