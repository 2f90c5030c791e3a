
# torch {version} is a CPU build: no CUDA libraries.
cc_library(name = "c10_cuda")

cc_library(name = "torch_cuda")

cc_library(name = "torch_cuda_headers")

filegroup(name = "cuda_libraries")
