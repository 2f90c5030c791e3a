"""Public rules of rules_aten. Implementations live in //rules/private."""

load("//rules/private:model_check.bzl", _aten_model_check = "aten_model_check")

aten_model_check = _aten_model_check
