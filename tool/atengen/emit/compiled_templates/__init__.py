"""Compiled templates: see atengen.render.templates."""
