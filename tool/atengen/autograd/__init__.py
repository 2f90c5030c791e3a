"""Autograd from a derivatives YAML: the model of its formulas and the C++ it generates."""
