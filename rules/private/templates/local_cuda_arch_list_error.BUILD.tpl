repository_error(
    name = "arch_list_check",
    message = {message},
)