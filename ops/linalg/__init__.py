"""Linear algebra and products: matmul, einsum, decompositions, the tidal.linalg namespace, distances."""
