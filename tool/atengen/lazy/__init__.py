"""Lazy-tensor (LTC) IR codegen for external backends: model, then emitters."""
