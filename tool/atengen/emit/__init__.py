"""Emitters: turn the operator model into C++ sources, via Jinja templates."""
