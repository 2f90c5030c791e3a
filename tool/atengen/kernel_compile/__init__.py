"""Compiling a library's hand-written kernel sources, as a Bazel persistent worker that keeps a
precompiled header of each source's leading includes (rules/private/rules/kernel_objects.bzl)."""
