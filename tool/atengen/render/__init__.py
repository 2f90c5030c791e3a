"""Rendering, independent of C++: templates and their code cache, sharding, forked workers, all-or-nothing output."""
