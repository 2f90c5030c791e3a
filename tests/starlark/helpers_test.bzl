"""Unit tests of the pure helpers of rules/private: what each returns for good and bad values.

They run at analysis (skylib's unittest): a wrong result is a failed `bazel test`, naming the
call, without building anything or reading a torch or a toolkit.
"""

load("@bazel_skylib//lib:unittest.bzl", "asserts", "unittest")

# These are unit tests of what rules/private keeps from users: they load it.
# buildifier: disable=bzl-visibility
load("//rules/private:common/cuda_archs.bzl", "parse_arch_list", "wheel_gencode_flags")

# buildifier: disable=bzl-visibility
load("//rules/private:common/generator_attrs.bzl", "target_name_error")

# buildifier: disable=bzl-visibility
load("//rules/private:common/releases.bzl", "release_number", "torch_target_version")

# buildifier: disable=bzl-visibility
load("//rules/private:repositories/pip.bzl", "normalize_name")

# buildifier: disable=bzl-visibility
load("//rules/private:rules/wheel.bzl", "wheel_library_error")

def _sm(n):
    return "-gencode=arch=compute_{0},code=sm_{0}".format(n)

def _ptx(n):
    return "-gencode=arch=compute_{0},code=compute_{0}".format(n)

def _parsed(env, value, expected):
    flags, error = parse_arch_list(value, "TORCH_CUDA_ARCH_LIST")
    asserts.equals(env, None, error, "parse_arch_list({})'s error".format(repr(value)))
    asserts.equals(env, sorted(expected), flags, "parse_arch_list({})".format(repr(value)))

def _refused(env, value, entry, hint = ""):
    flags, error = parse_arch_list(value, "TORCH_CUDA_ARCH_LIST")
    asserts.equals(env, None, flags, "parse_arch_list({})'s flags".format(repr(value)))
    start = 'rules_aten: TORCH_CUDA_ARCH_LIST="{}": unknown CUDA architecture "{}"{};'.format(value, entry, hint)
    asserts.true(
        env,
        error != None and error.startswith(start) and "\n" not in error,
        "parse_arch_list({})'s error: {}".format(repr(value), repr(error)),
    )

def _arch_list_test_impl(ctx):
    env = unittest.begin(ctx)
    _parsed(env, "9.0", [_sm("90")])
    _parsed(env, " 8.0;9.0+PTX ", [_sm("80"), _sm("90"), _ptx("90")])
    _parsed(env, "8.0 9.0 9.0", [_sm("80"), _sm("90")])
    _parsed(env, "Hopper", [_sm("90"), _ptx("90")])
    _parsed(env, "Ampere+Tegra;Ampere", [_sm("87"), _sm("80"), _sm("86"), _ptx("86")])
    _parsed(env, "Blackwell", [_sm("100"), _sm("103"), _sm("120"), _sm("121"), _ptx("121")])
    _parsed(env, "9.0a;10.0a+PTX", [_sm("90a"), _sm("100a"), _ptx("100a")])

    # The family codes: machine code for every GPU of the family.
    _parsed(env, "9.0;10.0f", [_sm("90"), _sm("100f")])
    _parsed(env, "12.0f+PTX 11.0f", [_sm("120f"), _ptx("120f"), _sm("110f")])
    _parsed(env, "10.0;10.0f", [_sm("100"), _sm("100f")])

    _refused(env, "10.0x", "10.0x")
    _refused(env, "9.0f", "9.0f")  # nvcc has no family of Hopper
    _refused(env, "9.1", "9.1")
    _refused(env, "sm_90", "sm_90")
    _refused(env, "10.0F", "10.0F")
    _refused(env, "Hopper+PTX", "9.0+PTX+PTX")
    _refused(env, "8.0;;9.0", "", " (an empty entry: two separators in a row)")
    _refused(env, "native", "native", " (`native`, the GPUs of this machine, is not taken: a build need not run where they are)")
    _, error = parse_arch_list("10.0x", "--@rules_aten//:cuda_archs")
    asserts.true(env, error.startswith('rules_aten: --@rules_aten//:cuda_archs="10.0x"'), error)
    asserts.true(env, " 10.0f " in error and "X.Yf" in error, error)
    return unittest.end(env)

arch_list_test = unittest.make(_arch_list_test_impl)

def _wheel_flags_test_impl(ctx):
    env = unittest.begin(ctx)

    # torch 2.14.1+cu130's list: machine code for each, PTX of the newest.
    asserts.equals(
        env,
        [_sm("75"), _sm("90"), _sm("120"), _ptx("120")],
        wheel_gencode_flags(["sm_75", "sm_90", "sm_120"]),
    )
    asserts.equals(env, [_sm("90"), _ptx("90")], wheel_gencode_flags(["sm_90", "compute_90"]))
    asserts.equals(env, [], wheel_gencode_flags([]))

    # A wheel built for family or architecture codes: the PTX that newer GPUs run is the plain one.
    asserts.equals(
        env,
        [_sm("90a"), _sm("100f"), _sm("120f"), _ptx("120")],
        wheel_gencode_flags(["sm_90a", "sm_100f", "sm_120f"]),
    )
    return unittest.end(env)

wheel_flags_test = unittest.make(_wheel_flags_test_impl)

def _releases_test_impl(ctx):
    env = unittest.begin(ctx)
    asserts.equals(env, (2, 14), release_number("2.14"))
    asserts.equals(env, (2, 0), release_number("2.0"))
    asserts.equals(env, (10, 1), release_number("10.1"))
    for bad in ["2", "2.14.1", "2.014", "02.14", "2.", ".14", "2.x", "-2.14", "+2.14", "2 .14", "", "unknown"]:
        asserts.equals(env, None, release_number(bad), "release_number({})".format(repr(bad)))
    asserts.true(env, release_number("2.9") < release_number("2.10"))

    asserts.equals(env, ("0x020B000000000000", None), torch_target_version("2.11", "2.13", "2.13.0"))
    asserts.equals(env, ("0x020D000000000000", None), torch_target_version("2.13", "2.13", "2.13.0"))
    asserts.equals(env, ("0x0A00000000000000", None), torch_target_version("10.0", "unknown", "?"))
    allowed = "a torch release from 2.11 to 2.13 (the build's torch 2.13.0+cpu), as major.minor"
    for bad in ["2.10", "abc", "2.11.0", "2.011", 211, None]:
        asserts.equals(
            env,
            (None, "rules_aten: torch_target = {} is not {}".format(repr(bad), allowed)),
            torch_target_version(bad, "2.13", "2.13.0+cpu"),
        )
    value, error = torch_target_version("2.14", "2.13", "2.13.0+cpu")
    asserts.equals(env, None, value)
    asserts.true(
        env,
        error.startswith("rules_aten: torch_target = \"2.14\" is newer than the build's torch 2.13.0+cpu") and
        error.endswith(allowed),
        error,
    )
    return unittest.end(env)

releases_test = unittest.make(_releases_test_impl)

def _normalize_name_test_impl(ctx):
    env = unittest.begin(ctx)
    for name, expected in [
        ("PyYAML", "pyyaml"),
        ("typing-extensions", "typing_extensions"),
        ("typing_extensions", "typing_extensions"),
        ("zope.interface", "zope_interface"),
        ("Jinja2", "jinja2"),
        ("a-_.-b", "a_b"),
        ("a--b..c", "a_b_c"),
    ]:
        asserts.equals(env, expected, normalize_name(name), "normalize_name({})".format(repr(name)))
    return unittest.end(env)

normalize_name_test = unittest.make(_normalize_name_test_impl)

def _target_name_test_impl(ctx):
    env = unittest.begin(ctx)
    for good in ["myops", "my_ops2", "_x", "my-ops", "v1.2"]:
        asserts.equals(env, None, target_name_error("aten_codegen", good), "target_name_error({})".format(repr(good)))
    for bad in ["my ops", "myöps", "a/b", "", "-x", ".x", "a:b"]:
        error = target_name_error("aten_codegen", bad)
        asserts.true(
            env,
            error != None and error.startswith("rules_aten: aten_codegen(name = ") and
            "may hold only ASCII letters, digits" in error and "\n" not in error,
            "target_name_error({}): {}".format(repr(bad), repr(error)),
        )
    return unittest.end(env)

target_name_test = unittest.make(_target_name_test_impl)

def _wheel_library_test_impl(ctx):
    env = unittest.begin(ctx)
    asserts.equals(
        env,
        "rules_aten: //:w: library = //:myops is not a lib<name>.so: give library = \"//:libmyops.so\", the shared library of aten_codegen(name = \"myops\")",
        wheel_library_error("//:w", "//:myops", "myops"),
        "wheel_library_error of aten_codegen's own name",
    )
    asserts.equals(
        env,
        "rules_aten: //p:w: library = @r//a/b:ops is not a lib<name>.so: give library = \"@r//a/b:libops.so\", the shared library of aten_codegen(name = \"ops\")",
        wheel_library_error("//p:w", "@r//a/b:ops", "ops"),
        "wheel_library_error in another repository",
    )
    asserts.equals(
        env,
        "rules_aten: //:w: library = //:libother.so is not the lib<name>.so of an aten_codegen: give aten_codegen's lib<name>.so",
        wheel_library_error("//:w", "//:libother.so", "libother.so"),
        "wheel_library_error of another shared library",
    )
    return unittest.end(env)

wheel_library_test = unittest.make(_wheel_library_test_impl)

def helpers_test_suite(name):
    unittest.suite(
        name,
        arch_list_test,
        wheel_flags_test,
        releases_test,
        normalize_name_test,
        target_name_test,
        wheel_library_test,
    )
