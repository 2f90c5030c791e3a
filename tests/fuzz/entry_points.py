"""The CLI entry points fuzzed with a (YAML text, flags) pair: the strategies that draw an input
and the harness case that runs one. The CI slice (test_fuzz_cli.py) and the long campaign
(campaign.py) both read this table."""

from __future__ import annotations

from tests.fuzz import harness, strategies

YAML_AND_FLAGS = {
    "generate": ((strategies.op_yaml(), strategies.GENERATE_FLAGS), harness.generate_case),
    "backend": ((strategies.backend_yaml(), strategies.BACKEND_FLAGS), harness.backend_case),
    "lazy": ((strategies.lazy_yaml(), strategies.LAZY_FLAGS), harness.lazy_case),
    "autograd": (
        (strategies.derivatives_yaml(), strategies.AUTOGRAD_FLAGS),
        harness.autograd_case,
    ),
}
