
alias(
    name = {name},
    actual = {actual},
)
