"""Indexing: subscripts, index ops, gather/scatter, masks, sorting and searching."""
