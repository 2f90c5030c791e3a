"""Test oracles: reference behaviour computed with the upstream ``torchgen``.

Only code under ``tests/`` may import ``torchgen``; the tool itself never does.
"""

import importlib.util

if importlib.util.find_spec("torchgen") is None:
    raise ImportError(
        "the test oracles need torchgen, which the torch wheel pinned in "
        "third_party/requirements_dev.lock ships; this interpreter's torch has none "
        "(run the tests with .venv/bin/python, as ./dev test does)"
    )
