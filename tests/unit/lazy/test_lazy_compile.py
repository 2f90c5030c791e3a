"""Generated lazy IR headers compile against the torch wheel (syntax and types only).

- torch_xla's YAML, with a node base of ours (tests/data/lazy/test_node.h) in place of
  torch_xla's XlaNode and no TorchScript lowerings: every shard's nodes.
- The TorchScript YAML with the defaults (torch::lazy::TsNode): every node header, the
  non-native nodes, and one generated kernel shard.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torchgen

from atengen.backend.spec import load_backend_yaml
from atengen.lazy.emit import lazy_files
from atengen.lazy.model import resolve_lazy_backend
from atengen.lazy.options import LazyOptions
from atengen.model.operator_model import load_model
from atengen.render.output import write_trees
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates
from tests.support.compile_helpers import CXXFLAGS

pytestmark = pytest.mark.slow  # g++ over torch's headers

DATA = Path(__file__).resolve().parents[2] / "data" / "lazy"
NATIVE = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
FLAGS = [*CXXFLAGS, "-fsyntax-only"]


@pytest.fixture(scope="module")
def model():
    return load_model(str(NATIVE / "native_functions.yaml"), str(NATIVE / "tags.yaml"))


def _generate(model, yaml_name: str, out: Path, opts: LazyOptions, shards: int) -> None:
    spec = load_backend_yaml(str(DATA / yaml_name), lazy=True)
    write_trees(
        [
            (
                str(out),
                lazy_files(
                    resolve_lazy_backend(spec, model), opts, ShardSetting(shards), Templates()
                ),
            )
        ]
    )


def _compile(source: Path, *include_dirs: Path) -> None:
    cmd = ["g++", *FLAGS, *(f"-I{d}" for d in include_dirs), str(source)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-4000:]


def test_xla_shaped_ir_headers_compile(model, tmp_path):
    out = tmp_path / "xla"
    opts = LazyOptions(
        node_base="test_lazy::TestNode", node_base_hdr="test_node.h", ts_lowerings=False
    )
    _generate(model, "xla_native_functions.yaml", out, opts, shards=8)
    main = tmp_path / "all.cpp"
    main.write_text('#include "LazyIr.h"\n')
    assert len(list(out.glob("LazyIr_b*.h"))) == 8
    _compile(main, out, DATA)


def test_torchscript_ir_and_kernel_compile(model, tmp_path):
    out = tmp_path / "ts"
    _generate(model, "ts_native_functions_2_13.yaml", out, LazyOptions(), shards=0)
    main = tmp_path / "ir.cpp"
    main.write_text('#include "LazyIr.h"\n#include "LazyNonNativeIr.h"\n')
    _compile(main, out)
    _compile(out / "LazyNativeFunctions_add.cpp", out)
