"""Elementwise ops: each declared once as a scalar template, with their derivatives, casts, copies and special
functions."""
