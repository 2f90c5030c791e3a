"""The command line: parse options, call the layers below, print errors as `file:line: error:`."""
