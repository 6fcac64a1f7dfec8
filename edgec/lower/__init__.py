"""Lowering: the quantized graph onto the C kernels that will run each op (edgec/lower/lowering.py), the
per-layer speed variants and the tuning log that records which one a board runs fastest."""
