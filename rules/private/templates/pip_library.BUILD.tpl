py_library(
    name = "{name}",
    srcs = {srcs},
    data = {data},
    imports = ["{site}"],
    deps = {deps},
)

