"""Spectral ops: FFTs, short-time Fourier transforms and window functions."""
