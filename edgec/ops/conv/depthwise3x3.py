"""The fast depthwise 3x3 convolution (runtime_c/fast/edgec_depthwise_conv2d_3x3.c: a rolling window of three input rows
widened to int16 in a layout where one SMLAD does two taps of one channel, swept along the image's longer axis),
its speed variants (the requantization fused into the store; the whole small image widened at once), its Helium kernel
(fast/edgec_depthwise_conv2d_3x3_mve.c) and its int4-weight twin, as kernel records."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.conv.reference import with_int8_weights
from edgec.ops.kernel import DSP, FAST, HELIUM, INT4, MVE, VARIANT, Kernel
from edgec.fixedpoint.scheme import pack_int4

STRUCT = "edgec_depthwise_conv2d_3x3_params"


def lower_3x3(op: Op):
    """Depthwise 3x3: the kernel sweeps along the longer output axis (rows x cols, cols >= rows);
    weights [c][3][3] int16 in that orientation, times two (the kernel requantizes doubled sums)."""
    p = op.params
    if not (p["k_h"] == 3 and p["k_w"] == 3 and p["dil_h"] == 1 and p["dil_w"] == 1 and p["depth_multiplier"] == 1
            and p["in_c"] % 4 == 0 and p["stride_h"] == p["stride_w"] and p["stride_h"] in (1, 2)):
        return None
    c = p["out_c"]
    w = op.arrays["weights"].reshape(3, 3, c)                 # [ky][kx][c]
    got = fast.conv_like(op, w.reshape(9, c).T)
    if got is None:
        return None
    h, wd = (p["in_h"], p["out_h"], p["pad_top"]), (p["in_w"], p["out_w"], p["pad_left"])
    steps = (p["in_w"] * c, c, p["out_w"] * c, c)               # bytes between rows, columns (in, out)
    wk = w.transpose(2, 0, 1)                                  # [c][ky][kx]
    if p["out_h"] > p["out_w"]:                                # sweep down the image's columns
        h, wd, steps, wk = wd, h, (steps[1], steps[0], steps[3], steps[2]), wk.transpose(0, 2, 1)
    params = {"rows": h[0], "cols": wd[0], "c": c, "out_rows": h[1], "out_cols": wd[1], "stride": p["stride_h"],
              "pad_top": h[2], "pad_left": wd[2], "in_row_step": steps[0], "in_col_step": steps[1],
              "out_row_step": steps[2], "out_col_step": steps[3], "input_zp": int(p["input_zp"]),
              "act_min": got[0]["act_min"], "act_max": got[0]["act_max"], "band": 0}
    return params, {"fw": fast.words((2 * wk.astype(np.int16)).astype(np.int16)), "rq": got[1]}


def _half(v) -> np.ndarray:
    """int16 values as the low 16 bits of uint32 words."""
    return (np.asarray(v, np.int64) & 0xFFFF).astype(np.uint32)


def _doubled(base) -> tuple[np.ndarray, np.ndarray]:
    """The generic lowering's doubled int16 weights [c][ky][kx] (its sweep orientation) and doubled biases."""
    w = base.arrays["fw"].view(np.int16).reshape(-1, 3, 3).astype(np.int32)
    return w, 2 * base.arrays["rq"].reshape(-1, 5)[:, 0].astype(np.int64)


def edge_rows(p) -> bool:
    """Whether the fused kernel takes the image's top and bottom padding into two extra weight sets instead of
    writing zero-point rows into its window (as fast/edgec_depthwise_conv2d_3x3_fused.c decides it): only the first
    output row's window reaches above the image and only the last one's below."""
    s, pt, rows, n = p["stride"], p["pad_top"], p["rows"], p["out_rows"]
    return n >= 2 and 0 <= pt <= s and (n - 2) * s - pt + 3 <= rows


NOT_TOP, NOT_BOTTOM = 1, 2       # a call's `band` (edgec_nn.h EDGEC_DW3X3_NOT_TOP, EDGEC_DW3X3_NOT_BOTTOM)


def band_flags(p, o0: int, o1: int, lo: int) -> int:
    """The `band` of a call computing output rows [o0, o1) of the layer whose whole-image params (sweeping rows) are
    `p`, its input from the image's row `lo` (edgec/plan/patching.py): the fused kernel takes the image's edge weight
    sets (`edge_rows`, built for the whole image) on the call's first row only where it is the image's first, and on
    its last only where it is the image's last and the call's rows fall in the window's slots as the image's do
    (the kernel keeps input row r in slot r mod 3, counted from the call's first row: `lo` a multiple of 3; else
    that band writes the padded rows as zero points, the generic path). 0 for the whole image."""
    whole = edge_rows(p)
    top = whole and o0 == 0
    bottom = whole and o1 == p["out_rows"] and lo % 3 == 0
    return (0 if top else NOT_TOP) | (0 if bottom else NOT_BOTTOM)


def fused_3x3(op: Op, base):
    """The depthwise 3x3 with requantization fused into the store (edgec_depthwise_conv2d_3x3_fused_s8): per
    channel 5 sets of 6 words: for each rotation rot of the window (slot i holds kernel row (i - rot) mod 3; rows a,
    b, c in slots 0, 1, 2) the words (a0, b0) (a1, b1) (a2, b2) (c0, c1) (shift, c2) and 2 * bias, the weights the
    doubled int16 values of the generic lowering, shift the channel's requantization right shift (the Arm loop's ASR
    reads it from the low byte of the word whose high half it multiplies: one register less); then the sets of the
    first and the last output row (`edge_rows`): their rotation's, with the kernel rows that fall on the padding
    zeroed and their zero-point products added to the bias (the kernel then never writes padded rows). A row band
    of the layer (a patch-based stage) uses them only on the image's own first and last rows (`band_flags`)."""
    w, bias2 = _doubled(base)
    shift = base.arrays["rq"].reshape(-1, 5)[:, 4]
    p = base.params
    words = np.zeros((len(w), 5, 6), np.uint32)

    def put(k, rot, wk, b2):
        a, b, c = (wk[:, (3 + i - rot) % 3] for i in range(3))
        for kx in range(3):
            words[:, k, kx] = _half(a[:, kx]) | _half(b[:, kx]) << 16
        words[:, k, 3] = _half(c[:, 0]) | _half(c[:, 1]) << 16
        words[:, k, 4] = _half(shift) | _half(c[:, 2]) << 16
        words[:, k, 5] = (b2 & 0xFFFFFFFF).astype(np.uint32)

    for rot in range(3):
        put(rot, rot, w, bias2)
    for k, oy in ((3, 0), (4, p["out_rows"] - 1)):
        r0 = oy * p["stride"] - p["pad_top"]
        off = np.array([not 0 <= r0 + ky < p["rows"] for ky in range(3)])
        if not edge_rows(p):
            off[:] = False                     # (the sets are not used)
        wk = np.where(off[None, :, None], 0, w)
        put(k, r0 % 3, wk, bias2 + int(p["input_zp"]) * (w - wk).sum(axis=(1, 2)))
    return base.params, {**base.arrays, "fw": words.reshape(-1)}


def small_3x3(op: Op, base):
    """The depthwise 3x3 on a small image (edgec_depthwise_conv2d_3x3_small_s8): per channel, with w the generic
    lowering's doubled int16 [3][3] weights (its sweep orientation), the 7 words (w[0][kx], w[1][kx]) for kx 0..2,
    (w[1][kx], w[2][kx]) for kx 0..2 and 2 * bias."""
    w, bias2 = _doubled(base)
    words = np.zeros((len(w), 7), np.uint32)
    for kx in range(3):
        words[:, kx] = _half(w[:, 0, kx]) | _half(w[:, 1, kx]) << 16
        words[:, 3 + kx] = _half(w[:, 1, kx]) | _half(w[:, 2, kx]) << 16
    words[:, 6] = (bias2 & 0xFFFFFFFF).astype(np.uint32)
    return base.params, {**base.arrays, "fw": words.reshape(-1)}


def small_image(base) -> bool:
    """Whether the whole-image kernel takes a layer: its widened image (the scratch) is at most half the layer's
    input, as on the small images of a network's last layers (where it was measured faster than the rolling
    window, and the arena does not grow)."""
    p = base.params
    return SMALL.scratch_bytes(p) <= p["rows"] * p["cols"] * p["c"] // 2


def mve_3x3(op: Op, base):
    """edgec_depthwise_conv2d_3x3_mve_s8: per channel 16 int8 bytes, the 3x3 window of the sweep orientation laid
    over a strip tile of 4 input rows a column (byte 4 * kx + ky), zeros elsewhere, after one zero byte: the 16
    bytes from a channel's first byte are its window shifted to the tile's rows 1..3 (the next output row at
    stride 1, from the same load; the byte before a channel's window is 0: the zero byte or the last one of the
    channel before)."""
    c = base.params["c"]
    w = (base.arrays["fw"].view("<i2").reshape(c, 3, 3) // 2).astype(np.int8)    # undo the DSP path's doubling
    tiles = np.zeros((c, 4, 4), np.int8)                                           # [c][kx][ky]
    tiles[:, :3, :3] = w.transpose(0, 2, 1)
    raw = np.concatenate([np.zeros(1, np.int8), tiles.reshape(-1), np.zeros(3, np.int8)])    # whole words
    return base.params, {"fw": fast.words(raw), "rq": base.arrays["rq"]}


def lower_3x3_4(op: Op):
    """edgec_depthwise_conv2d_3x3_s4: the s8 kernel's [c][3][3] weights (in its sweep orientation) packed two
    per byte; the kernel widens them into 18 * c bytes of scratch in front of the s8 kernel's."""
    low = lower_3x3(with_int8_weights(op))
    if low is None:
        return None
    params, arrays = low
    w = arrays["fw"].view(np.int16) // 2           # the s8 kernel's weights, doubled: halve them
    packed = pack_int4(w.astype(np.int8))
    packed = np.concatenate([packed, np.zeros(-packed.size % 4, np.int8)])
    return params, {**arrays, "fw": fast.words(packed)}


def _negs(params, rq) -> bool:
    """Whether every channel's requantization record has neg -1 (`rq`: edgec_rq rows bias, mult, khi, neg, shift)."""
    return bool(np.all(np.asarray(rq).reshape(-1, 5)[:params["c"], 3] == -1))


def fused_entry(params, rq) -> str:
    """The C entry point a fused call names (fast/edgec_depthwise_conv2d_3x3_fused.c, as its run-time entry chooses
    per group of 4 channels): the assembly rows of its stride (the whole int8 range, every record's neg -1), the
    full range with some neg 0 (`full_anyneg`: the assembly and the C row), a clamped range (`clamped`, with
    `_anyneg` where some neg is 0). The linker then drops the other rows (up to 2.4 kB). A row band of 2 rows or
    more whose `band` is not 0 (band_flags) names the `band_` entry of the same rows: the whole image's entries are
    the code they were before bands, instruction for instruction."""
    negs = _negs(params, rq)
    if (params["act_min"], params["act_max"]) != (-128, 127):
        loop = "clamped" if negs else "clamped_anyneg"
    else:
        loop = f"rows_s{params['stride']}" if negs else "full_anyneg"
    band = "band_" if params.get("band") and params["out_rows"] >= 2 else ""
    return f"edgec_depthwise_conv2d_3x3_fused_{band}{loop}_s8"


def small_entry(params, rq) -> str:
    """The C entry point a small-image call names (fast/edgec_depthwise_conv2d_3x3_small.c, as its run-time entry
    chooses): the whole int8 range with every record's neg -1 on the assembly of stride 1 and two output rows or
    more (`pairs`) or of stride 2 (`rows_s2`), else the C channels (`full`); the full range with some neg 0
    (`full_anyneg`: the assembly and the C channels); a clamped range (`clamped`, `_anyneg` where some neg is 0)."""
    negs = _negs(params, rq)
    if (params["act_min"], params["act_max"]) != (-128, 127):
        loop = "clamped" if negs else "clamped_anyneg"
    elif not negs:
        loop = "full_anyneg"
    elif params["stride"] == 2:
        loop = "rows_s2"
    else:
        loop = "pairs" if params["out_rows"] >= 2 else "full"
    return f"edgec_depthwise_conv2d_3x3_small_{loop}_s8"


def _named(entry):
    """`Kernel.call` of a kernel whose call names the entry `entry(params, rq)` gives."""
    def call(op, low, site) -> str:
        return cemit.fast_weighted_call(entry(low.params, low.arrays["rq"]), site.prefix, site.inputs[0],
                                        site.scratch, site.output)
    return call


DEPTHWISE_3X3 = Kernel("edgec_depthwise_conv2d_3x3_s8", ("depthwise_conv2d",), FAST, cemit.fast_weighted,
                       lower=lower_3x3, struct=STRUCT)
# code each speed variant links in beside the generic kernels (arm-none-eabi-gcc -O2, Cortex-M4: its file's text), for
# the fit check; the variants are offered in this order. Each call names the entry of its code (small_entry,
# fused_entry), so a firmware links only that, and each assembly routine is a section of its own (h47-flash; before,
# every path: small 5,200 B, fused 2,980 B): small, VWW's two entries 2,124 B (one: 1,316 B), fused, KWS's one
# 1,420 B (VWW's two: 2,432 B)
SMALL = Kernel("edgec_depthwise_conv2d_3x3_small_s8", ("depthwise_conv2d",), VARIANT, _named(small_entry),
               base=DEPTHWISE_3X3, variant="small", isa=DSP, applies=small_image, lower=small_3x3, struct=STRUCT,
               code_bytes=2124, entries=tuple(f"edgec_depthwise_conv2d_3x3_small_{loop}_s8" for loop in (
                   "pairs", "rows_s2", "full", "full_anyneg", "clamped", "clamped_anyneg")))
def fused_reads(low) -> dict:
    """`Kernel.reads` of the fused kernel: each output row reads one of its channels' 5 weight sets (a fifth of
    `fw`) and every record (edgec/lower/weight_staging.py)."""
    rows = low.params["out_rows"]
    return {"fw": rows * low.arrays["fw"].nbytes // 5, "rq": rows * low.arrays["rq"].nbytes}


FUSED = Kernel("edgec_depthwise_conv2d_3x3_fused_s8", ("depthwise_conv2d",), VARIANT, _named(fused_entry),
               base=DEPTHWISE_3X3, variant="fused", lower=fused_3x3, struct=STRUCT, code_bytes=1420, reads=fused_reads,
               entries=tuple(f"edgec_depthwise_conv2d_3x3_fused_{band}{loop}_s8" for band in ("", "band_") for loop in (
                   "rows_s1", "rows_s2", "full_anyneg", "clamped", "clamped_anyneg")))
DEPTHWISE_MVE = Kernel("edgec_depthwise_conv2d_3x3_mve_s8", ("depthwise_conv2d",), HELIUM, cemit.fast_weighted,
                       base=DEPTHWISE_3X3, isa=MVE, lower=mve_3x3, struct=STRUCT)
DEPTHWISE_3X3_4 = Kernel("edgec_depthwise_conv2d_3x3_s4", ("depthwise_conv2d",), FAST, cemit.fast_weighted,
                         precision=INT4, lower=lower_3x3_4, struct=STRUCT)

KERNELS = [DEPTHWISE_3X3, SMALL, FUSED, DEPTHWISE_MVE, DEPTHWISE_3X3_4]
