"""Random sampling: generators (mt19937), samplers and their kernels."""
