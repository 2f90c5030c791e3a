"""Reference records of a derivatives YAML computed with the installed upstream torchgen.

``torchgen_derivative_records`` loads the YAML with torchgen's own
``load_derivatives`` and matches every NativeFunction with
``match_differentiability_info``, and returns both as plain JSON-like records
that the atengen autograd model must reproduce field by field.

Importing this module fails when torchgen is missing: the test using it must fail
then, not skip.
"""

from __future__ import annotations

from pathlib import Path

from torchgen.api.autograd import match_differentiability_info
from torchgen.api.types import SpecialArgName
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.load_derivatives import load_derivatives


def packaged_derivatives_yaml() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged" / "autograd" / "derivatives.yaml"


def _name(nctype) -> str:
    n = nctype.name
    return n.name if isinstance(n, SpecialArgName) else n


def torchgen_saved(attrs) -> list[list[str]]:
    """[name, C++ type, expression] of each SavedAttribute."""
    return [[_name(a.nctype), a.nctype.type.cpp_type(), a.expr] for a in attrs]


def _sorted_or_none(names) -> list[str] | None:
    return None if names is None else sorted(names)


def forward_record(fd) -> dict:
    return {
        "formula": fd.formula,
        "var_names": list(fd.var_names),
        "var_types": [str(t) for t in fd.var_types],
        "required_inputs_fw_grad": _sorted_or_none(fd.required_inputs_fw_grad),
        "required_inputs_primal": _sorted_or_none(fd.required_inputs_primal),
        "required_original_self_value": fd.required_original_self_value,
        "is_reusing_outplace_formula": fd.is_reusing_outplace_formula,
    }


def info_record(info, saved=torchgen_saved) -> dict:
    """The compared fields of a DifferentiabilityInfo (torchgen's, or any object with
    the same attribute names given a `saved` that lists its saved attributes)."""
    # The `{view}_copy` infos torchgen derives are named `<view>_copy.` (a trailing
    # dot from splitting a name that has no overload); the name is the part before it.
    return {
        "name": info.name.rstrip("."),
        "func": str(info.func.func),
        "op": info.op,
        "derivatives": [
            {
                "formula": d.formula,
                "original_formula": d.original_formula,
                "var_names": list(d.var_names),
                "saved_inputs": saved(d.saved_inputs),
                "saved_outputs": saved(d.saved_outputs),
                "named_gradients": sorted(d.named_gradients),
            }
            for d in info.derivatives
        ],
        "forward_derivatives": [forward_record(fd) for fd in info.forward_derivatives],
        "all_saved_inputs": sorted(saved(info.all_saved_inputs)),
        "all_saved_outputs": sorted(saved(info.all_saved_outputs)),
        "args_with_derivatives": [a.name for a in info.args_with_derivatives],
        "non_differentiable_arg_names": list(info.non_differentiable_arg_names),
        "output_differentiability": (
            None if info.output_differentiability is None else list(info.output_differentiability)
        ),
        "output_differentiability_conditions": (
            None
            if info.output_differentiability_conditions is None
            else list(info.output_differentiability_conditions)
        ),
        "available_named_gradients": list(info.available_named_gradients),
        "used_named_gradients": sorted(info.used_named_gradients),
    }


def torchgen_derivative_records(
    derivatives_yaml: str | Path, op_yaml: str | Path, tags_yaml: str | Path
) -> tuple[dict[str, dict], dict[str, dict]]:
    """(entries, functions).

    entries: ``"<schema>|<dispatch key>"`` -> info record, for every entry of the
    YAML (and every derived `{view}_copy` entry), keyed by the schema of the
    function the formulas are written against.
    functions: schema -> ``{"infos": {key: info record},
    "forward": {key: [forward records]}}`` for every NativeFunction that has info.
    """
    infos, _ = load_derivatives(str(derivatives_yaml), str(op_yaml), str(tags_yaml))
    entries = {
        f"{schema}|{key}": info_record(info)
        for schema, per_key in infos.items()
        for key, info in per_key.items()
    }
    native = parse_native_yaml(str(op_yaml), str(tags_yaml)).native_functions
    functions = {}
    # match_differentiability_info adds derived _foreach_ infos to the dict it is given.
    for fn in match_differentiability_info(list(native), dict(infos)):
        if not fn.info:
            continue
        functions[str(fn.func.func)] = {
            "infos": {key: info_record(info) for key, info in fn.info.items()},
            "forward": {
                key: [forward_record(fd) for fd in fds]
                for key, fds in (fn.fw_derivatives or {}).items()
            },
        }
    return entries, functions
