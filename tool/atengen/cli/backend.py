"""`atengen backend`: the external-backend command, kept apart from cli.py's op commands.

    atengen backend --backend_yaml=F --output_dir=D [--header_out_dir=H]
        [--include_prefix=P] [--shards=N] [--functional_backend]
        [--impl_path=a.cpp,b.cpp] [--check_stamp=S] [--op_yaml=F --tags_yaml=F]

Everything is checked and rendered before anything is written, so an error
leaves no output (and no stale files from an earlier run).
"""

from __future__ import annotations

import sys

from absl import flags

from atengen.backend.emit import header_file, registration_files
from atengen.backend.kernel_check import check_kernels
from atengen.backend.model import resolve_backend
from atengen.backend.spec import check_include_prefix, load_backend_yaml
from atengen.emit.output import write_outputs
from atengen.emit.shards import Sharding
from atengen.errors import AtengenError, Location
from atengen.model.operator_model import load_model

FLAGS = flags.FLAGS
flags.DEFINE_string("backend_yaml", None, "backend: the backend YAML (gen_backend_stubs format).")
flags.DEFINE_string("output_dir", None, "backend: directory for Register<Key>_<shard>.cpp.")
flags.DEFINE_string(
    "include_prefix",
    "",
    "backend: the kernel class header is <include_prefix>/<Backend>NativeFunctions.h, and the "
    "generated sources include it by that path.",
)
flags.DEFINE_bool(
    "functional_backend",
    False,
    "backend: the backend implements only functional and view_copy ops "
    "(functionalization runs above it); no out=/inplace wrappers are generated.",
)
flags.DEFINE_list(
    "impl_path", [], "backend: C++ sources to scan for a definition of every expected kernel."
)
flags.DEFINE_string("check_stamp", None, "backend: a file to write once the kernel check passed.")
# --header_out_dir (shared with `generate`): where the header goes; default --output_dir.


def run_backend(op_yaml: str, tags_yaml: str) -> None:
    if FLAGS.backend_yaml is None:
        raise AtengenError(None, "backend needs --backend_yaml")
    if FLAGS.output_dir is None and not FLAGS.impl_path:
        raise AtengenError(None, "backend needs --output_dir, --impl_path or both")
    spec = load_backend_yaml(FLAGS.backend_yaml)
    for warning in spec.warnings:
        print(warning, file=sys.stderr)
    backend = resolve_backend(
        spec, load_model(op_yaml, tags_yaml), functional=FLAGS.functional_backend
    )
    if FLAGS.impl_path:
        check_kernels(backend, {p: _read(p) for p in FLAGS.impl_path})
    trees = []
    if FLAGS.output_dir is not None:
        check_include_prefix(FLAGS.include_prefix)
        header = header_file(backend, FLAGS.include_prefix)
        sources = registration_files(backend, Sharding(FLAGS.shards), FLAGS.include_prefix)
        trees = [(FLAGS.output_dir, sources), (FLAGS.header_out_dir or FLAGS.output_dir, [header])]
    stamps = []
    if FLAGS.check_stamp is not None:
        stamps = [(FLAGS.check_stamp, "// atengen: every kernel of the backend YAML is defined.\n")]
    write_outputs(trees, stamps)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise AtengenError(Location(path, 1), f"cannot read file: {e.strerror}") from None
