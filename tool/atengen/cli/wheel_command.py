"""`atengen wheel`: the action of aten_wheel (rules/private/rules/wheel.bzl) and, with
`--layout=kernel_hub`, of aten_kernel_hub (rules/private/rules/kernel_hub.bzl).

    atengen wheel --label=//:wheel --library=libx.so --op_yaml=ops.yaml --tags_yaml=tags.yaml
        --distribution=x-ops --version=1.0 --abi=stable --torch_target=2.11 ... --output_dir=D
    atengen wheel --layout=kernel_hub --label=//:hub --library=libx.so ... --kernel_name=x-ops
        --version=1 --license=MIT --abi=release --torch_release=2.13 --cxx11_abi=1 --output_dir=D

`--py_src=PATH` names a module of py_srcs, and the `--py_src_label=SHORT_PATH` of the same
position how messages name it (two flags, not one `PATH=SHORT_PATH`: a Bazel path may hold `=`).

Every bad input is one `rules_aten: <label>: ...` line (one per problem of the op YAML) and exit
1 (a flag the rule never passes wrong, exit 2), with nothing written (atengen/shipping/build.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from atengen.errors import AtengenError

if TYPE_CHECKING:
    from atengen.cli.parser import Commands


def add_wheel_command(commands: Commands) -> None:
    p = commands.add_parser("wheel", help="a library and its stubs as a wheel, or a kernel hub")
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
    p.set_defaults(run=_wheel)


def _wheel(args: argparse.Namespace) -> int:
    # Here, not at start-up: PyPA's wheel and packaging, Jinja and the model are this command's.
    from atengen.shipping.build import ShippingOptions, build, build_kernel_hub, printable
    from atengen.shipping.kernel_hub import HubInputError
    from atengen.shipping.wheel_file import WheelInputError

    options = ShippingOptions(
        label=args.label,
        library=args.library,
        op_yaml=args.op_yaml,
        tags_yaml=args.tags_yaml,
        version=args.version,
        abi=args.abi,
        output_dir=args.output_dir,
        layout=args.layout,
        distribution=args.distribution,
        kernel_name=args.kernel_name,
        license=args.license,
        cxx11_abi=args.cxx11_abi,
        torch_release=args.torch_release,
        torch_target=args.torch_target,
        cuda=args.cuda,
        summary=args.summary,
        py_src=tuple(args.py_src),
        py_src_label=tuple(args.py_src_label),
        requires=tuple(args.requires),
    )
    label = printable(options.label)
    try:
        if options.layout == "kernel_hub":
            build_kernel_hub(options)
        else:
            build(options)
    except (WheelInputError, HubInputError) as e:
        print(f"rules_aten: {label}: {printable(str(e))}", file=sys.stderr)
        return 1
    except AtengenError as e:
        # One line per problem of the op YAML (`ops.yaml:4: error: ...`), each saying whose.
        for line in e.format_all().splitlines():
            print(f"rules_aten: {label}: {printable(line)}", file=sys.stderr)
        return 1
    return 0
