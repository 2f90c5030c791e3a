
# The CUDA side of torch {version} (CUDA {cuda}): libc10_cuda, libtorch_cuda, the CUDA runtime
# and the include directories of the nvidia-* wheels its headers need (cusparse.h, cublas_v2.h).
cc_library(
    name = "cuda_package_headers",
    hdrs = glob(["nvidia/**/*.h", "nvidia/**/*.hpp", "nvidia/**/*.cuh"]),
    includes = {cuda_includes},
)

cc_import(
    name = "libc10_cuda",
    shared_library = "lib/libc10_cuda.so",
)

cc_import(
    name = "libtorch_cuda",
    shared_library = "lib/libtorch_cuda.so",
)

cc_import(
    name = "libcudart",
    shared_library = "cuda_runtime/libcudart.so",
)

cc_library(
    name = "c10_cuda",
    deps = [
        ":c10",
        ":cuda_package_headers",
        ":libc10_cuda",
    ],
)

cc_library(
    name = "torch_cuda",
    deps = [
        ":c10_cuda",
        ":libcudart",
        ":libtorch_cuda",
        ":torch_cpu",
    ],
)

# For a library loaded into a torch process (see cpu_libraries): the headers alone. It links
# cuda_libraries by path and as needed (rules/private/macros/cc_targets.bzl), so that without CUDA code it
# does not depend on them and loads into a CPU-only torch too.
cc_library(
    name = "torch_cuda_headers",
    deps = [
        ":cuda_package_headers",
        ":headers",
    ],
)

filegroup(
    name = "cuda_libraries",
    srcs = [
        "cuda_runtime/libcudart.so",
        "link/libc10_cuda.so",
        "link/libtorch_cuda.so",
    ],
)
