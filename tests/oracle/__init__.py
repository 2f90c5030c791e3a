"""Test oracles: reference behaviour computed with the upstream ``torchgen``.

Only code under ``tests/`` may import ``torchgen``; the tool itself never does.
"""
