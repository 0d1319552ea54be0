"""Complex numbers: complex tensors, their kernels, casts and gradients."""
