"""The convolutions' reference kernels (runtime_c/edgec_conv.c) as kernel records: int8, TFLite 16x8 (`_s16`) and
int4 weights (`_s4`).

int4 weights (`--weights int4`, `--int4 NODE`): symmetric per output channel in [-7, 7] (the narrow range, as
TFLite's int8 weights use [-127, 127]; TFLite and CMSIS-NN's int4 kernels take the same values), packed two per
byte in the flattened weight order of the int8 layout (OHWI, [k_h][k_w][out_c]) with TFLite's
PackInt4ValuesDensely nibble order: value 2i in the low nibble of byte i (edgec/fixedpoint/scheme.py pack_int4).
The quantizer (scheme.weighted) stores them as op.arrays['weights4'] in place of 'weights'; everything else of
the layer (int32 bias, per-channel Q31 requantization) is the int8 scheme's. The twin unpacks them and runs the
int8 twin; the C kernels unpack nibble by nibble in their inner loop (the fast ones: im2col.py, depthwise3x3.py).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit
from edgec.ops.conv.twins import run_conv, run_conv16
from edgec.ops.kernel import INT4, INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite
from edgec.fixedpoint.scheme import unpack_int4


def int4_weights(op: Op) -> bool:
    """Whether a quantized convolution has packed int4 weights."""
    return "weights4" in op.arrays


def unpacked(op: Op) -> np.ndarray:
    """A layer's int4 weights as int8 values, flat, in the int8 layout's order (OHWI; depthwise [k_h][k_w][out_c])."""
    p = op.params
    n = int(p["k_h"]) * int(p["k_w"]) * int(p["out_c"]) * (int(p["in_c"]) if op.kind == "conv2d" else 1)
    return unpack_int4(op.arrays["weights4"], n)


def with_int8_weights(op: Op) -> Op:
    """The int4 layer as an int8 one with the same weight values (its twin and the int8 fast lowering)."""
    arrays = {k: v for k, v in op.arrays.items() if k != "weights4"}
    return dataclasses.replace(op, arrays={**arrays, "weights": unpacked(op)}, lowering=None)


def run_conv4(op: Op, inputs: list) -> np.ndarray:
    """The int4 layer's twin: the int8 twin on the unpacked weights (the C does the same arithmetic)."""
    return run_conv(with_int8_weights(op), inputs)


def call_group(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    call = (f"{low.kernel.name}(&p, {site.inputs[0]}, {n['weights']}, {n['bias']}, "
            f"{n['mult']}, {n['shift']}, {site.output});")
    return cemit.with_params("edgec_group_conv2d_params", op.params, call, only_fields=True)


def bias32(op) -> bool:
    """A 16x8 layer with an int32 bias (TFLite's int32 accumulator and 32-bit requantization)."""
    return op.arrays["bias"].dtype == np.int32


def _reference(name, kind, call, precision="int8", **kw) -> Kernel:
    return Kernel(name, (kind,), REFERENCE, call, precision=precision,
                  run={"int8": run_conv, "int16": run_conv16, "int4": run_conv4}[precision], **kw)


# code estimates (fit check): of each kind, whichever of its kernels runs
CONV2D = _reference("edgec_conv2d_s8", "conv2d", cemit.weighted, struct="edgec_conv_params", code_bytes=720)
DEPTHWISE = _reference("edgec_depthwise_conv2d_s8", "depthwise_conv2d", cemit.weighted, struct="edgec_conv_params",
                       code_bytes=1300)
GROUP = _reference("edgec_group_conv2d_s8", "group_conv2d", call_group)
CONV2D_16_B32 = _reference("edgec_conv2d_s16_b32", "conv2d", cemit.weighted16, INT16, struct="edgec_conv_params",
                           applies=bias32)       # a .tflite's 16x8 conv with an int32 bias (before the int64 one)
CONV2D_16 = _reference("edgec_conv2d_s16", "conv2d", cemit.weighted16, INT16, struct="edgec_conv_params")
DEPTHWISE_16 = _reference("edgec_depthwise_conv2d_s16", "depthwise_conv2d", cemit.weighted16, INT16,
                          struct="edgec_conv_params")
CONV2D_4 = _reference("edgec_conv2d_s4", "conv2d", cemit.weighted4, INT4, applies=int4_weights,
                      struct="edgec_conv_params")
DEPTHWISE_4 = _reference("edgec_depthwise_conv2d_s4", "depthwise_conv2d", cemit.weighted4, INT4,
                         applies=int4_weights, struct="edgec_conv_params")

KERNELS = [CONV2D, DEPTHWISE, GROUP, CONV2D_16_B32, CONV2D_16, DEPTHWISE_16, CONV2D_4, DEPTHWISE_4]
