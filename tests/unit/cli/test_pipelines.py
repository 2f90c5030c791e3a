"""The pipelines (atengen.pipelines) are pure: each returns the files to write and writes
nothing; the command line writes exactly what its pipeline returns."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from atengen.cli.common import autograd_helpers
from atengen.lazy.options import LazyOptions
from atengen.pipelines.aten import AtenOptions, aten_outputs
from atengen.pipelines.autograd import AutogradOptions, autograd_outputs
from atengen.pipelines.backend import BackendOptions, backend_outputs
from atengen.pipelines.inputs import YamlInputs
from atengen.pipelines.lazy import LazyPipelineOptions, lazy_outputs
from atengen.pipelines.model_report import check
from atengen.render.shards import ShardSetting
from tests.support.model_helpers import run_cli, tree

DATA = Path(__file__).resolve().parents[2] / "data"
_TORCHGEN = importlib.util.find_spec("torchgen")
NATIVE = Path(_TORCHGEN.submodule_search_locations[0]) / "packaged" / "ATen" / "native"
ATEN = YamlInputs(str(NATIVE / "native_functions.yaml"), str(NATIVE / "tags.yaml"))
AGOPS = YamlInputs(str(DATA / "agops" / "ops.yaml"), str(NATIVE / "tags.yaml"))


def _files(outputs) -> dict[str, str]:
    return {f"{Path(d).name}/{f.path}": f.text for d, files in outputs.trees for f in files}


def _written(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_each_pipeline_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runs = [
        aten_outputs(
            AtenOptions(ATEN, "add,mul", None, ShardSetting(None), True, str(out), None, None)
        ),
        backend_outputs(
            BackendOptions(
                ATEN,
                str(DATA / "backends" / "privateuse1_small.yaml"),
                str(out),
                None,
                "",
                ShardSetting(2),
                False,
                (),
                str(tmp_path / "stamp"),
            )
        ),
        lazy_outputs(
            LazyPipelineOptions(
                ATEN,
                str(DATA / "lazy" / "custom_lazy.yaml"),
                str(out),
                None,
                ShardSetting(0),
                LazyOptions(),
            )
        ),
        autograd_outputs(
            AutogradOptions(
                AGOPS,
                str(DATA / "agops" / "derivatives.yaml"),
                None,
                None,
                str(out),
                None,
                ShardSetting(None),
                autograd_helpers(None, None),
            )
        ),
    ]
    for outputs in runs:
        assert outputs.trees and all(files for _, files in outputs.trees[:1]), outputs
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert "native_functions:" in check(ATEN).report


def test_the_command_line_writes_what_the_pipeline_returns(tmp_path: Path) -> None:
    out = tmp_path / "cpu"
    r = run_cli("generate", "--ops=add,mul", "--shards=auto", f"--output_dir={out}")
    assert r.returncode == 0, r.stderr
    outputs = aten_outputs(
        AtenOptions(ATEN, "add,mul", None, ShardSetting(None), True, str(out), None, None)
    )
    assert _written(tmp_path) == _files(outputs)
    assert len(tree(out)) == len(outputs.trees[0][1]) > 3
