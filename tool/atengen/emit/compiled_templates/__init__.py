"""Compiled templates: see atengen.emit.templates."""
