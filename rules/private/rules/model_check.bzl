"""aten_model_check: runs `atengen check` on operator YAML as a build action."""

load("//rules/private:common/generator_attrs.bzl", "generator_attrs")

def _aten_model_check_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    args = ctx.actions.args()
    args.add(ctx.executable.tool)
    args.add(out)
    args.add("check")
    args.add(ctx.file.op_yaml, format = "--op_yaml=%s")
    args.add(ctx.file.tags_yaml, format = "--tags_yaml=%s")
    ctx.actions.run_shell(
        command = 'tool="$1"; out="$2"; shift 2; "$tool" "$@" > "$out"',
        arguments = [args],
        inputs = [ctx.file.op_yaml, ctx.file.tags_yaml],
        tools = [ctx.attr.tool[DefaultInfo].files_to_run],
        outputs = [out],
        mnemonic = "AtenModelCheck",
        progress_message = "Checking operator model %s (%s)" % (ctx.label, ctx.file.op_yaml.owner),
    )
    return [DefaultInfo(files = depset([out]))]

aten_model_check = rule(
    implementation = _aten_model_check_impl,
    doc = """Runs `atengen check` on an op YAML and writes the counts it prints to `<name>.txt`.

The action sees only the YAML files and the tool's runfiles, by relative paths.""",
    attrs = generator_attrs(default_to_torch = True),
)
