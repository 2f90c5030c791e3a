"""Records of what an op returned, and their comparison: the half of the GPU run kit's
run_gpu.py that needs no OpInfo, bundled beside it (devtools/gpu_bundle/make_gpu_bundle.py).

A record is a tuple tree: ("tensor", meta, values), ("seq", parts), ("value", repr), ("none",),
("error", type, first line), ("grad", output record, gradient records); its leaves are the
tensors' values and the plain values. Standalone: Python and torch only."""

from __future__ import annotations


def record(value, with_values: bool = True):
    import torch

    if isinstance(value, torch.Tensor):
        meta = (str(value.dtype), tuple(value.shape), str(value.layout))
        if value.layout == torch.strided:
            meta += (tuple(value.stride()),)
        if not with_values:
            return ("tensor", meta, None)
        t = value.detach()
        if t.is_quantized:
            t = t.int_repr()
        elif t.layout != torch.strided:
            t = t.to_dense()
        return ("tensor", meta, t.resolve_conj().resolve_neg().cpu().clone())
    if isinstance(value, list | tuple):
        return ("seq", tuple(record(v, with_values) for v in value))
    if isinstance(value, torch.dtype | torch.device | torch.Size | bool | int | float | str):
        return ("value", repr(value))
    if value is None:
        return ("none",)
    return ("other", type(value).__name__)


def error_of(e: BaseException) -> tuple:
    text = str(e).strip()
    return ("error", type(e).__name__, text.splitlines()[0][:300] if text else "")


def leaf_paths(rec, path: tuple = ()) -> dict[tuple, object]:
    """{path: leaf} of a record: tensors' values, and plain values."""
    import torch

    if isinstance(rec, torch.Tensor):
        return {path: rec}
    if isinstance(rec, tuple):
        found: dict[tuple, object] = {}
        for i, part in enumerate(rec):
            found.update(leaf_paths(part, (*path, i)))
        return found
    return {path: rec}


def differing_leaves(first, second) -> list[tuple]:
    """The paths of the leaves two records of one call have, and disagree on."""
    a, b = leaf_paths(first), leaf_paths(second)
    return [p for p in a if p in b and same(a[p], b[p]) not in (None, "close")]


def blank(rec, paths: list[tuple], path: tuple = ()):
    """The record with the leaves at `paths` replaced by one marker."""
    if path in paths:
        return ("unwritten",)
    if isinstance(rec, tuple):
        return tuple(blank(part, paths, (*path, i)) for i, part in enumerate(rec))
    return rec


def same(ref, got) -> str | None:
    """None when equal bit for bit, "close" when within assert_close's tolerances, else why
    not."""
    import torch

    if isinstance(ref, torch.Tensor) or isinstance(got, torch.Tensor):
        if not (isinstance(ref, torch.Tensor) and isinstance(got, torch.Tensor)):
            return "a tensor against something else"
        a, b = ref.reshape(-1).contiguous(), got.reshape(-1).contiguous()
        if a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8)):
            return None
        try:
            torch.testing.assert_close(got, ref, equal_nan=True)
        except AssertionError as e:
            return str(e).strip().splitlines()[0][:200]
        return "close"
    if isinstance(ref, tuple) and isinstance(got, tuple) and len(ref) == len(got):
        verdicts = [same(r, g) for r, g in zip(ref, got, strict=True)]
        wrong = [v for v in verdicts if v not in (None, "close")]
        return wrong[0] if wrong else ("close" if "close" in verdicts else None)
    return None if ref == got else f"{str(ref)[:150]} against {str(got)[:150]}"


def compare(reference: dict, ours: dict, unwritten: dict[str, list] | None = None) -> dict:
    """Counts of equal, close and mismatching records; `unwritten` ({key: leaf paths}, from
    unwritten_leaves) names the leaves torch leaves unwritten, compared as equal (counted apart,
    with their keys)."""
    ref, got = reference["records"], ours["records"]
    unwritten = unwritten or {}
    bitwise = close = 0
    mismatches = []
    for key in sorted(set(ref) | set(got)):
        r, g = ref.get(key, ("missing",)), got.get(key, ("missing",))
        if key in unwritten:
            r, g = blank(r, unwritten[key]), blank(g, unwritten[key])
        verdict = same(r, g)
        if verdict is None:
            bitwise += 1
        elif verdict == "close":
            close += 1
        else:
            mismatches.append(f"{key}: {verdict}")
    kinds: dict[str, int] = {}
    for key in ref:
        kind = key.rsplit("|", 1)[1]
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "records": len(ref),
        "by_kind": dict(sorted(kinds.items())),
        "bitwise_equal": bitwise,
        "close": close,
        "mismatches": len(mismatches),
        "mismatch_list": mismatches,
        "unwritten_by_torch": {k: [list(p) for p in v] for k, v in sorted(unwritten.items())},
    }
