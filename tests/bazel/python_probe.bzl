"""python_probe: what a build action sees of the Python toolchain (tests/workspace/test_hermetic_python.py)."""

_PY_TOOLCHAIN = "@bazel_tools//tools/python:toolchain_type"

def _python_probe_impl(ctx):
    paths = ctx.actions.declare_file(ctx.label.name + ".json")
    direct = ctx.actions.declare_file(ctx.label.name + "_direct.txt")
    hidden = ctx.actions.declare_file(ctx.label.name + "_hidden.txt")
    runtime = ctx.toolchains[_PY_TOOLCHAIN].py3_runtime
    ctx.actions.run_shell(
        # 1. The py_binary, through its launcher, as every rules_aten Python action starts.
        # 2. The same interpreter file started directly, without the launcher's environment,
        #    as the launcher started it before the toolchain was self-contained: its output and
        #    exit status (the action itself succeeds either way).
        # 3. For each path of $RULES_ATEN_HIDDEN_PATHS, how many entries (a directory) or bytes
        #    (a file) the action can read there.
        command = """
"$1" > "$3"
"$2" -c 'import sys; print(sys.prefix)' > "$4" 2>&1
echo "exit status $?" >> "$4"
: > "$5"
for p in $RULES_ATEN_HIDDEN_PATHS; do
  if [ -d "$p" ]; then n=$(ls -A "$p" 2>/dev/null | wc -l); else n=$(cat "$p" 2>/dev/null | wc -c); fi
  echo "$p $n" >> "$5"
done
""",
        arguments = [
            ctx.executable.program.path,
            runtime.interpreter.path,
            paths.path,
            direct.path,
            hidden.path,
        ],
        inputs = depset([runtime.interpreter], transitive = [runtime.files]),
        tools = [ctx.attr.program[DefaultInfo].files_to_run],
        outputs = [paths, direct, hidden],
        # For RULES_ATEN_HIDDEN_PATHS (--action_env).
        use_default_shell_env = True,
        mnemonic = "PythonProbe",
    )
    return [DefaultInfo(files = depset([paths, direct, hidden]))]

python_probe = rule(
    implementation = _python_probe_impl,
    attrs = {
        "program": attr.label(executable = True, cfg = "exec", mandatory = True),
    },
    toolchains = [_PY_TOOLCHAIN],
)
