"""Dispatch: what lies between an op's call and its kernel (argument parsing, out=, dtype rules, autocast,
__torch_function__)."""
