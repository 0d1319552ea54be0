"""Windowed ops: convolution, pooling, unfold and fold."""
