"""`atengen backend` on bad backend YAML: one line per error, file:line, exit 1, no output.

The facts of each message follow gen_backend_stubs': the bad value, the key,
the allowed keys. The op YAML is the installed torch's, as a backend's would be.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.support.model_helpers import REPO, run_cli

HEAD = "backend: PrivateUse1\ncpp_namespace: my_backend\n"

# name: (backend YAML bytes, expected line, message fragments)
BAD_BACKEND_YAMLS: dict[str, tuple[bytes, int, tuple[str, ...]]] = {
    "missing_backend": (
        b"cpp_namespace: x\nsupported:\n- abs\n",
        1,
        ('You must provide a value for "backend"',),
    ),
    "missing_cpp_namespace": (
        b"backend: XLA\nsupported:\n- abs\n",
        1,
        ('You must provide a value for "cpp_namespace"',),
    ),
    "unknown_dispatch_key": (
        b"backend: NOT_XLA\ncpp_namespace: x\nsupported:\n- abs\n",
        1,
        ("unknown dispatch key NOT_XLA", 'value for "backend" must be a valid DispatchKey'),
    ),
    "alias_key_as_backend": (
        b"backend: CompositeExplicitAutograd\ncpp_namespace: x\nsupported:\n- abs\n",
        1,
        ('"backend" must be a backend dispatch key',),
    ),
    "supported_not_a_list": (
        HEAD.encode() + b"supported: abs\n",
        3,
        ("expected \"supported\" to be a list, but got: abs (of type <class 'str'>)",),
    ),
    "invalid_operator_name": (
        HEAD.encode() + b"supported:\n- abs\n- abs_BAD\n",
        5,
        ("Found an invalid operator name: abs_BAD", "did you mean 'abs_'?"),
    ),
    "malformed_operator_name": (
        HEAD.encode() + b"supported:\n- add.Ten-sor\n",
        4,
        ("Found an invalid operator name: add.Ten-sor",),
    ),
    "unknown_op_suggestion": (
        HEAD.encode() + b"supported:\n- add.Tensr\n",
        4,
        ("Found an invalid operator name: add.Tensr", "did you mean 'add.Tensor'?"),
    ),
    "unexpected_keys": (
        HEAD.encode() + b"supported:\n- abs\ncolour: red\n",
        5,
        (
            "contains unexpected keys: colour.",
            "Only the following keys are supported: backend, class_name, cpp_namespace, "
            "extra_headers, supported, autograd, full_codegen, non_native, ir_gen, symint, "
            "use_out_as_primary, device_guard",
        ),
    ),
    "use_out_as_primary_not_bool": (
        HEAD.encode() + b"use_out_as_primary: frue\nsupported:\n- abs\n",
        3,
        ("You must provide either True or False for use_out_as_primary. Provided: frue",),
    ),
    "device_guard_not_bool": (
        HEAD.encode() + b"device_guard: 1\n",
        3,
        ("You must provide either True or False for device_guard. Provided: 1",),
    ),
    "autograd_key_invalid": (
        b"backend: SparseCPU\ncpp_namespace: x\nautograd:\n- abs\n",
        3,
        ('"AutogradSparseCPU" is not a valid DispatchKey',),
    ),
    "mixed_backend_and_autograd": (
        HEAD.encode() + b"supported:\n- add.Tensor\nautograd:\n- add.out\n",
        6,
        (
            "all variants of an op must either be registered to a backend key, or to a "
            "backend's autograd key",
            'add.Tensor (kernel add, line 4) is listed under "supported", but add.out '
            '(kernel add_out) is listed under "autograd"',
        ),
    ),
    "duplicate_key": (
        HEAD.encode() + b"supported:\n- abs\nsupported:\n- neg\n",
        5,
        ("duplicate key 'supported' (first defined on line 3)",),
    ),
    "not_a_mapping": (b"- abs\n- neg\n", 1, ("a backend YAML must be a mapping", "got a list")),
    "scalar_document": (b"PrivateUse1\n", 1, ("a backend YAML must be a mapping",)),
    "tabs": (HEAD.encode() + b"supported:\n\t- abs\n", 4, ("tab character",)),
    "op_in_supported_and_autograd": (
        HEAD.encode() + b"supported:\n- abs\nautograd:\n- abs\n",
        6,
        ("operator 'abs' is listed twice (first on line 4)", 'only one of "supported", "autograd"'),
    ),
    "non_string_item": (
        HEAD.encode() + b"supported:\n- abs\n- 42\n",
        5,
        ('item 2 of "supported" must be an operator name, got 42 (int)',),
    ),
    "mapping_item": (
        HEAD.encode() + b"supported:\n- abs: x\n",
        4,
        ('item 1 of "supported" must be an operator name, got a mapping',),
    ),
    "binary_garbage": (bytes(range(256)) * 4, 2, ("not UTF-8 text",)),
    "nul_bytes": (HEAD.encode() + b"\x00\x01\n", 3, ("NUL byte",)),
    "empty": (b"", 1, ("empty YAML file",)),
    "full_codegen": (
        HEAD.encode() + b"full_codegen:\n- abs\n",
        3,
        ("'full_codegen' makes this a lazy-tensor backend: generate it with `atengen lazy`",),
    ),
    "ir_gen": (
        HEAD.encode() + b"ir_gen:\n- abs\n",
        3,
        ("'ir_gen' makes this a lazy-tensor backend",),
    ),
    "non_native": (
        HEAD.encode() + b"non_native:\n- func: foo(Tensor self) -> Tensor\n",
        3,
        ("'non_native' makes this a lazy-tensor backend",),
    ),
    "symint_not_listed": (
        HEAD.encode() + b"supported:\n- abs\nsymint:\n- view\n",
        6,
        ('\'view\' is listed under "symint" but not under "supported" or "autograd"',),
    ),
    "bad_cpp_namespace": (
        b"backend: XLA\ncpp_namespace: torch-xla\n",
        2,
        ("cpp_namespace must be a C++ namespace",),
    ),
    "absolute_extra_header": (
        HEAD.encode() + b"extra_headers:\n- /usr/include/x.h\n",
        3,
        ("extra header '/usr/include/x.h' must be a workspace-relative path",),
    ),
    # pasted into an #include line: a newline, quote or bracket there would end it
    "extra_header_with_code_after_a_newline": (
        HEAD.encode() + b'extra_headers:\n- "x.h\\nint y;"\n',
        3,
        ("extra header 'x.h\\nint y;' must be a workspace-relative path",),
    ),
    "extra_header_with_code_after_the_bracket": (
        HEAD.encode() + b"extra_headers:\n- <x.h> int z;\n",
        3,
        ("extra header '<x.h> int z;' must be a workspace-relative path",),
    ),
    "extra_header_unclosed_bracket": (
        HEAD.encode() + b"extra_headers:\n- <x.h\n",
        3,
        ("extra header '<x.h' must be a workspace-relative path",),
    ),
    "extra_header_stray_quote": (
        HEAD.encode() + b"extra_headers:\n- 'x.h\"'\n",
        3,
        ("extra header 'x.h\"' must be a workspace-relative path",),
    ),
    "extra_header_dotdot": (
        HEAD.encode() + b"extra_headers:\n- <a/../x.h>\n",
        3,
        ("extra header '<a/../x.h>' must be a workspace-relative path",),
    ),
}

LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.+)$")


@pytest.mark.parametrize("case", sorted(BAD_BACKEND_YAMLS))
def test_bad_backend_yaml(tmp_path, case):
    data, line, fragments = BAD_BACKEND_YAMLS[case]
    yaml_path = tmp_path / "backend.yaml"
    yaml_path.write_bytes(data)
    out = tmp_path / "out"
    r = run_cli("backend", f"--backend_yaml={yaml_path}", f"--output_dir={out}")
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = LINE_RE.match(lines[0])
    assert m, lines[0]
    assert (m["path"], int(m["line"])) == (str(yaml_path), line), lines[0]
    for fragment in fragments:
        assert fragment in m["msg"], (fragment, m["msg"])
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backend.yaml"]  # no temp dirs left


def test_functional_mode_rejects_mutable_and_view_ops(tmp_path):
    yaml_path = tmp_path / "backend.yaml"
    yaml_path.write_text(HEAD + "supported:\n- add.Tensor\n- add_.Tensor\n- view\n- view_copy\n")
    r = run_cli(
        "backend", f"--backend_yaml={yaml_path}", f"--output_dir={tmp_path}/out",
        "--functional_backend",
    )  # fmt: skip
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2, r.stderr
    assert lines[0].startswith(f"{yaml_path}:5: error: 'add_.Tensor' is an inplace operator")
    assert lines[1].startswith(f"{yaml_path}:6: error: 'view' is a view; list its view_copy")
    assert not (tmp_path / "out").exists()


def test_missing_kernels_are_listed(tmp_path):
    yaml_path = tmp_path / "backend.yaml"
    yaml_path.write_text(HEAD + "supported:\n- abs\n- add.Tensor\n- sum\n- sum.dim_IntList\n")
    impl = tmp_path / "kernels.cpp"
    impl.write_text(
        "namespace my_backend {\n"
        "at::Tensor PrivateUse1NativeFunctions::abs(const at::Tensor& self) {\n"
        "  return my_backend::PrivateUse1NativeFunctions::add(self, self, 1);  // a call\n"
        "}\n"
        "// at::Tensor PrivateUse1NativeFunctions::add(const at::Tensor& self, ...) commented out\n"
        "at::Tensor PrivateUse1NativeFunctions::sum(const at::Tensor& self,\n"
        "    std::optional<at::ScalarType> dtype) { return self; }\n"
        "}\n"
    )
    r = run_cli("backend", f"--backend_yaml={yaml_path}", f"--impl_path={impl}")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2, r.stderr
    assert lines[0].startswith(
        f"{yaml_path}:5: error: PrivateUse1NativeFunctions is missing a kernel definition for "
        f"add. We found 0 kernel(s) with that name in {impl}, but expected 1 kernel(s)."
    ), lines[0]
    assert lines[1].startswith(
        f"{yaml_path}:6: error: PrivateUse1NativeFunctions is missing a kernel definition for "
        "sum. We found 1 kernel(s) with that name"
    ), lines[1]
    assert "expected 2 kernel(s)" in lines[1]
    assert "at::Tensor sum(const at::Tensor & self, at::OptionalIntArrayRef dim" in lines[1]


# --- thousands of errors ------------------------------------------------------------------------
# A backend YAML of unknown ops (one written for another torch, or a generated list gone wrong):
# the first errors, then one line counting the rest, and little time. Measured on 2 cores: 0.5 s
# for 5,000 unknown ops, against about 30 s when every error searched for a did-you-mean (and
# 4 s for 5,000 unknown derivatives entries, each of which scanned every schema). No time is
# asserted: a loaded machine would make it flaky; the line count is.
MANY = 5000
SHOWN = 20


def _unknown_names() -> list[str]:
    # Near misses of real names (`abs` -> `absx0`), so that the shown ones have a suggestion.
    return [f"absx{i}" for i in range(MANY)]


def _check_many(r, yaml_path, first_line: int) -> list[str]:
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == SHOWN + 1, lines[-3:]
    assert lines[-1] == f"error: ... and {MANY - SHOWN} more errors"
    for n, line in enumerate(lines[:-1]):
        m = LINE_RE.match(line)
        assert m and (m["path"], int(m["line"])) == (str(yaml_path), first_line + n), line
    return lines


@pytest.mark.parametrize("section", ["supported", "autograd", "structured"])
def test_thousands_of_unknown_ops_report_the_first_and_a_count(tmp_path, section):
    yaml_path = tmp_path / "backend.yaml"
    yaml_path.write_text(
        HEAD + f"{section}:\n" + "".join(f"- {name}\n" for name in _unknown_names())
    )
    out = tmp_path / "out"
    r = run_cli("backend", f"--backend_yaml={yaml_path}", f"--output_dir={out}")
    lines = _check_many(r, yaml_path, 4)
    assert lines[0] == (
        f"{yaml_path}:4: error: Found an invalid operator name: absx0: no such aten operator "
        "in the op YAML (did you mean 'abs'?)"
    )
    assert not out.exists()


def test_thousands_of_unknown_lazy_ir_gen_ops_report_the_first_and_a_count(tmp_path):
    yaml_path = tmp_path / "lazy.yaml"
    yaml_path.write_text(
        "backend: XLA\ncpp_namespace: torch_xla\nir_gen:\n"
        + "".join(f"- {name}\n" for name in _unknown_names())
    )
    out = tmp_path / "out"
    r = run_cli("lazy", f"--backend_yaml={yaml_path}", f"--output_dir={out}")
    lines = _check_many(r, yaml_path, 4)
    assert lines[0].endswith("(did you mean 'abs'?)")
    assert not out.exists()


@pytest.mark.slow
def test_thousands_of_unknown_derivatives_entries_report_the_first_and_a_count(tmp_path):
    yaml_path = tmp_path / "derivatives.yaml"
    yaml_path.write_text(
        "".join(
            f"- name: {name}(Tensor self) -> Tensor\n  self: grad\n" for name in _unknown_names()
        )
    )
    r = run_cli("autograd", f"--derivatives_yaml={yaml_path}")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == SHOWN + 1
    assert lines[0] == (
        f"{yaml_path}:1: error: unknown op 'absx0(Tensor self) -> Tensor': no such schema in "
        "the op YAML"
    )
    assert lines[SHOWN - 1].startswith(f"{yaml_path}:{2 * SHOWN - 1}: error: unknown op")
    assert lines[-1] == f"error: ... and {MANY - SHOWN} more errors"


def test_twenty_errors_are_all_shown_and_twenty_one_are_counted():
    from atengen.errors import AtengenError, Location

    def combined(n: int) -> str:
        return AtengenError.combine(
            [AtengenError(Location("f.yaml", i), f"e{i}") for i in range(1, n + 1)]
        ).format_all()

    assert combined(20).splitlines()[-1] == "f.yaml:20: error: e20"
    assert combined(21).splitlines()[-2:] == [
        "f.yaml:20: error: e20",
        "error: ... and 1 more error",
    ]
    assert len(combined(22).splitlines()) == 21


def test_per_operator_options_of_torchs_main_branch_are_refused_in_one_line(tmp_path):
    # torch's OpenReg example, byte for byte: `- maximum.out:` then `structured: true`.
    path = os.path.join(REPO, "tests", "data", "backends", "openreg_native_functions.yaml")
    out = tmp_path / "out"
    proc = run_cli("backend", f"--backend_yaml={path}", f"--output_dir={out}")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f'{path}:6: error: per-operator options under "supported"')
    assert "no torch release up to 2.15" in lines[0]
    assert (
        'write `- maximum.out`, and for a structured kernel list `maximum.out` under "structured:"'
        in lines[0]
    )
    assert not out.exists()
