"""Every generator product on real and in-repo inputs, written to one directory: the check that a
refactoring changed no output byte.

    PYTHONPATH=tool .venv/bin/python conformance/output_snapshot.py OUT_DIR
    diff -r BEFORE_DIR AFTER_DIR

It runs the CLI in-process (``atengen.cli.main.main``), one case per subdirectory of OUT_DIR:
- ``generate`` on torch's whole op YAML (``--shards=auto`` and ``--shards=0``, CUDA keys too) and
  on the custom-namespace YAMLs under tests/data;
- ``backend`` on the backend YAMLs under tests/data/backends and examples/privateuse1_backend
  (with its derivatives YAML, and its functional variant);
- ``lazy`` (and ``backend --allow_lazy``) on the real torch_xla and TorchScript YAMLs;
- ``autograd`` on the wheel's derivatives.yaml for aten, and on the in-repo derivatives YAMLs.

Each case also records its exit code and stderr in ``<case>.log``. Only the CLI's flags are used,
so the script runs unchanged across refactorings of the package.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
PU1 = REPO / "examples" / "privateuse1_backend"
# aten ops whose whole derivatives entries the generator takes (functional, in-place, out=).
ATEN_AUTOGRAD_OPS = (
    "bmm,ceil,cos,cosh,erf,exp,expm1,floor,hypot,lerp,log,log_softmax,maximum,neg,reciprocal,"
    "relu,rsqrt,sigmoid,sin,sinh,softmax,sqrt,tanh,trunc,where"
).split(",")


def _torch_yaml_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torchgen")
    assert spec is not None and spec.submodule_search_locations, "torch is not installed"
    return Path(spec.submodule_search_locations[0]) / "packaged" / "ATen" / "native"


def cases() -> dict[str, list[str]]:
    """case name -> the atengen arguments; `{out}` stands for the case's output directory."""
    aten = _torch_yaml_dir()
    lazy = DATA / "lazy"
    custom = ["custom_ops", "fzops", "structured_ops", "agops"]
    result = {
        "generate_all_auto": [
            "generate",
            "--shards=auto",
            "--output_dir={out}/cpu",
            "--cuda_output_dir={out}/cuda",
        ],
        "generate_all_0": ["generate", "--shards=0", "--output_dir={out}/cpu"],
    }
    for name in custom:
        result[f"generate_{name}"] = [
            "generate",
            "--shards=0",  # explicit: the default changed once, the cases must not
            *(["--nofunctionalize"] if name == "agops" else []),
            f"--op_yaml={DATA / name / 'ops.yaml'}",
            "--output_dir={out}/cpu",
            "--cuda_output_dir={out}/cuda",
            "--header_output_dir={out}/include",
        ]
    for path in sorted((DATA / "backends").glob("*.yaml")):
        result[f"backend_{path.stem}"] = [
            "backend",
            f"--backend_yaml={path}",
            "--allow_lazy",
            "--output_dir={out}",
            "--shards=3",
        ]
    result["backend_pu1"] = [
        "backend",
        f"--backend_yaml={PU1 / 'backend.yaml'}",
        f"--derivatives_yaml={PU1 / 'derivatives.yaml'}",
        "--output_dir={out}/src",
        "--header_output_dir={out}/include",
        "--include_prefix=pu1",
    ]
    result["backend_pu1_functional"] = [
        "backend",
        f"--backend_yaml={PU1 / 'backend_functional.yaml'}",
        "--functional_backend",
        "--output_dir={out}",
    ]
    for name, node_base in (
        ("xla_native_functions", "XlaNode"),
        ("ts_native_functions_2_13", "TsNode"),
        ("custom_lazy", "TsNode"),
    ):
        result[f"lazy_{name}"] = [
            "lazy",
            f"--backend_yaml={lazy / (name + '.yaml')}",
            f"--node_base={node_base}",
            "--output_dir={out}",
        ]
    result["lazy_ts_shards2_via_backend"] = [
        "backend",
        f"--backend_yaml={lazy / 'ts_native_functions_2_13.yaml'}",
        "--allow_lazy",
        "--shards=2",
        "--output_dir={out}/src",
        "--header_output_dir={out}/include",
    ]
    result["lazy_example"] = [
        "lazy",
        f"--backend_yaml={REPO / 'examples' / 'lazy_backend' / 'ts_lazy.yaml'}",
        "--output_dir={out}",
    ]
    result["autograd_aten"] = [
        "autograd",
        f"--derivatives_yaml={aten.parent.parent / 'autograd' / 'derivatives.yaml'}",
        "--namespace=aten",
        "--shards=0",
        "--ops=" + ",".join(ATEN_AUTOGRAD_OPS),
        "--output_dir={out}",
    ]
    result["autograd_aten_check"] = [
        "autograd",
        f"--derivatives_yaml={aten.parent.parent / 'autograd' / 'derivatives.yaml'}",
    ]
    for name in ("agops", "custom_ops"):
        result[f"autograd_{name}"] = [
            "autograd",
            f"--op_yaml={DATA / name / 'ops.yaml'}",
            f"--derivatives_yaml={DATA / name / 'derivatives.yaml'}",
            "--shards=0",
            "--output_dir={out}",
        ]
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from atengen.cli.main import main as atengen

    root = Path(argv[1])
    root.mkdir(parents=True, exist_ok=True)
    for name, args in cases().items():
        out = root / name
        out.mkdir(exist_ok=True)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = atengen(["atengen", *(a.replace("{out}", str(out)) for a in args)])
        log = f"rc={rc}\n--- stdout\n{stdout.getvalue()}--- stderr\n{stderr.getvalue()}"
        (root / f"{name}.log").write_text(
            log.replace(str(out), "<out>").replace(str(REPO), "<repo>")
        )
        files = sum(len(fs) for _, _, fs in os.walk(out))
        print(f"{name}: rc={rc}, {files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
