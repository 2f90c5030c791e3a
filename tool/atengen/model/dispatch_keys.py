"""Questions about dispatch key names: is a key known, may an op YAML name it, which kernel serves it."""

from __future__ import annotations

from atengen.errors import did_you_mean
from atengen.facts import torch_facts as tf

_OP_YAML_KEY_SET = frozenset(tf.OP_YAML_DISPATCH_KEYS)
_KNOWN_KEYS = _OP_YAML_KEY_SET | tf.OTHER_C10_KEYS


def is_known_dispatch_key(name: str) -> bool:
    return name in _KNOWN_KEYS


def is_op_yaml_dispatch_key(name: str) -> bool:
    return name in _OP_YAML_KEY_SET


def are_op_yaml_dispatch_keys(names: tuple[str, ...]) -> bool:
    return _OP_YAML_KEY_SET.issuperset(names)


def closest_key(name: str) -> str:
    """' (did you mean X?)' or '' — for error messages."""
    return did_you_mean(name, _KNOWN_KEYS)


def is_autograd_key(key: str) -> bool:
    return key.startswith("Autograd")
