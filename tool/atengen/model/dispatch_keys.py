"""Questions about dispatch key names: is a key known, may an op YAML name it, which kernel serves it."""

from __future__ import annotations

from collections.abc import Mapping

from atengen import torch_facts as tf
from atengen.errors import did_you_mean

_OP_YAML_KEY_SET = frozenset(tf.OP_YAML_DISPATCH_KEYS)
_KNOWN_KEYS = _OP_YAML_KEY_SET | tf.OTHER_C10_KEYS


def is_known_dispatch_key(name: str) -> bool:
    return name in _KNOWN_KEYS


def is_op_yaml_dispatch_key(name: str) -> bool:
    return name in _OP_YAML_KEY_SET


def closest_key(name: str) -> str:
    """' (did you mean X?)' or '' — for error messages."""
    return did_you_mean(name, _KNOWN_KEYS)


def is_autograd_key(key: str) -> bool:
    return key.startswith("Autograd")


def composite_covers(alias: str, runtime_key: str) -> bool:
    """Whether a kernel registered under a composite alias key serves runtime_key."""
    if alias == "CompositeImplicitAutograd":
        # A math kernel serves every backend and, via autograd, the autograd keys.
        return True
    if is_autograd_key(runtime_key):
        return False  # explicit composites come with their own derivative formula
    if alias == "CompositeExplicitAutograd":
        return True
    if alias == "CompositeExplicitAutogradNonFunctional":
        # Sparse kernels cannot run a dense decomposition into views and mutations.
        return (
            runtime_key not in tf.NON_FUNCTIONAL_COMPOSITE_EXCLUDED
            and not runtime_key.startswith("Sparse")
        )
    raise AssertionError(f"{alias} is not a composite key")


def serving_key(dispatch: Mapping[str, object], runtime_key: str) -> str | None:
    """The key of the `dispatch` entry that serves runtime_key (its own, else a composite), or None."""
    if runtime_key in dispatch:
        return runtime_key
    for alias in tf.COMPOSITE_PRECEDENCE:
        if alias in dispatch and composite_covers(alias, runtime_key):
            return alias
    return None
