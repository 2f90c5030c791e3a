"""The flags of what a lazy-tensor backend customizes (LazyOptions), shared by `atengen lazy` and
`atengen backend --allow_lazy`."""

from __future__ import annotations

import argparse
from dataclasses import fields

from atengen.lazy.options import LazyOptions

# The LazyOptions fields that are C++ names or include paths: one flag each, same name
# (include_prefix is shared with `atengen backend`, which has its own flag for it).
_NAME_FIELDS = tuple(
    f.name for f in fields(LazyOptions) if f.type in ("str", str) and f.name != "include_prefix"
)


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
        p.add_argument(f"--{name}", default=default, help=f"Default: {default!r}.")


def lazy_codegen_options(args: argparse.Namespace) -> LazyOptions:
    return LazyOptions(
        **{name: getattr(args, name) for name in _NAME_FIELDS},
        include_prefix=args.include_prefix,
        ts_lowerings=not args.no_ts_lowerings,
    )
