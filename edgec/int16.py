"""The escape hatch: chosen layers run with int16 activations (TFLite's 16x8 scheme) in an INT8 model.

A layer named with `--int16 NODE` (an ONNX node name, as the sensitivity table shows it) reads and
writes int16 activations: symmetric (zero point 0, scale = max|range| / 32767), int8 symmetric
per-channel weights as everywhere, an int64 bias (kept within +-2^40 so the int64 accumulator stays
inside what the 64-bit requantization takes), and the _s16 kernels of runtime_c/ (edgec_nn.h; NumPy twins
in kernels_ref_s16.py). The model's input and output stay int8 at the API.

`mark(graph, names)` rewrites the float canonical graph before quantization:
- the chosen ops' input and output tensors get int16 twins (`<name>:s16`, dtype "int16");
- an int8 tensor an int16 layer reads is converted by a `requantize` op (int8 -> int16) placed after
  its producer; an int16 output that an int8 op (or the model output) reads is converted back
  (int16 -> int8) right after the int16 layer. Chained int16 layers read each other's int16 tensors
  directly, and a view (reshape/flatten) between two int16 layers stays int16, so a chain has
  conversions only at its ends.
Everything downstream dispatches on the tensors' dtype: quantize (int16 ranges and parameters),
reference (the 16x8 kernels), the planner (bytes, not elements) and codegen (the s16 calls; the s16
kernels sit in the family files next to the int8 ones, and the linker drops them from models without one). The fast kernels never take an int16 op.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernels_ref as K
from . import kernels_ref_s16 as K16
from .errors import EdgecError
from .ir import Graph, Op, Tensor

KINDS = ("conv2d", "depthwise_conv2d", "fully_connected")     # op kinds with a 16x8 kernel
CONVERT = "requantize"                                         # the int8 <-> int16 conversion op
SUFFIX = ":s16"
BIAS_LIMIT = (1 << 40) - 1
MAX_SHIFT = 7               # edgec_requantize64 takes shifts -31..7
_KERNELS = {"conv2d": "edgec_conv2d_s16", "depthwise_conv2d": "edgec_depthwise_conv2d_s16",
            "fully_connected": "edgec_fully_connected_s16"}


def candidates(graph: Graph) -> list[str]:
    """Node names that can run with int16 activations, in graph order."""
    return list(dict.fromkeys(op.name for op in graph.ops if op.kind in KINDS))


def check_names(graph: Graph, names) -> list[str]:
    """The distinct names, or one EdgecError naming the bad ones and listing the valid ones."""
    names = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
    valid = candidates(graph)
    bad = [n for n in names if n not in valid]
    if bad:
        known = {op.name: op.kind for op in graph.ops}
        what = ", ".join(f"'{n}' ({known[n]}: no int16 kernel)" if n in known else f"'{n}' (no such node)"
                         for n in bad)
        raise EdgecError(f"--int16 {what}; layers that can run with int16 activations: "
                         f"{', '.join(valid) if valid else 'none in this model'}")
    return names


def mark(graph: Graph, names) -> int:
    """Rewrite `graph` (float, canonical, before quantize) so the named layers run with int16
    activations; returns the number of conversion ops inserted."""
    names = set(check_names(graph, names))
    if not names:
        return 0
    chosen = {id(op) for op in graph.ops if op.name in names and op.kind in KINDS}
    readers: dict[str, list[Op]] = {}
    for op in graph.ops:
        for t in op.inputs:
            readers.setdefault(t, []).append(op)
    native16: set[str] = set()      # tensors written in int16
    views = set()                   # reshapes that pass int16 from one int16 layer to others
    for op in graph.ops:
        if id(op) in chosen:
            native16.add(op.output)
        elif (op.kind == "reshape" and op.inputs[0] in native16 and op.output != graph.output
              and readers.get(op.output) and all(id(r) in chosen for r in readers[op.output])):
            native16.add(op.output)
            views.add(id(op))
    wide = native16 | {t for op in graph.ops if id(op) in chosen for t in op.inputs}

    def needs_int8(t: str) -> bool:
        return t == graph.output or any(id(r) not in chosen and id(r) not in views for r in readers.get(t, []))

    for t in wide:
        src = graph.tensors[t]
        graph.tensors[t + SUFFIX] = Tensor(name=t + SUFFIX, shape=src.shape, source=src.source, dtype="int16")
    converters = 0

    def to16(t: str) -> Op:
        nonlocal converters
        converters += 1
        return Op(kind=CONVERT, name=f"{t} to int16", inputs=[t], output=t + SUFFIX)

    ops = [to16(graph.input)] if graph.input in wide else []
    for op in graph.ops:
        out = op.output
        if id(op) in chosen or id(op) in views:
            op.inputs = [t + SUFFIX for t in op.inputs]
            op.output = out + SUFFIX
        ops.append(op)
        if out in native16:
            if needs_int8(out):
                converters += 1
                ops.append(Op(kind=CONVERT, name=f"{out} to int8", inputs=[out + SUFFIX], output=out))
            else:
                del graph.tensors[out]
        elif out in wide:
            ops.append(to16(out))
    graph.ops = ops
    return converters


def is_int16(graph: Graph, op: Op) -> bool:
    """Whether op runs an int16 kernel (a 16x8 layer, an int16 view or a conversion)."""
    return op.kind == CONVERT or graph.tensors[op.output].dtype == "int16"


# ---- quantize ---------------------------------------------------------------------------------
def qparams(lo: float, hi: float) -> tuple[float, int]:
    """Symmetric int16 scale (zero point 0) covering [lo, hi]."""
    m = max(abs(float(lo)), abs(float(hi)))
    return (m / 32767.0, 0) if m >= 1e-12 else (1.0, 0)


def _act_range(op: Op, out: Tensor) -> dict:
    lo, hi = op.attrs.get("act", (-math.inf, math.inf))
    qmin = -32768 if lo == -math.inf else max(-32768, int(round(lo / out.scale)))
    qmax = 32767 if hi == math.inf else min(32767, int(round(hi / out.scale)))
    return {"act_min": qmin, "act_max": max(qmin, qmax)}


def quantize_op(op: Op, ins: list[Tensor], out: Tensor, int8_quantizer) -> None:
    """Integer parameters of an int16 op: the int8 quantizer's, with an int64 bias and int16 bounds."""
    if op.kind == CONVERT:
        mult, shift = K.quantize_multiplier(ins[0].scale / out.scale)
        zp = ins[0].zero_point if out.dtype == "int16" else out.zero_point
        op.params = dict(n=out.size, zero_point=int(zp), mult=mult, shift=shift)
        return
    int8_quantizer(op, ins, out)        # weights, multipliers, shapes (zero points are 0 here)
    if op.kind == "reshape":
        return
    from .quantize import WEIGHT_AXIS, quantize_weights     # (quantize imports this module)
    _, w_scale = quantize_weights(op.attrs["weights"], WEIGHT_AXIS[op.kind], op.attrs.get("per_channel", True))
    bias = np.round(op.attrs["bias"].astype(np.float64) / (ins[0].scale * w_scale))
    op.arrays["bias"] = np.clip(bias, -BIAS_LIMIT, BIAS_LIMIT).astype(np.int64)
    shift = np.asarray(op.arrays["shift"])
    if np.any(shift > MAX_SHIFT):
        raise EdgecError(f"node '{op.name}': its int16 output range is too narrow for its inputs "
                         f"(requantization shift {int(shift.max())} > {MAX_SHIFT}); run it in int8")
    op.params.update(input_zp=0, output_zp=0, **_act_range(op, out))


# ---- integer reference ------------------------------------------------------------------------
def run_op(op: Op, inputs: list[np.ndarray], out_dtype: str) -> np.ndarray:
    """The int16 op on its 16x8 reference kernel (bit-exact with the _s16 kernels of runtime_c/)."""
    p, a = op.params, op.arrays
    x = inputs[0]
    if op.kind == CONVERT:
        if out_dtype == "int16":
            return K16.requantize_s8_s16(x.reshape(-1), p["zero_point"], p["mult"], p["shift"])
        return K16.requantize_s16_s8(x.reshape(-1), p["zero_point"], p["mult"], p["shift"])
    if op.kind == "reshape":
        return np.asarray(x, np.int16)
    if op.kind == "fully_connected":
        return K16.fully_connected_s16(p, x.reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])
    fn = K16.conv2d_s16 if op.kind == "conv2d" else K16.depthwise_conv2d_s16
    return fn(p, x, a["weights"], a["bias"], a["mult"], a["shift"])


# ---- C ------------------------------------------------------------------------------------------
def c_call(op: Op, out_dtype: str, prefix: str, names: dict, inputs: list[str], output: str) -> str:
    """The C statement running an int16 op (arena pointers cast to int16_t where the data is int16)."""
    p = op.params
    if op.kind == CONVERT:
        if out_dtype == "int16":
            return (f"edgec_requantize_s8_s16({p['n']}, {inputs[0]}, {p['zero_point']}, {p['mult']}, "
                    f"{p['shift']}, {_i16(output)});")
        return (f"edgec_requantize_s16_s8({p['n']}, {_i16(inputs[0], const=True)}, {p['zero_point']}, "
                f"{p['mult']}, {p['shift']}, {output});")
    return (f"{_KERNELS[op.kind]}(&{prefix}_params, {_i16(inputs[0], const=True)}, {names['weights']}, "
            f"{names['bias']}, {names['mult']}, {names['shift']}, {_i16(output)});")


def _i16(pointer: str, const: bool = False) -> str:
    c = "const " if const else ""
    return f"({c}int16_t *)({c}void *)({pointer})"
