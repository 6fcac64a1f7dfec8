"""int4 weights (`--weights int4`, `--int4 NODE`): the weight format of conv2d, depthwise_conv2d and
fully_connected layers whose attrs['weight_bits'] is 4, and the dispatch to the kinds that pack their own
(`OpDef.int4_weights`: lstm and gru, edgec/ops/recurrent.py, whose W and R matrices are packed the same way
as 'w_x4' and 'w_h4').

Symmetric per output channel in [-7, 7] (the narrow range, as TFLite's int8 weights use [-127, 127]; TFLite
and CMSIS-NN's int4 kernels take the same values), packed two per byte in the flattened weight order of the
int8 layout (OHWI, [k_h][k_w][out_c], [out][in]) with TFLite's PackInt4ValuesDensely nibble order: value 2i
in the low nibble of byte i (edgec/fixedpoint/scheme.py pack_int4). The quantizer (scheme.weighted) stores them as
op.arrays['weights4'] in place of 'weights'; everything else of the layer (int32 bias, per-channel Q31
requantization) is the int8 scheme's.

The NumPy twin unpacks the packed bytes and runs the kind's int8 twin; the C kernels (`edgec_*_s4` in the
kinds' own family files) unpack nibble by nibble in their inner loop. The fast path (runtime_c/fast/):
fully connected layers lower to edgec_fully_connected_packed_s4 (`lower_fc`: the Arm DSP path unpacks 8
nibbles into four int16 pairs with SXTB16 and multiplies them with SMLAD), convolutions to
edgec_conv2d_im2col_s4 (`lower_conv`: the s8 im2col with the same nibble unpacking) and depthwise 3x3 to
edgec_depthwise_conv2d_3x3_s4 (`lower_depthwise`: the weights, 9 per channel, widened into scratch once per
call, then the s8 kernel); other convolutions keep the portable s4 kernels.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from edgec import cheader
from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.opdef import CallSite
from edgec.ops.registry import REGISTRY
from edgec.fixedpoint.scheme import pack_int4 as scheme_pack, unpack_int4

_HEADER = (cheader.runtime_dir() / "edgec_nn.h").read_text()
# weighted kind -> its C kernel taking packed int4 weights, `edgec_<kind>_s4`, where edgec_nn.h declares one
KERNELS = {k: f"edgec_{k}_s4" for k, d in REGISTRY.items()
           if d.weight_axis is not None and re.search(rf"\bedgec_{k}_s4\(", _HEADER)}
# kinds whose own registry entry quantizes, runs, calls and lowers int4 weights
OWN = tuple(k for k, d in REGISTRY.items() if d.int4_weights is not None)
KINDS = tuple(KERNELS) + OWN
PACKED_KEYS = ("weights4", "w_x4", "w_h4")      # the arrays that hold packed int4 weights


def is_int4(op: Op) -> bool:
    """Whether a quantized op has packed int4 weights."""
    return any(k in op.arrays for k in PACKED_KEYS)


def weight_shape(op: Op) -> tuple[int, ...]:
    """The int8 layout's weight shape, from the op's integer parameters."""
    p = op.params
    if "out_features" in p:                                   # [out][in]
        return (int(p["out_features"]), int(p["in_features"]))
    if REGISTRY[op.kind].weight_axis == -1:                   # depthwise: [k_h][k_w][out_c]
        return (int(p["k_h"]), int(p["k_w"]), int(p["out_c"]))
    return (int(p["out_c"]), int(p["k_h"]), int(p["k_w"]), int(p["in_c"]))     # OHWI


def unpacked(op: Op) -> np.ndarray:
    """The layer's int4 weights as int8 values, in the int8 layout."""
    shape = weight_shape(op)
    return unpack_int4(op.arrays["weights4"], int(np.prod(shape))).reshape(shape)


def run(op: Op, inputs: list) -> np.ndarray:
    """The NumPy twin: the kind's int8 twin on the unpacked weights (the C does the same arithmetic)."""
    if op.kind in OWN:
        return REGISTRY[op.kind].run(op, inputs)
    arrays = {k: v for k, v in op.arrays.items() if k != "weights4"}
    twin = dataclasses.replace(op, arrays={**arrays, "weights": unpacked(op)}, lowered=None)
    return REGISTRY[op.kind].run(twin, inputs)


def c_call(op: Op, site: CallSite) -> str:
    """The s4 kernel's call: the reference kernel's arguments with the packed weights."""
    if op.kind in OWN:
        return REGISTRY[op.kind].c_call(op, site)
    return cemit.weighted_call(KERNELS[op.kind], site.prefix, site.inputs[0],
                               {**site.arrays, "weights": site.arrays["weights4"]}, site.output)


def int8_weight_bytes(op: Op) -> int:
    """Bytes the layer's weights would take as int8 (the saving of int4 is measured against it)."""
    if op.kind in OWN:
        return REGISTRY[op.kind].int4_weights(op)
    return int(np.prod(weight_shape(op)))


def lower(op: Op) -> dict | None:
    """The fast kernel of an int4 layer, or None (the portable s4 kernel)."""
    if op.kind not in KINDS:
        return None
    if op.kind in OWN:
        return REGISTRY[op.kind].lower(op)
    if "out_features" in op.params:
        return lower_fc(op)
    return lower_depthwise(op) if REGISTRY[op.kind].weight_axis == -1 else lower_conv(op)


def _int8_lowering(op: Op) -> dict | None:
    """The kind's int8 fast kernel for the unpacked weights (its params, scratch and requantization records)."""
    twin = dataclasses.replace(op, arrays={**{k: v for k, v in op.arrays.items() if k != "weights4"},
                                           "weights": unpacked(op)}, lowered=None)
    return REGISTRY[op.kind].lower(twin)


def lower_conv(op: Op) -> dict | None:
    """edgec_conv2d_im2col_s4: the s8 im2col kernel's params; each output channel's k4 taps as (k4 + 4) / 8
    words of nibbles (fast.nibble_words)."""
    low = _int8_lowering(op)
    if low is None or low["kernel"] != "edgec_conv2d_im2col_s8":
        return None
    k4 = low["params"]["k4"]
    w = unpacked(op).reshape(low["params"]["out_c"], -1)
    wp = np.zeros((w.shape[0], k4), np.int8)
    wp[:, :w.shape[1]] = w
    return {**low, "kernel": "edgec_conv2d_im2col_s4", "arrays": {**low["arrays"], "fw": fast.nibble_words(wp)},
            "scratch_bytes": cheader.buffer_size("edgec_conv2d_im2col_s4", low["params"])}


def lower_depthwise(op: Op) -> dict | None:
    """edgec_depthwise_conv2d_3x3_s4: the s8 kernel's [c][3][3] weights (in its sweep orientation) packed two
    per byte; the kernel widens them into 18 * c bytes of scratch in front of the s8 kernel's."""
    low = _int8_lowering(op)
    if low is None or low["kernel"] != "edgec_depthwise_conv2d_3x3_s8":
        return None
    w = low["arrays"]["fw"].view(np.int16) // 2           # the s8 kernel's weights, doubled: halve them
    packed = scheme_pack(w.astype(np.int8))
    packed = np.concatenate([packed, np.zeros(-packed.size % 4, np.int8)])
    return {**low, "kernel": "edgec_depthwise_conv2d_3x3_s4", "arrays": {**low["arrays"], "fw": fast.words(packed)},
            "scratch_bytes": cheader.buffer_size("edgec_depthwise_conv2d_3x3_s4", low["params"])}


def lower_fc(op: Op) -> dict | None:
    """edgec_fully_connected_packed_s4: rows of in_features rounded up to 8, nibbles in PERM8 order."""
    w = unpacked(op)
    got = fast.conv_like(op, w)
    if got is None:
        return None
    n_out, n_in = w.shape
    k8 = (n_in + 7) // 8 * 8
    params = {"in_features": n_in, "out_features": n_out, **got[0], "k4": k8}
    return {"kernel": "edgec_fully_connected_packed_s4", "struct": "edgec_fully_connected_packed_params",
            "params": params, "arrays": {"fw": fast.nibble_words(w), "rq": got[1]},
            "scratch_bytes": cheader.buffer_size("edgec_fully_connected_packed_s4", params)}
