"""The flags of what a lazy-tensor backend customizes (LazyOptions), shared by `atengen lazy` and
`atengen backend --allow_lazy`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import fields

from atengen.errors import AtengenError
from atengen.lazy.options import LazyOptions, check_field

# The LazyOptions fields that are C++ names or include paths: one flag each, same name
# (include_prefix is shared with `atengen backend`, which has its own flag for it).
_NAME_FIELDS = tuple(
    f.name for f in fields(LazyOptions) if f.type in ("str", str) and f.name != "include_prefix"
)


def lazy_field_type(name: str) -> Callable[[str], str]:
    """The argparse type of the flag of LazyOptions field ``name``: the value if it has the
    field's form (a C++ name, a header path, ...), else a one-line error naming the flag."""

    def parse(value: str) -> str:
        why = check_field(name, value)
        if why is not None:
            raise argparse.ArgumentTypeError(why)
        return value

    return parse


def add_lazy_codegen_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shape_inference_file",
        help="The shape-inference header to check compute_shape_* declarations against.",
    )
    p.add_argument(
        "--no_ts_lowerings",
        action="store_true",
        help="No TorchScript Lower()/CanBeReused() in the node classes (non-TS backends).",
    )
    for name in _NAME_FIELDS:
        default = getattr(LazyOptions(), name)
        p.add_argument(
            f"--{name}", default=default, type=lazy_field_type(name), help=f"Default: {default!r}."
        )


def lazy_codegen_options(args: argparse.Namespace) -> LazyOptions:
    # (The name flags were checked as they were parsed; `atengen backend`'s --include_prefix
    # is its own flag.)
    why = check_field("include_prefix", args.include_prefix)
    if why is not None:
        raise AtengenError(None, f"--include_prefix {why}")
    return LazyOptions(
        **{name: getattr(args, name) for name in _NAME_FIELDS},
        include_prefix=args.include_prefix,
        ts_lowerings=not args.no_ts_lowerings,
    )
