"""Compiles every generator template into one directory: the build action behind
//tool:atengen_template_code, whose output the generator finds in its runfiles.

    compile_templates OUTPUT_DIR

See atengen/render/templates.py for the code files and their keys.
"""

import importlib
import site
import sys

if __name__ == "__main__":
    # As atengen_main.py: every import from the runfiles or the standard library.
    _site_dirs = {*site.getsitepackages(), site.getusersitepackages()}
    sys.path[:] = [p for p in sys.path if p not in _site_dirs]
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    importlib.import_module("atengen.render.templates").compile_all(sys.argv[1])
