"""What the pipelines read besides their own YAML: the op and tags YAML, and text files."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from atengen.errors import AtengenError, Location
from atengen.input_files import read_input_bytes
from atengen.model.operator_model import OperatorModel, load_model
from atengen.model.subset import load_model_subset

T = TypeVar("T")


@dataclass(frozen=True)
class YamlInputs:
    op_yaml: str
    tags_yaml: str
    # Freeze the loaded model out of the cyclic GC's reach (model/operator_model.py, gc_paused):
    # for a process that exits after one run, as the command line's does.
    freeze_heap: bool = False

    def load(self) -> OperatorModel:
        return load_model(self.op_yaml, self.tags_yaml, freeze_heap=self.freeze_heap)


def with_model_of_ops(
    inputs: YamlInputs,
    named: Iterable[str],
    absent_words: Iterable[str],
    generate: Callable[[OperatorModel], T],
) -> T:
    """``generate(model)``, with the model of only the op YAML entries ``named`` (model/subset.py:
    the same functions, groups and view groups, for a fraction of the time) where that is exact;
    else, and again after any error, with the whole op YAML, so that errors are those of the
    whole file (an unknown op's did-you-mean draws on every name). ``absent_words`` must not
    occur in the file outside comments for the subset to be used (a backend's own keys)."""
    model = load_model_subset(
        inputs.op_yaml,
        inputs.tags_yaml,
        list(named),
        absent_words=absent_words,
        freeze_heap=inputs.freeze_heap,
    )
    if model is not None:
        try:
            return generate(model)
        except AtengenError:
            pass  # generated again below, from the whole file
    return generate(inputs.load())


def read_text(path: str, what: str, *, lenient: bool = False) -> str:
    """A UTF-8 input file named by a flag; unreadable or binary files are one-line errors.

    ``lenient``: undecodable bytes become U+FFFD instead (C++ sources scanned for names).
    """
    data = read_input_bytes(path, what)
    if lenient:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise AtengenError(Location(path, line), f"{what} is not UTF-8 text") from None
