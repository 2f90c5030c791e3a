"""PyYAML's own reading of a document, as a comparable tree: the YAML tests' oracle.

``reference_tree(text)`` composes the document with PyYAML (its C loader, as atengen uses;
no atengen code) and turns the node graph into nested tuples of values and line
numbers; ``loaded_tree(value)`` does the same for what atengen's loader returned.
Two loaders agree on a document when the trees are equal: same values and types,
same line for every mapping, list, key and list item.
"""

from __future__ import annotations

import yaml

_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def reference_tree(text: str):
    """The tree of PyYAML's reading of ``text``; raises yaml.YAMLError if it cannot read it."""
    node = yaml.compose(text, Loader=yaml.CSafeLoader)
    return None if node is None else _node_tree(node)


def _node_tree(node: yaml.Node):
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        return (
            "map",
            line,
            tuple((_key(k), k.start_mark.line + 1, _node_tree(v)) for k, v in node.value),
        )
    if isinstance(node, yaml.SequenceNode):
        return (
            "seq",
            line,
            tuple((item.start_mark.line + 1, _node_tree(item)) for item in node.value),
        )
    value = _CONSTRUCTOR.construct_object(node)
    return ("scalar", type(value).__name__, value)


def _key(node: yaml.Node):
    # What SafeConstructor.flatten_mapping does before constructing a mapping: YAML 1.1's
    # value key `=` becomes the string "=" (yaml.safe_load("=: x") == {"=": "x"}).
    if node.tag == "tag:yaml.org,2002:value":
        return node.value
    return _CONSTRUCTOR.construct_object(node)


def loaded_tree(value):
    """The same tree for a value atengen's loader returned (YamlMap, YamlList, scalars)."""
    if isinstance(value, dict):
        return (
            "map",
            value.line,
            tuple((k, value.key_lines[k], loaded_tree(v)) for k, v in value.items()),
        )
    if isinstance(value, list):
        return (
            "seq",
            value.line,
            tuple((value.item_lines[i], loaded_tree(v)) for i, v in enumerate(value)),
        )
    return ("scalar", type(value).__name__, value)
