"""What every command shares: the op and tags YAML, found in the installed torch by default."""

from __future__ import annotations

import argparse
import importlib.util
import os
from dataclasses import dataclass

from atengen.errors import AtengenError, Location
from atengen.shard_settings import AUTO, AUTO_OPERATORS_PER_BUCKET


@dataclass(frozen=True)
class YamlInputs:
    op_yaml: str
    tags_yaml: str


def installed_torch_yaml_dir() -> str | None:
    """Where the installed torch keeps its packaged native_functions.yaml.

    Located through the import system without importing torchgen: the generator is our own,
    torch's YAML is only its input.
    """
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], "packaged", "ATen", "native")


def add_yaml_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--op_yaml", help="Op YAML (native_functions.yaml format). Default: the installed torch's."
    )
    parser.add_argument(
        "--tags_yaml",
        help="Tags YAML. Default: tags.yaml beside --op_yaml, else the installed torch's.",
    )


def yaml_inputs(args: argparse.Namespace) -> YamlInputs:
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
    return YamlInputs(op_yaml, tags_yaml)


def add_shards_flag(parser: argparse.ArgumentParser, *, allow_auto: bool = False) -> None:
    help_text = "0 = one file per operator; N > 0 = N hash buckets per key"
    if allow_auto:
        help_text += f"; {AUTO} = buckets of at most {AUTO_OPERATORS_PER_BUCKET} operators on average, per key"
    parser.add_argument(
        "--shards",
        type=_shards_or_auto if allow_auto else _shard_count,
        default=0,
        help=help_text + ".",
    )


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
    value = _shard_count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be 1 or more, or {AUTO}")
    return value


def _shards_or_auto(text: str) -> int | str:
    return AUTO if text == AUTO else _shard_count(text)


def _shard_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def read_text(path: str, what: str, *, lenient: bool = False) -> str:
    """A UTF-8 input file named by a flag; unreadable or binary files are one-line errors.

    ``lenient``: undecodable bytes become U+FFFD instead (C++ sources scanned for names).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AtengenError(Location(path, 1), f"cannot read {what}: {e.strerror}") from None
    if lenient:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise AtengenError(Location(path, line), f"{what} is not UTF-8 text") from None
