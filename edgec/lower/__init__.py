"""Lowering: the quantized graph onto the C kernels that will run each op (edgec/lower/lowering.py; the choice of
kernel: edgec/ops/select.py) and the tuning log that records which speed variant a board runs fastest."""
