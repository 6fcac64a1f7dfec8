"""The fast convolution (runtime_c/fast/edgec_conv2d_im2col.c: an int16 im2col of 4 pixels times 16 output channels,
SMLAD on sign-extended pairs, then one requantization pass; any kernel size, no dilation), its speed variants
(their own files in runtime_c/fast/), its Helium kernel (fast/edgec_conv2d_mve.c) and its int4-weight twin, as
kernel records.

A speed variant is the same op on another kernel with the same params struct and its constants repacked in the
order that kernel's inner loop reads them; the variants of one op are bit-exact with each other (the same
integer sums and requantization records), so a build may pick any of them (edgec/ops/select.py): the first one
that applies, or the one a tuning log measured fastest on the board. Declared fastest first.
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.conv.reference import unpacked, with_int8_weights
from edgec.ops.kernel import DSP, FAST, HELIUM, INT4, MVE, VARIANT, Kernel

STRUCT = "edgec_conv2d_im2col_params"


def single_channel_depthwise(op: Op) -> bool:
    """A depthwise convolution of a one-channel input (TFLite Micro's micro_speech: its depth multiplier makes
    the output channels) is the convolution of that channel by out_c filters: the same sums, the same
    requantization records, so the convolution kernels run it bit-exactly."""
    return op.kind != "depthwise_conv2d" or op.params["in_c"] == 1


def ohwi(op: Op) -> np.ndarray:
    """The op's int8 weights as [out_c][k_h * k_w * in_c] (a one-channel depthwise's [k_h][k_w][out_c]
    transposed)."""
    w = op.arrays["weights"]
    if op.kind == "depthwise_conv2d":
        return np.ascontiguousarray(w.reshape(-1, op.params["out_c"]).T)
    return w.reshape(op.params["out_c"], -1)


def lower_im2col(op: Op):
    """The im2col kernel (any kernel size, no dilation): each output channel's taps padded to k4 bytes, the
    requantization records."""
    p = op.params
    if p["dil_h"] != 1 or p["dil_w"] != 1:
        return None
    w = ohwi(op)
    got = fast.conv_like(op, w)
    if got is None:
        return None
    k4 = fast.k4(w.shape[1])
    wp = np.zeros((w.shape[0], k4), np.int8)
    wp[:, :w.shape[1]] = w
    keys = ("in_h in_w in_c out_h out_w out_c k_h k_w stride_h stride_w pad_top pad_left "
            "input_zp").split()
    # band_w: the window kernels' column band, whole rows unless the plan narrows it (window_band); the others
    # ignore it
    params = {**{k: int(p[k]) for k in keys}, **got[0], "k4": k4, "band_w": int(p["out_w"])}
    return params, {"fw": fast.words(wp), "rq": got[1]}


def _k8(p) -> int:
    return (p["k4"] + 7) // 8 * 8


def _taps(base) -> np.ndarray:
    """The im2col lowering's [out_c][k4] int8 weights."""
    return base.arrays["fw"].view(np.int8).reshape(base.params["out_c"], base.params["k4"])


# ---- the speed variants
def pointwise_or_single_channel(base) -> bool:
    """A 1x1, stride-1, unpadded convolution or one that reads a single channel (where blocked4 was measured
    faster than the blocked kernel: MLPerf Tiny KWS), or a strided, unpadded 1x1 one on whole groups of 4 input
    channels, at least 8 outputs and the full int8 output range (blocked4 gathers its pixels' words straight from the
    input into its block of assembly: IC's two stride-2 1x1 layers, faster than on the pointwise kernel; fewer
    outputs would leave much of its block of 4 channels idle, and a clamped range runs on its C, not measured
    against the pointwise kernel there)."""
    p = base.params
    pointwise = (p["k_h"], p["k_w"], p["stride_h"], p["stride_w"], p["pad_top"], p["pad_left"]) == (1, 1, 1, 1, 0, 0)
    gather = (p["k_h"], p["k_w"], p["pad_top"], p["pad_left"]) == (1, 1, 0, 0) and p["in_c"] % 4 == 0 \
        and p["out_c"] >= 8 and (p["act_min"], p["act_max"]) == (-128, 127)
    return pointwise or gather or p["in_c"] == 1


def blocked4_conv(op: Op, base):
    """edgec_conv2d_blocked4_s8 (fast/edgec_conv2d_blocked4.c, 2 pixels x 4 channels in registers): blocks of
    4 output channels; per group of 4 input channels (groups padded with zero weights to an even count) the
    words (w0, w2) of channels 0..3, then (w1, w3) of channels 0..3 (fast.blocks: doubled weights and biases)."""
    return _blocked4(base.params, _taps(base), base.arrays)


def _blocked4(p, taps: np.ndarray, arrays):
    """blocked4's params and arrays for the [out_c][k4] int8 taps of its params."""
    w = np.zeros((p["out_c"], _k8(p)), np.int16)
    w[:, :p["k4"]] = taps
    words, rq = fast.blocks(w, arrays["rq"], 4, lambda g: g[..., [0, 2, 1, 3]].reshape(
        *g.shape[:2], 4, 2, 2).transpose(0, 1, 3, 2, 4))
    return p, {**arrays, "fw": words, "rq": rq}


def single_channel_window(base) -> bool:
    """The padded blocked4 kernel: a single-channel input under a kernel larger than 1x1 (KWS's 10x4 first layer,
    SiLabs' magic wand's 4x3 one), where windows on the padding would otherwise be copied tap by tap through the
    im2col row."""
    p = base.params
    return p["in_c"] == 1 and p["k_h"] * p["k_w"] > 1


def blocked4_padded_conv(op: Op, base):
    """edgec_conv2d_blocked4_padded_s8: blocked4's packing of each channel's taps as [ky][k_w4] (k_w rounded up to 4,
    zero weights on the extra taps: a kernel row is whole words of the padded band), k4 = k_h * k_w4."""
    p = base.params
    k_h, k_w, out_c = p["k_h"], p["k_w"], p["out_c"]
    k_w4 = (k_w + 3) // 4 * 4
    w = np.zeros((out_c, k_h, k_w4), np.int8)
    w[:, :, :k_w] = _taps(base)[:, :k_h * k_w].reshape(out_c, k_h, k_w)
    return _blocked4({**p, "k4": k_h * k_w4}, w.reshape(out_c, -1), base.arrays)


def padded_unbanded(params, limit: int):
    """`Kernel.narrow` of blocked4_padded: its params without the band (band_w 0: scratch for the two pixels' taps
    alone, as blocked4's; windows whose k_w4 columns lie inside the image read in place from the input rows, rows on
    the padding the zero point's words, the others built word by word) where the band's scratch is more than
    `limit` and at least half the output columns' windows lie inside the image's columns; None where the band is
    within `limit`, or most windows reach the padding (SiLabs' magic wand: 3 input columns, every window on it; the
    band is what makes them fast). The numbers are the same."""
    p = params
    if not p["band_w"] or BLOCKED4_PADDED.scratch_bytes(p) <= limit:
        return None
    k_w4 = (p["k_w"] + 3) // 4 * 4
    inside = sum(0 <= x and x + k_w4 <= p["in_w"]
                 for x in (ox * p["stride_w"] - p["pad_left"] for ox in range(p["out_w"])))
    return {**params, "band_w": 0} if 2 * inside >= p["out_w"] else None


# blocked4's loops (fast/edgec_conv2d_blocked4.c, the enum its entries name): a full-range layer's block of assembly
# by k8 and whether every requantization record's neg is -1 (else _anyneg), or the C pixels of a clamped range
BLOCKED4_LOOPS = ("k8", "k8_anyneg", "k16", "k16_anyneg", "k64", "k64_exact", "kx", "kx_anyneg", "clamped")
BLOCKED4_MODES = ("", "direct_", "banded_", "unbanded_")   # plain, direct single-channel reads, padded with the band, without


def all_negs(params, rq: np.ndarray) -> bool:
    """Whether every requantization record of the layer's out_c channels has neg -1 (`rq`: edgec_rq rows bias,
    mult, khi, neg, shift)."""
    return bool(np.all(np.asarray(rq).reshape(-1, 5)[:params["out_c"], 3] == -1))


def blocked4_loop(params, rq: np.ndarray) -> str:
    """The loop a blocked4 (or blocked4_padded) call runs on, as edgec_blocked4_pairs chooses it at run time: by k8
    (k4 rounded up to 8), the output range and the layer's records (`rq`, [n, 5] edgec_rq: bias, mult, khi, neg,
    shift; the first out_c)."""
    if (params["act_min"], params["act_max"]) != (-128, 127):
        return "clamped"
    negs = all_negs(params, rq)
    k8 = _k8(params)
    if k8 in (8, 16):
        return f"k{k8}" if negs else f"k{k8}_anyneg"
    if k8 == 64 and negs:
        return "k64_exact"        # the 32 k-steps straight (KWS's 1x1 layers)
    if k8 <= 64 and negs:
        return "k64"
    return "kx" if negs else "kx_anyneg"


def blocked4_entry(kernel, params, rq: np.ndarray) -> str:
    """The C entry point a blocked4 or blocked4_padded call names: its mode (blocked4: the direct single-channel reads
    where in_c is 1 and k_w a multiple of 4, as edgec_conv2d_blocked4_s8 tests at run time; blocked4_padded: its
    loop with the band, or without it, band_w 0, the plan's narrowing) and its loop (blocked4_loop). Calling these,
    not the entries that choose at run time, lets the linker drop the other modes and loops: the loops are up to
    8 kB of flash, each mode's copy of the kernel 1-1.3 kB."""
    if kernel is BLOCKED4_PADDED:
        mode = "banded_" if params["band_w"] else "unbanded_"
    else:
        mode = "direct_" if params["in_c"] == 1 and params["k_w"] % 4 == 0 else ""
    return f"edgec_conv2d_blocked4_{mode}{blocked4_loop(params, rq)}_s8"


def blocked4_call(op, low, site) -> str:
    """`Kernel.call` of blocked4 and blocked4_padded: fast_weighted's call of the entry its params and records need
    (blocked4_entry)."""
    return cemit.fast_weighted_call(blocked4_entry(low.kernel, low.params, low.arrays["rq"]), site.prefix,
                                    site.inputs[0], site.scratch, site.output)


# window4's loops (fast/edgec_conv2d_window.c, the enum its entries name), as edgec_window4_pick / _pick_row choose
# them at run time: a clamped range's C pixels; the full range's C pixels (n, the words of a pixel's taps, not one
# the assembly takes); its assembly by n % 16 (0, 4, 8) and whether every record's neg is -1 (_all); the row
# assembly over a row's pairs (n a multiple of 48, or 36; out_c a multiple of 4, every neg -1)
WINDOW4_LOOPS = ("clamped", "full", "k16", "k16_all", "k16t4", "k16t4_all", "k16t8", "k16t8_all", "row48", "row36")


def window4_entry(params, rq: np.ndarray) -> str:
    """The C entry point a window4 call names (edgec_conv2d_window4_<loop>_s8): the loop its params and records
    need (WINDOW4_LOOPS). Calling it, not edgec_conv2d_window4_s8 (which chooses at run time), lets the linker drop
    the other blocks: up to 7 kB of flash."""
    return f"edgec_conv2d_window4_{window4_loop(params, rq)}_s8"


def window4_loop(params, rq: np.ndarray) -> str:
    """window4's loop for a layer (WINDOW4_LOOPS)."""
    if (params["act_min"], params["act_max"]) != (-128, 127):
        return "clamped"
    negs = all_negs(params, rq)
    n = params["k_w"] * params["k_h"] * ((params["in_c"] + 3) // 4 * 4)
    if negs and params["out_c"] % 4 == 0 and (n % 48 == 0 or n == 36):
        return "row48" if n % 48 == 0 else "row36"
    loop = {0: "k16", 4: "k16t4", 8: "k16t8" if n > 16 else None}.get(n % 16)
    if loop is None:
        return "full"
    return f"{loop}_all" if negs else loop


def window4_call(op, low, site) -> str:
    """`Kernel.call` of window4: fast_weighted's call of the entry its params and records need (window4_entry)."""
    return cemit.fast_weighted_call(window4_entry(low.params, low.arrays["rq"]), site.prefix, site.inputs[0],
                                    site.scratch, site.output)


def window_fits(base) -> bool:
    """The window kernel is for kernels larger than 1x1 (a 1x1 convolution reads its pixels without im2col) whose
    channels padded to a multiple of 4 add at most a third more taps (1 or 2 input channels, as in KWS's first
    layer, would multiply its work: the im2col kernels pack their taps densely)."""
    p = base.params
    c4 = (p["in_c"] + 3) // 4 * 4
    return p["k_h"] * p["k_w"] > 1 and 3 * c4 <= 4 * p["in_c"]


def window_conv(op: Op, base):
    """The convolution without im2col (edgec_conv2d_window_s8): the blocked kernel's weight order, but each
    channel's taps as [kx][ky][c4] with the input channels padded to c4 (a multiple of 4) by zero weights, the
    order of the input rows the kernel widens into scratch (a ring of (band_w - 1) * stride_w + k_w entries, each
    the window's k_h rows of 2 * c4 int16: a pixel and the one stride_w to its right), where the taps of 2 output
    pixels are read in place."""
    p = base.params
    k_h, k_w, in_c, out_c = p["k_h"], p["k_w"], p["in_c"], p["out_c"]
    c4 = (in_c + 3) // 4 * 4
    taps = k_h * k_w * in_c
    w = np.zeros((out_c + out_c % 2, k_h, k_w, c4), np.int16)
    w[:out_c, :, :, :in_c] = _taps(base)[:, :taps].reshape(out_c, k_h, k_w, in_c)
    w = np.ascontiguousarray(w.transpose(0, 2, 1, 3))      # [kx][ky][c4]: the taps as the ring holds them
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k_h * k_w * c4 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    return p, {**base.arrays, "fw": fast.words(np.ascontiguousarray(w))}


WINDOW_MIN_BAND = 8   # columns: narrower bands cost more than they save (each band re-widens k_w - stride_w input
                      # columns of every row and restarts its ring: IC's 32-column 3x3 layer in bands of 2 cost
                      # 1.1 % of the model's instructions on qemu-cortex-m4, in bands of 8 0.23 %)


def window_band(params, limit: int):
    """`Kernel.narrow` of the window kernels: their params with column bands (`band_w`) as wide as `limit` bytes of
    scratch allow, the bands of one width (the last one what is left), an even count of columns so that no pixel
    pair straddles two bands, and at least WINDOW_MIN_BAND (those where none is within `limit`); None where the
    whole rows are within it or the rows are no wider. The numbers are the same; where two bands meet, k_w -
    stride_w input columns are widened twice."""
    out_w = int(params["out_w"])
    if WINDOW.scratch_bytes(params) <= limit or out_w <= WINDOW_MIN_BAND:
        return None
    width = WINDOW_MIN_BAND
    for b in range(out_w - 1 - (out_w - 1) % 2, WINDOW_MIN_BAND, -2):
        if WINDOW.scratch_bytes({**params, "band_w": b}) <= limit:
            width = b
            break
    bands = -(-out_w // width)
    width = -(-out_w // bands)
    return {**params, "band_w": max(width + width % 2, WINDOW_MIN_BAND)}


def window4_fits(base) -> bool:
    """The 2x4 window kernel: kernels larger than 1x1 over whole groups of 4 input channels, or of 3 (an image
    model's first layer: its rows widened a pixel a word; other counts would take the window kernel's slow path
    byte by byte)."""
    p = base.params
    return p["k_h"] * p["k_w"] > 1 and (p["in_c"] % 4 == 0 or p["in_c"] == 3)


def window4_conv(op: Op, base):
    """The window kernel with 2 pixels x 4 channels in registers (edgec_conv2d_window4_s8): each channel's taps as
    [kx][ky][c4] (the window kernel's order), in blocked4's stream of 4-channel blocks (fast.blocks: doubled biases,
    then per group of 4 taps the doubled words (w0, w2) of channels 0..3, then (w1, w3))."""
    p = base.params
    k_h, k_w, in_c, out_c = p["k_h"], p["k_w"], p["in_c"], p["out_c"]
    c4 = (in_c + 3) // 4 * 4
    w = np.zeros((out_c, k_h, k_w, c4), np.int16)
    w[:, :, :, :in_c] = _taps(base)[:, :k_h * k_w * in_c].reshape(out_c, k_h, k_w, in_c)
    w = np.ascontiguousarray(w.transpose(0, 2, 1, 3))      # [kx][ky][c4]: the taps as the ring holds them
    words, rq = fast.blocks(w.reshape(out_c, -1), base.arrays["rq"], 4, lambda g: g[..., [0, 2, 1, 3]].reshape(
        *g.shape[:2], 4, 2, 2).transpose(0, 1, 3, 2, 4))
    return p, {**base.arrays, "fw": words, "rq": rq}


def pointwise_conv(op: Op, base):
    """The blocked convolution with no loop over the taps (edgec_conv2d_pointwise_s8, for 1x1 convolutions): the
    blocked order without padding the groups to an even count, the weights and the records' bias doubled (the
    accumulator is then the 2 * acc the requantization multiplies), an odd last record followed by a copy."""
    p = base.params
    k4, out_c = p["k4"], p["out_c"]
    w = np.zeros((out_c + out_c % 2, k4), np.int16)
    w[:out_c] = 2 * _taps(base).astype(np.int16)
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k4 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    rq = base.arrays["rq"].reshape(-1, 5)
    rq = np.concatenate([rq, rq[-1:]] if out_c % 2 else [rq]) * np.array([2, 1, 1, 1, 1], rq.dtype)
    return p, {**base.arrays, "fw": fast.words(np.ascontiguousarray(w)), "rq": rq}


def blocked_conv(op: Op, base):
    """The im2col convolution with 2 pixels x 2 channels in registers (edgec_conv2d_blocked_s8): for each pair of
    output channels (an odd last one paired with a copy of itself) and each group of 4 taps t0..t3 (zero
    weights pad the groups to an even count), the int16 values t0, t2, t1, t3 of the first channel then of the
    second (the words SMLAD takes beside the widened input)."""
    p = base.params
    k8, out_c = _k8(p), p["out_c"]
    w = np.zeros((out_c + out_c % 2, k8), np.int16)
    w[:out_c, :p["k4"]] = _taps(base)
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k8 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    return p, {**base.arrays, "fw": fast.words(np.ascontiguousarray(w))}


# ---- Helium
def rq_vectors(rq: np.ndarray) -> np.ndarray:
    """edgec_rq records [n][5] regrouped for 4-lane vector loads: [ceil(n/4)][field][4] (missing channels 0),
    the shift negated (VSHL by a negative count shifts right), returned as records [4 * ceil(n/4)][5] (the
    array type the generated code declares)."""
    n = len(rq)
    padded = np.zeros((-(-n // 4) * 4, 5), np.int32)
    padded[:n] = rq
    padded[:, 4] = -padded[:, 4]
    return np.ascontiguousarray(padded.reshape(-1, 4, 5).transpose(0, 2, 1)).reshape(-1, 5)


def mve_conv(op: Op, base):
    """edgec_conv2d_mve_s8: pairs of output channels, [pair][k16 / 16][2][16] int8, k rounded up to 16 and zero
    padded (VMLADAVA takes 16 raw int8 taps of one pixel at a time; the k4 field holds k16), the channels padded
    with zero weights to a multiple of 4 (the kernel computes two pairs per pass), the requantization records
    regrouped 4 channels per vector."""
    params = base.params
    k = params["k_h"] * params["k_w"] * params["in_c"]
    k16, pairs = -(-k // 16) * 16, -(-params["out_c"] // 4) * 2
    wp = np.zeros((2 * pairs, k16), np.int8)
    wp[:params["out_c"], :k] = ohwi(op)
    wp = wp.reshape(pairs, 2, k16 // 16, 16).transpose(0, 2, 1, 3)        # [pair][block][channel][16]
    return {**params, "k4": k16}, {"fw": fast.words(np.ascontiguousarray(wp)), "rq": rq_vectors(base.arrays["rq"])}


# ---- int4 weights
def lower_im2col4(op: Op):
    """edgec_conv2d_im2col_s4: the s8 im2col kernel's params; each output channel's k4 taps as (k4 + 4) / 8
    words of nibbles (fast.nibble_words)."""
    low = lower_im2col(with_int8_weights(op))
    if low is None:
        return None
    params, arrays = low
    w = unpacked(op).reshape(params["out_c"], -1)
    wp = np.zeros((w.shape[0], params["k4"]), np.int8)
    wp[:, :w.shape[1]] = w
    return params, {**arrays, "fw": fast.nibble_words(wp)}


# ---- the selector's cost model (edgec/ops/select.py `cheapest`) for 1x1, stride-1, unpadded convolutions on a
# core with the Arm DSP extension: instructions of one call = c0 + pixels * per_pixel(in_c) + pixels * out_c' *
# per_output(in_c) (out_c' rounded up to the kernel's block of channels), per_pixel and per_output interpolated
# linearly in in_c between the points measured (and extended past them): exact emulated counts of each kernel
# alone on qemu-cortex-m4 (arm-none-eabi-gcc -O2), 96 shapes (6x6 to 24x24 pixels, 4 to 128 input channels, 8 to
# 64 outputs), each within 3 % of the fit. Elsewhere (other shapes, input channels not a multiple of 4, no DSP) no
# estimate: the declared order.
POINTWISE_IN_C = (4, 8, 12, 16, 24, 32, 64, 128)
POINTWISE_COSTS = {  # kernel: (c0, channels per block, per_pixel at POINTWISE_IN_C, per_output at POINTWISE_IN_C)
    "im2col": (76, 1, (38.2, 46.2, 54.2, 62.2, 78.2, 94.2, 158.2, 286.2),
               (18.9, 25.1, 28.9, 33.4, 41.6, 49.9, 82.9, 148.9)),
    # blocked4's per-output figures: the fit less 1.3, what its store saves where every record's neg is -1 (KWS's
    # 64 -> 64 layers measured 1.27 an output fewer; the usual layer), less what its block of assembly (the
    # requantization included, fast/edgec_conv_block2x4.h) saves on the MLPerf Tiny layers: 1.9 an output over whole
    # 16-word passes (KWS's and VWW's 1x1 layers, 16 to 64 input channels: 1.84 to 2.07), 3.9 with a tail of 8 words
    # (KWS's first layer, 40 taps), 5.1 at 8 words (VWW's 48x48 8 -> 16 layer: 11.7, 613,120 instructions with the word
    # stores and the paired widening)
    "blocked4": (119, 4, (71.5, 79.5, 87.5, 95.5, 111.5, 127.5, 191.5, 319.5),
                 (11.7, 11.7, 19.9, 19.9, 24.6, 31.3, 54.1, 99.6)),
    "pointwise": (342, 2, (32.5, 39.0, 45.5, 52.0, 65.0, 78.0, 130.0, 234.0),
                  (15.3, 18.3, 21.3, 24.3, 30.3, 36.3, 60.0, 110.3)),
    "blocked": (84, 2, (65.5, 73.5, 81.5, 89.5, 105.5, 121.5, 185.5, 313.5),
                (25.8, 25.8, 32.8, 32.8, 39.8, 46.8, 74.8, 130.8)),
}


def _interpolated(points, in_c: int) -> float:
    """points at POINTWISE_IN_C, linear between them and along the last (first) segment beyond them."""
    xs = POINTWISE_IN_C
    i = min(max(int(np.searchsorted(xs, in_c)), 1), len(xs) - 1)
    return points[i - 1] + (points[i] - points[i - 1]) * (in_c - xs[i - 1]) / (xs[i] - xs[i - 1])


def pointwise_cost(kernel: str):
    """`Kernel.cost` of a convolution kernel (its POINTWISE_COSTS row), of the im2col lowering's params: an estimate
    for 1x1, stride-1, unpadded convolutions on a DSP core, else None."""
    c0, block, per_pixel, per_output = POINTWISE_COSTS[kernel]

    def cost(p, dsp: bool) -> float | None:
        geometry = (p["k_h"], p["k_w"], p["stride_h"], p["stride_w"], p["pad_top"], p["pad_left"])
        if not dsp or geometry != (1, 1, 1, 1, 0, 0) or p["in_c"] % 4:
            return None
        pixels, out_c = p["out_h"] * p["out_w"], -(-p["out_c"] // block) * block
        return c0 + pixels * (_interpolated(per_pixel, p["in_c"]) + out_c * _interpolated(per_output, p["in_c"]))
    return cost


# Flash bytes one call reads (Kernel.flash_bytes): every pass over the output pixels reads all the weights; the
# generic kernel widens int8 weights for 4 pixels a pass, the variants read int16 weights for 2 pixels a pass
# (blocked4 in blocks of 4 channels, pointwise and blocked in pairs, k padded as their packing pads it).
FLASH_PASSES = {"im2col": (4, 1, 1, "k4"), "blocked4": (2, 2, 4, "k8"), "pointwise": (2, 2, 2, "k4"),
                "blocked": (2, 2, 2, "k8")}   # kernel: (pixels a pass, bytes a weight, channel block, taps)
# cycles per instruction at zero wait states, each kernel alone on qemu-cortex-m4 under the cycle plugin (1x1
# layers 25x5x64 -> 64 and 6x6x128 -> 128, within 2 % of each other): Kernel.cycles_per_instruction
POINTWISE_CPI = {"im2col": 1.57, "blocked4": 1.53, "pointwise": 1.62, "blocked": 1.58}


def pointwise_flash(kernel: str):
    """`Kernel.flash_bytes` of a convolution kernel (its FLASH_PASSES row), of the im2col lowering's params."""
    pixels_a_pass, size, block, taps = FLASH_PASSES[kernel]

    def flash_bytes(p) -> int:
        k = _k8(p) if taps == "k8" else p["k4"]
        passes = -(-p["out_h"] * p["out_w"] // pixels_a_pass)
        return passes * -(-p["out_c"] // block) * block * k * size
    return flash_bytes


def pass_reads(pixels_a_pass: int):
    """`Kernel.reads` of a kernel reading all its weights (`fw`) and records (`rq`) once per pass of `pixels_a_pass`
    output pixels (FLASH_PASSES), of its own lowering (edgec/lower/weight_staging.py)."""
    def reads(low) -> dict:
        passes = -(-low.params["out_h"] * low.params["out_w"] // pixels_a_pass)
        return {k: passes * low.arrays[k].nbytes for k in ("fw", "rq") if k in low.arrays}
    return reads


# the convolutions and the one-channel depthwise ones (single_channel_depthwise)
CONV_KINDS = ("conv2d", "depthwise_conv2d")
IM2COL = Kernel("edgec_conv2d_im2col_s8", CONV_KINDS, FAST, cemit.fast_weighted, applies=single_channel_depthwise,
                lower=lower_im2col, struct=STRUCT, cost=pointwise_cost("im2col"),
                flash_bytes=pointwise_flash("im2col"), cycles_per_instruction=POINTWISE_CPI["im2col"],
                reads=pass_reads(FLASH_PASSES["im2col"][0]))
# code each speed variant links in beside the generic kernels (arm-none-eabi-gcc -O2, Cortex-M4: its row
# functions and packing-free loops; measured on the MLPerf Tiny builds; their portable C on the Cortex-M3 is up to
# twice that), for the fit check's code estimate. blocked4: the entries its calls name, their loops and helpers,
# a build of one or two loops (since each call names its loop, h46-flash: MLPerf Tiny KWS's k64 3,250 B, IC 5,508 B,
# SiLabs' kws_on_off 6,674 B, VWW's four loops 9,950 B; all eight loops and both modes were linked before, 12,444 B;
# 5,500 until h47-flash, when the fused depthwise kernel's estimate came down to what it links and KWS's total
# estimate went 2.1 % over its firmware); each further loop its calls name about 2,225 B more (entry_code: VWW's
# four, 4,450 B over two, h47-vww; its constants no longer hide it)
# the entries blocked4's calls name (blocked4_entry); the records' own names and the padded variant's banded_s8 /
# unbanded_s8 choose their loop at run time (tests, hand-written callers)
BLOCKED4_ENTRIES = tuple(f"edgec_conv2d_blocked4_{m}{loop}_s8" for m in BLOCKED4_MODES for loop in BLOCKED4_LOOPS)
BLOCKED4 = Kernel("edgec_conv2d_blocked4_s8", CONV_KINDS, VARIANT, blocked4_call, base=IM2COL,
                  variant="blocked4", applies=pointwise_or_single_channel, lower=blocked4_conv, struct=STRUCT,
                  code_bytes=4400, cost=pointwise_cost("blocked4"),
                  flash_bytes=pointwise_flash("blocked4"), cycles_per_instruction=POINTWISE_CPI["blocked4"],
                  entries=BLOCKED4_ENTRIES[:2 * len(BLOCKED4_LOOPS)],
                  entry_code=(lambda low: blocked4_entry(low.kernel, low.params, low.arrays["rq"]), 2, 2225), reads=pass_reads(2))
# blocked4_padded: the entry its call names (blocked4_entry: its mode, banded or not, and its loop), the band builder
# and the loop's assembly or C block (cancer_conv1d's banded k8 loop 2,044 B, digits_cnn's k16 2,220 B), 2,000 B
# counted once where both run the same loop (MLPerf Tiny KWS, both on the k64 loop: 4,992 B in all); since each
# call names its loop (h46-flash; 11,826 B before, every loop linked)
BLOCKED4_PADDED = Kernel("edgec_conv2d_blocked4_padded_s8", CONV_KINDS, VARIANT, blocked4_call, base=IM2COL,
                         variant="blocked4_padded", applies=single_channel_window, lower=blocked4_padded_conv,
                         struct=STRUCT, code_bytes=2400, shares_code=(BLOCKED4, 2000), narrow=padded_unbanded,
                         reads=pass_reads(2),
                         entries=("edgec_conv2d_blocked4_banded_s8", "edgec_conv2d_blocked4_unbanded_s8",
                                  *BLOCKED4_ENTRIES[2 * len(BLOCKED4_LOOPS):]))
WINDOW = Kernel("edgec_conv2d_window_s8", CONV_KINDS, VARIANT, cemit.fast_weighted, base=IM2COL, variant="window",
                applies=window_fits, lower=window_conv, struct=STRUCT, code_bytes=4288, narrow=window_band,
                reads=pass_reads(2))
# window4: the entry its call names (window4_entry) with its loop's blocks, the ring's shift and edge word (MLPerf
# Tiny IC's row48: 4,036 B; a pixels-only loop ~2,700 B; since each call names its loop, h47-flash: 11,488 B before,
# every loop linked)
WINDOW4 = Kernel("edgec_conv2d_window4_s8", CONV_KINDS, VARIANT, window4_call, base=IM2COL, variant="window4",
                 applies=window4_fits, lower=window4_conv, struct=STRUCT, isa=DSP, code_bytes=4040,
                 narrow=window_band, entries=tuple(f"edgec_conv2d_window4_{loop}_s8" for loop in WINDOW4_LOOPS),
                 reads=pass_reads(2))
POINTWISE = Kernel("edgec_conv2d_pointwise_s8", CONV_KINDS, VARIANT, cemit.fast_weighted, base=IM2COL,
                   variant="pointwise", applies=lambda base: base.params["k_h"] == 1 and base.params["k_w"] == 1,
                   lower=pointwise_conv, struct=STRUCT, code_bytes=4400, cost=pointwise_cost("pointwise"),
                   flash_bytes=pointwise_flash("pointwise"), cycles_per_instruction=POINTWISE_CPI["pointwise"],
                   reads=pass_reads(2))
BLOCKED = Kernel("edgec_conv2d_blocked_s8", CONV_KINDS, VARIANT, cemit.fast_weighted, base=IM2COL,
                 variant="blocked", lower=blocked_conv, struct=STRUCT, code_bytes=1024, cost=pointwise_cost("blocked"),
                 flash_bytes=pointwise_flash("blocked"), cycles_per_instruction=POINTWISE_CPI["blocked"],
                 reads=pass_reads(2))
CONV_MVE = Kernel("edgec_conv2d_mve_s8", CONV_KINDS, HELIUM, cemit.fast_weighted, base=IM2COL, isa=MVE,
                  lower=mve_conv, struct=STRUCT)
IM2COL_4 = Kernel("edgec_conv2d_im2col_s4", ("conv2d",), FAST, cemit.fast_weighted, precision=INT4,
                  lower=lower_im2col4, struct=STRUCT)

KERNELS = [IM2COL, BLOCKED4_PADDED, BLOCKED4, WINDOW4, WINDOW, POINTWISE, BLOCKED, CONV_MVE, IM2COL_4]
