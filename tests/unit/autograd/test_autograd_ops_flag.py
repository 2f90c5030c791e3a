"""`atengen autograd --ops` selects as `generate --ops` does: `all` (the default) is every
operator, an unknown name is one error line naming the closest known one (exit 1, nothing
written), a root selects every variant and overload, `<namespace>::` limits a name to one
namespace."""

from __future__ import annotations

from tests.support.model_helpers import autograd_into, tree

# A custom namespace with an operator named `all`, as aten has one.
OPS = """\
- func: sel::all(Tensor self) -> Tensor
- func: sel::scale(Tensor self, float factor) -> Tensor
- func: sel::scale_(Tensor(a!) self, float factor) -> Tensor(a!)
- func: sel::cube(Tensor self) -> Tensor
"""
DERIVATIVES = """\
- name: sel::all(Tensor self) -> Tensor
  self: grad
- name: sel::scale(Tensor self, float factor) -> Tensor
  self: grad * factor
- name: sel::cube(Tensor self) -> Tensor
  self: 3 * grad * self * self
"""


def _run(tmp_path, *flags: str):
    # --shards=0: one file per operator, so the names say which were generated
    proc, out = autograd_into(tmp_path, OPS, DERIVATIVES, "--shards=0", *flags)
    return proc, sorted(tree(out)) if out.exists() else None


def test_all_selects_every_operator_as_the_default_does(tmp_path):
    proc, files = _run(tmp_path, "--ops=all")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert files == ["Autograd_all.cpp", "Autograd_cube.cpp", "Autograd_scale.cpp"]
    default, default_files = _run(tmp_path / "default")
    assert default.returncode == 0 and default_files == files


def test_a_root_selects_its_variants_and_a_name_one_function(tmp_path):
    proc, files = _run(tmp_path, "--ops=scale,cube")
    assert proc.returncode == 0 and files == ["Autograd_cube.cpp", "Autograd_scale.cpp"]
    text = (tmp_path / "out" / "Autograd_scale.cpp").read_text()
    assert 'm.impl("scale",' in text and 'm.impl("scale_",' in text
    proc, files = _run(tmp_path / "one", "--ops=sel::scale_")
    assert proc.returncode == 0 and files == ["Autograd_scale.cpp"]
    text = (tmp_path / "one" / "out" / "Autograd_scale.cpp").read_text()
    assert 'm.impl("scale_",' in text and 'm.impl("scale",' not in text


def test_the_op_named_all_is_selected_with_its_namespace(tmp_path):
    proc, files = _run(tmp_path, "--ops=sel::all")
    assert proc.returncode == 0 and files == ["Autograd_all.cpp"]


def test_an_unknown_name_is_an_error_naming_the_closest(tmp_path):
    proc, files = _run(tmp_path, "--ops=scale,cubee")
    assert proc.returncode == 1 and files is None
    assert proc.stderr == (
        "error: unknown operator 'cubee' in the op selection (did you mean 'cube'?)\n"
    )
    proc, files = _run(tmp_path, "--ops=sel::scalee_")
    assert proc.returncode == 1 and files is None
    assert proc.stderr == (
        "error: unknown operator 'sel::scalee_' in the op selection (did you mean 'sel::scale_'?)\n"
    )


def test_an_empty_selection_and_another_namespace_are_errors(tmp_path):
    proc, files = _run(tmp_path, "--ops=,")
    assert (proc.returncode, proc.stderr, files) == (1, "error: the op selection is empty\n", None)
    proc, files = _run(tmp_path, "--ops=aten::add")
    assert proc.returncode == 1 and files is None
    assert proc.stderr == (
        "error: operator 'aten::add' in the op selection is not in the namespaces autograd "
        "generates for (sel)\n"
    )
