"""atengen: a hermetic generator for PyTorch-style operator libraries.

Three layers: ``yaml_loader`` (YAML with line numbers) -> ``model`` (frozen
dataclasses describing operators) -> emitters (C++ text from templates).
"""
