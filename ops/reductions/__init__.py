"""Reductions and scans: sum, max, softmax, cumulative ops, statistics, comparisons of whole tensors, histograms."""
