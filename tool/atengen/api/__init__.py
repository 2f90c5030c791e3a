"""How an operator is spelled in C++: types, declarations, calls of other ops, device handling, structured classes, the wrappers registered for a key, and Functionalize calls."""
