"""``python -m atengen.lazy``: lazy-tensor codegen for one backend YAML.

    python -m atengen.lazy --backend_yaml=F --output_dir=D --op_yaml=F --tags_yaml=F
        [--shape_inference_file=F] [--shards=N] [--include_prefix=P]
        [--node_base=C --node_base_hdr=H] [--tensor_class=C --tensor_class_hdr=H]
        [--backend_namespace=NS] [--get_device_fn=F] [--lazy_value_class=C]
        [--shape_inference_hdr=H] [--no_ts_lowerings]

Everything is checked and rendered before anything is written: on bad input
it prints one ``file:line: error: ...`` line per error, exits 1 and writes
nothing. ``--shape_inference_file`` is the shape-inference header to check the
generated kernels' ``compute_shape_*`` calls against (its include path is
``--shape_inference_hdr``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from atengen.backend.spec import load_backend_yaml
from atengen.emit.output import write_tree
from atengen.emit.shards import Sharding
from atengen.errors import AtengenError, Location
from atengen.lazy.emit import lazy_files
from atengen.lazy.kernels import check_shape_inference
from atengen.lazy.model import resolve_lazy_backend
from atengen.lazy.options import LazyOptions
from atengen.model.operator_model import load_model


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m atengen.lazy", description=__doc__.split("\n")[0])
    p.add_argument("--backend_yaml", required=True)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--op_yaml", required=True)
    p.add_argument("--tags_yaml", required=True)
    p.add_argument("--shape_inference_file")
    p.add_argument("--shards", type=int, default=0)
    p.add_argument("--no_ts_lowerings", action="store_true")
    for f in fields(LazyOptions):
        if f.type == "str" or f.type is str:
            p.add_argument(f"--{f.name}", default=f.default)
    return p


def run(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    names = {f.name for f in fields(LazyOptions)}
    opts = LazyOptions(
        **{k: v for k, v in vars(args).items() if k in names},
        ts_lowerings=not args.no_ts_lowerings,
    )
    spec = load_backend_yaml(args.backend_yaml, lazy=True)
    lazy = resolve_lazy_backend(
        spec, load_model(args.op_yaml, args.tags_yaml), value_class=opts.lazy_value_class
    )
    if args.shape_inference_file:
        try:
            with open(args.shape_inference_file, encoding="utf-8") as f:
                header = f.read()
        except OSError as e:
            raise AtengenError(
                Location(args.shape_inference_file, 1), f"cannot read file: {e.strerror}"
            ) from None
        check_shape_inference(lazy, header, args.shape_inference_file)
    files = lazy_files(lazy, opts, Sharding(args.shards))
    write_tree(args.output_dir, files)


def main(argv: list[str] | None = None) -> int:
    try:
        run(sys.argv[1:] if argv is None else argv)
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
