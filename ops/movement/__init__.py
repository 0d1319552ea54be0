"""Movement: views, shape ops, splits, diagonals, copies and memory formats."""
