"""The Python module of a stable-ABI library (`atengen stable --python_module`): what its C++
cannot register under the stable ABI, derived from its YAML files.

- ``cpp_expr``: the C++ expression subset of derivative formulas, parsed;
- ``translate``: a parsed formula as a Python expression over torch;
- ``emit``: torch.library.register_autograd per derivatives YAML entry, and the fake kernels
  that can be derived (templates/stable_registrations.py.j2).
"""
