"""The atengen package keeps its layers: each folder imports only the ones below it, and no
module reaches into another module's private (underscore) names.

    yaml  <  model  <  render  <  api  <  aten, backend, autograd, stable, shipping  <  lazy, pymodule
          <  pipelines  <  cli

- ``render``: templates, sharding, parallel rendering and all-or-nothing output, C++-agnostic;
- ``api``: how an operator is spelled in C++ (types, declarations, calls, wrappers);
- ``aten``, ``backend``, ``autograd``, ``stable``, ``lazy``: one product's emitters each (lazy
  builds on backend: a lazy backend is an external backend with generated kernels; ``pymodule``,
  the Python module of a stable-ABI library, on autograd: it translates the derivatives YAML the
  autograd loader reads); ``shipping``:
  aten_wheel's stubs and wheel (tool/aten_wheel.py drives it);
- ``pipelines``: one pure function per product, from an options object to the files to write;
- ``cli``: flags into options, one pipeline, the write.

`errors`, `cached`, `input_files`, `torch_facts`, `wheel_facts` and `wheel_symbols` are shared by
every layer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.import_graph import import_edges

TOOL = Path(__file__).resolve().parent.parent / "tool"
SHARED = {
    "atengen",
    "atengen.errors",
    "atengen.cached",
    "atengen.torch_facts",
    "atengen.wheel_facts",
    "atengen.input_files",
    "atengen.wheel_symbols",
}
# What each layer may import besides SHARED and itself.
_BASE = {"yaml", "model", "render", "api"}
ALLOWED = {
    "yaml": set(),
    "model": {"yaml"},
    "render": {"yaml", "model"},
    "api": {"yaml", "model", "render"},
    "aten": _BASE,
    "backend": _BASE,
    "autograd": _BASE,
    "stable": _BASE,
    "shipping": _BASE,
    "lazy": _BASE | {"backend"},
    "pymodule": _BASE | {"autograd"},
    "pipelines": _BASE | {"aten", "backend", "autograd", "stable", "shipping", "lazy", "pymodule"},
    "cli": {"pipelines", "render"},
}
# Options dataclasses of a product that the command line fills from flags, besides ALLOWED.
CLI_OPTIONS_MODULES = {"atengen.lazy.options", "atengen.stable.releases"}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None


def test_layers_import_only_layers_below():
    edges = import_edges(TOOL)
    assert edges, "no atengen modules found"
    wrong = []
    for module, targets in edges.items():
        layer = _layer(module)
        for target in targets:
            if target in SHARED or target == module:
                continue
            target_layer = _layer(target)
            if layer is None:
                # a shared module imports nothing else of ours; __main__ runs the CLI
                if not (module == "atengen.__main__" and target_layer == "cli"):
                    wrong.append(f"{module} -> {target}")
            elif layer == "cli" and target in CLI_OPTIONS_MODULES:
                continue
            elif target_layer != layer and target_layer not in ALLOWED.get(layer, set()):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_no_module_imports_private_names_of_another():
    wrong = [
        f"{module} -> {target}.{name}"
        for module, targets in import_edges(TOOL).items()
        for target, names in targets.items()
        for name in names
        if name.startswith("_") and target != module
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_command_module_imports_another():
    # Commands are joined in pipelines/, never in cli/: each cli module is one command's flags.
    wrong = [
        f"{module} -> {target}"
        for module, targets in import_edges(TOOL).items()
        if module.startswith("atengen.cli.") and module.endswith("_command")
        for target in targets
        if target.startswith("atengen.cli.") and target.endswith("_command") and target != module
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_the_cli_imports_a_generator_only_when_its_command_runs():
    # Every Bazel codegen action starts the CLI; the emitters, their templates (Jinja2) and the
    # other commands' generators would add about a quarter of a second to each.
    code = (
        "import sys, atengen.cli.main\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jinja2', 'atengen.api',"
        " 'atengen.aten', 'atengen.render.templates', 'atengen.pipelines', 'atengen.backend',"
        " 'atengen.stable', 'atengen.pymodule',"
        " 'atengen.lazy.emit', 'atengen.lazy.model', 'atengen.autograd'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(TOOL)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[]", result.stdout
