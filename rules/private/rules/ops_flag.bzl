"""aten_ops_flag: a build setting that overrides the op selection of aten_codegen targets."""

load("//rules/private:common/providers.bzl", "AtenOpsInfo")

def _aten_ops_flag_impl(ctx):
    return [AtenOpsInfo(value = ctx.build_setting_value.strip())]

aten_ops_flag = rule(
    implementation = _aten_ops_flag_impl,
    build_setting = config.string(flag = True),
    doc = """A string build setting holding an op selection for aten_codegen's `ops_setting`.

`all`, or comma-separated op roots (`add`) or overload names (`add.Tensor`). The empty string
means: use the target's own `ops` / `ops_file`. Set it with `--//pkg:name=add,abs`.""",
)
