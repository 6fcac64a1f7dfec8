"""Every ONNX operator edgec imports, gathered from the family modules' `ONNX` dicts.

IMPORTERS maps an ONNX op type to `import_x(cx, node)` in the family module of the canonical op kind it
produces; edgec/frontend/canonicalize.py calls it with itself as `cx`. SUPPORTED_OPS adds the op types
the canonicalizer handles itself (Constant, and Shape of a computed tensor: both constants at build time).
"""
from __future__ import annotations

from edgec.ops import binary, conv, convert, dense, lut, movement, pool, reduce, resize, softmax

# Kind properties the canonicalizer needs (derived from the registry at merge):
# kinds a following Relu/Clip fuses into (their `act` attribute), and kinds with constant weights and bias
# (a following BatchNorm or constant Add folds into them; a QDQ model's weight scales apply).
FUSABLE = {"conv2d", "depthwise_conv2d", "fully_connected", "add", "max_pool", "avg_pool", "binary",
           "group_conv2d", "fully_connected_rows", "matmul"}
WEIGHTED = ("conv2d", "depthwise_conv2d", "fully_connected", "group_conv2d", "fully_connected_rows")

FAMILIES = (movement, lut, binary, conv, dense, pool, reduce, softmax, resize, convert)
IMPORTERS = {op: fn for family in FAMILIES for op, fn in family.ONNX.items()}
assert len(IMPORTERS) == sum(len(f.ONNX) for f in FAMILIES), "an ONNX op type is imported by two families"

DRIVER_OPS = {"Constant", "Shape"}     # edgec/frontend/canonicalize.py handles these itself
SUPPORTED_OPS = set(IMPORTERS) | DRIVER_OPS
