"""A QDQ file's int16 activations (ONNX Runtime's quantize_static with activation_type QInt16: "A16W8") on TFLite's
16x8 kernels.

edgec/frontend/qdq.py strips the file's QuantizeLinear -> DequantizeLinear pairs and lists the ONNX values the file
quantizes to int16 (`info(model)["int16"]`). `widen` then runs, on the canonical graph, every tensor the file holds
in int16 as an int16 tensor (dtype "int16"), and every op writing one on its int16 kernel:

- a tensor is int16 when its ONNX value is one of the file's, when a view / transpose / pool (an op keeping its
  input's grid) reads or writes an int16 one, or when an op reads an int16 activation (ONNX Runtime runs such an op,
  a Gelu between a DequantizeLinear and the next QuantizeLinear, in float on the int16 values: int16 is the grid
  closest to it);
- an int8 operand of an int16 op is converted up, an int16 operand of an int8 op down (the `requantize` op);
- an op whose family says it runs so (`Int16.qdq`, edgec/ops/opdef.py) runs on its 16x8 kernel, as the family
  rewrites it (`Int16.as16`: a grouped convolution as one convolution over block-diagonal weights, the same sums);
- any other op there refuses the build in one line naming every such node.

Grids: TFLite's 16x8 kernels take int16 zero point 0. A file's int16 grid with zero point 0 is taken as it is
(its own scale). ONNX Runtime's default QInt16 is asymmetric (zero points such as -29758); edgec then runs the
value on the symmetric grid that holds the file's whole range, scale max(|lo|, |hi|) / 32767 (`grid16`): between 1
and 2 times the file's step, 15-16 bits instead of 16 (docs/quantization.md measures what it costs against ONNX
Runtime's QDQ execution). uint16 activations (QUInt16) reach here as int16 ones, their zero point less 32768
(edgec/frontend/qdq.py). The graph's input and output ports are int16 on those grids.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import GraphBuilder, Op
from edgec.ops.convert import KIND as CONVERT
from edgec.ops.registry import REGISTRY


def grid16(scale: float, zero_point: int) -> tuple[float, int]:
    """The symmetric int16 grid edgec runs a file's int16 grid on (see the module doc)."""
    if int(zero_point) == 0:
        return float(scale), 0
    lo, hi = (-32768 - int(zero_point)) * float(scale), (32767 - int(zero_point)) * float(scale)
    return max(-lo, hi) / 32767.0, 0


def per_axis16(scales: np.ndarray, zero_points: np.ndarray) -> tuple[float, int, float, float]:
    """(scale, 0, lo, hi) of a per-axis int16 activation QuantizeLinear (scales and zero points per channel, which
    may differ; uint16 ones shifted to int16): [lo, hi] the union of the channels' ranges, on the symmetric grid
    holding it (what grid16 does to one asymmetric grid; each channel loses resolution by its step's ratio to
    that grid's)."""
    s = np.asarray(scales, np.float32).reshape(-1)
    z = np.broadcast_to(np.asarray(zero_points, np.int64).reshape(-1), s.shape)
    lo = float(np.float32(((-32768 - z) * s).min()))
    hi = float(np.float32(((32767 - z) * s).max()))
    return max(-lo, hi) / 32767.0, 0, lo, hi


def widen(g: GraphBuilder, values: set[str]) -> None:
    """The canonical graph `g` (being built) with the file's int16 values run on int16 (see the module doc)."""
    if not values:
        return
    t = g.tensors
    wide = {n for n, x in t.items() if x.source in values and x.dtype == "int8"}
    keeps = {k for k, d in REGISTRY.items() if d.alias or d.qparams == "input"}
    changed = True
    while changed:
        n = len(wide)
        for op in g.ops:
            if op.output in wide and op.kind in keeps and op.inputs and t[op.inputs[0]].dtype == "int8":
                wide.add(op.inputs[0])
            if set(op.inputs) & wide and t[op.output].dtype == "int8":
                wide.add(op.output)
        changed = len(wide) != n
    bad = [f"'{op.name}' ({op.kind})" for op in g.ops if op.output in wide and not _runs16(op)]
    if bad:
        raise EdgecError(f"node {', '.join(dict.fromkeys(bad))}: runs on int16 activations in this QDQ file "
                         "(ONNX Runtime's A16W8) and edgec has no 16x8 kernel for it; quantize the file with "
                         "activation_type QInt8, or give edgec the float model")
    for name in wide:
        g.retensor(name, dtype="int16")
    ops = []
    for op in g.ops:
        as16 = REGISTRY[op.kind].int16.as16 if REGISTRY[op.kind].int16 is not None else None
        if as16 is not None and op.output in wide:
            op = as16(op)
        want16 = op.output in wide
        ins = []
        for i in op.inputs:
            if (i in wide) != want16 and t[i].dtype in ("int8", "int16"):
                ins.append(_convert(g, ops, i, "int16" if want16 else "int8"))
            else:
                ins.append(i)
        ops.append(replace(op, inputs=tuple(ins)) if tuple(ins) != tuple(op.inputs) else op)
    g.ops = ops


def _runs16(op: Op) -> bool:
    """Whether the op may run in 16x8 from a QDQ file (its family's Int16.qdq) or is a view."""
    d = REGISTRY[op.kind]
    return d.alias or (d.int16 is not None and d.int16.qdq is not None and d.int16.qdq(op))


def _convert(g: GraphBuilder, ops: list, name: str, dtype: str) -> str:
    """The tensor holding `name` converted to dtype (made once, right where it is first read)."""
    new = f"{name}:to{dtype[3:]}"
    if new not in g.tensors:
        src = g.tensors[name]
        g.tensors[new] = type(src)(name=new, shape=src.shape, source=src.source, dtype=dtype)
        ops.append(Op(kind=CONVERT, name=f"{name} to {dtype}", inputs=(name,), output=new))
    return new
