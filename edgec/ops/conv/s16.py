"""The fast TFLite 16x8 convolutions (int16 activations, int8 weights, int64 bias) as kernel records:
runtime_c/fast/edgec_conv2d_fast_s16.c (any window, stride, dilation, padding: two pixels' windows gathered as
int16, SMLAD of their pairs and the weights' SXTB16 pairs, two output channels a pass) and
runtime_c/fast/edgec_depthwise_conv2d_fast_s16.c (depth multiplier 1, an even channel count: SMLABB / SMLATT, two
channels a pass, the taps off the image skipped). Before them such layers ran on the reference kernels' int64
loop nest (15 instructions per MAC for Keras' 16x8 DS-CNN on qemu-cortex-m4).

TFLite Micro sums in int64. The fast kernels sum in int32, and a layer takes them only where that is provably the
same: per output channel |bias| + 32768 * sum|w| < 2^31 (|x| <= 32768 for every int16 input, so no partial sum
and no sum plus bias leaves int32), checked from the constant weights and bias at build time; else the layer stays
on the reference kernel. The requantization is TFLite's MultiplyByQuantizedMultiplier(int64, ...) of the 16x8
kernels (edgec_requantize64), its multiplier reduced to Q15 and its total shift T = 15 - shift computed here:
records {bias, reduced multiplier, T} per output channel (`rq16`), or {bias, reduced x 2^(32 - T), 0} where that
is below 2^31 (then one rounding high multiply, SMMULR, is the same: runtime_c/fast/edgec_rq16.h)."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.conv.reference import bias32
from edgec.ops.kernel import FAST, INT16, Kernel

STRUCT = "edgec_conv_fast_s16_params"
FIELDS = ("in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "k_h", "k_w", "stride_h", "stride_w", "dil_h", "dil_w",
          "pad_top", "pad_left", "act_min", "act_max")
INT16_MAX_ABS = 1 << 15
SUM_LIMIT = 1 << 31


def records(op: Op, w2d: np.ndarray) -> np.ndarray | None:
    """[out_c * 3] int32 {bias, Q15 multiplier, 15 - shift} per output channel of a 16x8 layer whose weights per
    output channel are w2d's rows, or None where the int32 sum is not provably exact (the bound above) or the
    multiplier or shift is outside the kernels' range (a total shift 15 - shift of 1 to 31: the kernels shift
    the 64-bit product's two words, edgec_rq16_out)."""
    a = op.arrays
    if "weights" not in a or bias32(op) or int(op.params.get("input_zp", 0)) != 0 or int(op.params.get("output_zp", 0)) != 0:
        return None
    bias, mult, shift = (np.asarray(a[k], np.int64) for k in ("bias", "mult", "shift"))
    bound = np.abs(bias) + INT16_MAX_ABS * np.abs(np.asarray(w2d, np.int64)).sum(axis=1)
    if np.any(bound >= SUM_LIMIT) or np.any(mult < 0) or np.any(shift > 14) or np.any(shift < -16):
        return None
    reduced = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)     # as edgec_requantize64
    total = 15 - shift
    scaled = reduced << (32 - total)            # (x * reduced + 2^(total-1)) >> total == SMMULR(x, scaled)
    one = scaled < SUM_LIMIT
    rec = np.stack([bias, np.where(one, scaled, reduced), np.where(one, 0, total)], axis=1)
    return rec.astype(np.int32).reshape(-1)


def _params(p, k4: int) -> dict:
    one = (p["k_h"], p["k_w"], p["stride_h"], p["stride_w"], p["pad_top"], p["pad_left"]) == (1, 1, 1, 1, 0, 0)
    in_place = int(k4 > 0 and one and p["in_c"] % 4 == 0 and (p["in_h"], p["in_w"]) == (p["out_h"], p["out_w"]))
    return {**{k: int(p[k]) for k in FIELDS}, "k4": k4, "in_place": in_place}


def fc_params(p, k4: int) -> dict:
    """A 16x8 fully connected layer of `rows` rows (p: its params) as the 1x1 convolution of a rows x 1 image, the
    record edgec_fully_connected_fast_s16 hands to edgec_conv2d_fast_s16 as it is. Not in place: the rows' input is
    read through the scratch (its alignment is not known)."""
    rows = int(p.get("rows", 1))
    conv = dict.fromkeys(FIELDS, 1)
    conv.update(in_h=rows, in_c=int(p["in_features"]), out_h=rows, out_c=int(p["out_features"]), pad_top=0,
                pad_left=0, act_min=int(p["act_min"]), act_max=int(p["act_max"]))
    return {**conv, "k4": k4, "in_place": 0}


def packed(w: np.ndarray) -> tuple[int, np.ndarray]:
    """(k4, words) of int8 weights [out][k] as edgec_conv2d_fast_s16 reads them: [pair of outputs][group of 4
    taps][output][4] int8 (each output's taps zero padded to k4, a multiple of 4; an odd count of outputs padded
    with a zero one), each group as w0 w2 w1 w3 (the kernel's SXTB16 pairs)."""
    k4, pairs = fast.k4(w.shape[1]), (w.shape[0] + 1) // 2
    wp = np.zeros((2 * pairs, k4), np.int8)
    wp[:w.shape[0], :w.shape[1]] = w
    wp = wp.reshape(pairs, 2, k4 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    return k4, fast.words(np.ascontiguousarray(wp))


def lower_conv(op: Op):
    """The weights as `packed` lays them out, the records."""
    p = op.params
    if "weights" not in op.arrays:          # int4 weights: the reference kernel
        return None
    w = np.asarray(op.arrays["weights"], np.int8).reshape(p["out_c"], -1)
    rq = records(op, w)
    if rq is None:
        return None
    k4, words = packed(w)
    return _params(p, k4), {"fw": words, "rq16": rq}


def lower_depthwise(op: Op):
    """Depth multiplier 1, an even channel count: weights [k_h][k_w][c] int16 as words; the records."""
    p = op.params
    if "weights" not in op.arrays or p["depth_multiplier"] != 1 or p["in_c"] % 2 or p["out_c"] != p["in_c"]:
        return None
    w = np.asarray(op.arrays["weights"], np.int8).reshape(-1, p["out_c"])           # [tap][c]
    rq = records(op, w.T)
    if rq is None:
        return None
    return _params(p, 0), {"fw": fast.words(np.ascontiguousarray(w.astype(np.int16))), "rq16": rq}


def call(op, low, site) -> str:
    """The call: params, int16 input, packed weights, records, scratch, int16 output."""
    n = site.prefix
    return (f"{low.kernel.name}(&{n}_params, {cemit.i16(site.inputs[0], const=True)}, {n}_fw, {n}_rq16, "
            f"{cemit.i16(site.scratch)}, {cemit.i16(site.output)});")


def call_depthwise(op, low, site) -> str:
    """The depthwise call (no scratch): params, int16 input, weights, records, int16 output."""
    n = site.prefix
    return (f"{low.kernel.name}(&{n}_params, {cemit.i16(site.inputs[0], const=True)}, {n}_fw, {n}_rq16, "
            f"{cemit.i16(site.output)});")


CONV2D = Kernel("edgec_conv2d_fast_s16", ("conv2d",), FAST, call, precision=INT16, lower=lower_conv,
                struct=STRUCT)
DEPTHWISE = Kernel("edgec_depthwise_conv2d_fast_s16", ("depthwise_conv2d",), FAST, call_depthwise, precision=INT16,
                   lower=lower_depthwise, struct=STRUCT)

KERNELS = [CONV2D, DEPTHWISE]
