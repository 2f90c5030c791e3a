"""One kernel source's compile, as the rule gives it, and the command lines made from it."""

from __future__ import annotations

from dataclasses import dataclass

from atengen.errors import AtengenError

USAGE = "--source=SOURCE --output=OBJECT -- COMPILER ARG..."


@dataclass(frozen=True)
class KernelCompile:
    """The compiler's command line of one source; it holds ``-c SOURCE`` and ``-o OUTPUT``."""

    argv: tuple[str, ...]
    source: str
    output: str

    @staticmethod
    def parse(arguments: tuple[str, ...]) -> KernelCompile:
        """The compile that ``--source=S --output=O -- COMPILER ARG...`` describes."""
        if (
            len(arguments) < 4
            or not arguments[0].startswith("--source=")
            or not arguments[1].startswith("--output=")
            or arguments[2] != "--"
        ):
            raise AtengenError(None, f"compile-kernel: expected {USAGE}, got {list(arguments)[:3]}")
        compile = KernelCompile(arguments[3:], arguments[0][9:], arguments[1][9:])
        compile._flag_index("-c", compile.source)
        compile._flag_index("-o", compile.output)
        return compile

    def _flag_index(self, flag: str, value: str) -> int:
        for i in range(1, len(self.argv) - 1):
            if self.argv[i] == flag and self.argv[i + 1] == value:
                return i
        raise AtengenError(None, f"compile-kernel: the command line has no `{flag} {value}`")

    def with_header(self, header: str) -> tuple[str, ...]:
        """The command line with ``header`` included first (its .gch beside it then serves)."""
        return (self.argv[0], "-include", header, "-Winvalid-pch", *self.argv[1:])

    def precompiling(self, header: str, gch: str, depfile: str) -> tuple[str, ...]:
        """The command line that precompiles ``header`` into ``gch`` with the same flags, and
        writes the files it read to ``depfile``."""
        argv = list(self.argv)
        c = self._flag_index("-c", self.source)
        argv[c : c + 2] = ["-x", "c++-header", "-c", header]
        o = argv.index("-o", 1)
        argv[o : o + 2] = ["-o", gch, "-MD", "-MF", depfile]
        return tuple(argv)

    def key_argv(self) -> tuple[str, ...]:
        """The command line without what names this source or its object: two sources whose
        flags are the same share a precompiled header."""
        argv = list(self.argv)
        c = self._flag_index("-c", self.source)
        del argv[c : c + 2]
        o = argv.index("-o", 1)
        del argv[o : o + 2]
        # Bazel seeds GCC's randomness with the object's path; a header's code does not use it.
        return tuple(a for a in argv if not a.startswith("-frandom-seed="))
