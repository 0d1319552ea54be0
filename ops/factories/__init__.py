"""Factories: tensors from sizes, ranges and data; conversion, transfer, storage and shared memory."""
