"""Public rules of rules_aten. Implementations live in //rules/private."""

load("//rules/private:backend.bzl", _external_backend_codegen = "external_backend_codegen")
load(
    "//rules/private:codegen.bzl",
    _aten_codegen = "aten_codegen",
    _aten_codegen_sources = "aten_codegen_sources",
)
load("//rules/private:model_check.bzl", _aten_model_check = "aten_model_check")
load("//rules/private:ops_flag.bzl", _aten_ops_flag = "aten_ops_flag")
load("//rules/private:providers.bzl", _AtenCodegenInfo = "AtenCodegenInfo", _AtenOpsInfo = "AtenOpsInfo")

AtenCodegenInfo = _AtenCodegenInfo
AtenOpsInfo = _AtenOpsInfo
aten_codegen = _aten_codegen
aten_codegen_sources = _aten_codegen_sources
aten_model_check = _aten_model_check
aten_ops_flag = _aten_ops_flag
external_backend_codegen = _external_backend_codegen
