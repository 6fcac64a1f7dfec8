"""Kernel variants chosen per layer after the fast lowering (edgec/lower/lowering.py): `--optimize speed` (the
default) runs each op on its fastest variant, `--optimize size` keeps the generic fast kernels (the smallest code).

A variant is the same op on another kernel with the same params struct and its constants repacked in the order
that kernel's inner loop reads them (runtime_c/fast/). Variants of one op are bit-exact with each other (the same
integer sums and requantization records), so a build may pick any of them: by default the first one listed, or
the one a tuning log (edgec/lower/tuning_records.py) measured fastest on the board.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from edgec import cheader
from edgec.lower import register_blocks
from edgec.ir import Op
from edgec.ops import fast

OPTIMIZE_CHOICES = ("speed", "size")
GENERIC = "generic"


def blocked_conv(lowered: dict) -> dict:
    """The im2col convolution with 2 pixels x 2 channels in registers (edgec_conv2d_blocked_s8): for each pair of
    output channels (an odd last one paired with a copy of itself) and each group of 4 taps t0..t3 (zero
    weights pad the groups to an even count), the int16 values t0, t2, t1, t3 of the first channel then of the
    second (the words SMLAD takes beside the widened input)."""
    p = lowered["params"]
    k4, out_c = p["k4"], p["out_c"]
    k8 = (k4 + 7) // 8 * 8
    w = np.zeros((out_c + out_c % 2, k8), np.int16)
    w[:out_c, :k4] = lowered["arrays"]["fw"].view(np.int8).reshape(out_c, k4)
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k8 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    return {**lowered, "kernel": "edgec_conv2d_blocked_s8",
            "scratch_bytes": cheader.buffer_size("edgec_conv2d_blocked_s8", p),
            "arrays": {**lowered["arrays"], "fw": fast.words(np.ascontiguousarray(w))}}


def pointwise_conv(lowered: dict) -> dict:
    """The blocked convolution with no loop over the taps (edgec_conv2d_pointwise_s8, for 1x1 convolutions): the
    blocked order without padding the groups to an even count, the weights and the records' bias doubled (the
    accumulator is then the 2 * acc the requantization multiplies), an odd last record followed by a copy."""
    p = lowered["params"]
    k4, out_c = p["k4"], p["out_c"]
    w = np.zeros((out_c + out_c % 2, k4), np.int16)
    w[:out_c] = 2 * lowered["arrays"]["fw"].view(np.int8).reshape(out_c, k4).astype(np.int16)
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k4 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    rq = lowered["arrays"]["rq"].reshape(-1, 5)
    rq = np.concatenate([rq, rq[-1:]] if out_c % 2 else [rq]) * np.array([2, 1, 1, 1, 1], rq.dtype)
    return {**lowered, "kernel": "edgec_conv2d_pointwise_s8",
            "scratch_bytes": cheader.buffer_size("edgec_conv2d_pointwise_s8", p),
            "arrays": {**lowered["arrays"], "fw": fast.words(np.ascontiguousarray(w)), "rq": rq}}


def window_conv(lowered: dict) -> dict:
    """The convolution without im2col (edgec_conv2d_window_s8): the blocked kernel's weight order, but each
    channel's taps as [ky][kx][c4] with the input channels padded to c4 (a multiple of 4) by zero weights, the
    order of the input rows the kernel widens into scratch (a ring of k_h rows of (out_w - 1) * stride_w + k_w
    entries, each 2 * c4 int16: a pixel and the one stride_w to its right), then the k_h * k_w * c4 words the
    kernel gathers the taps of 2 output pixels into."""
    p = lowered["params"]
    k_h, k_w, in_c, out_c = p["k_h"], p["k_w"], p["in_c"], p["out_c"]
    c4 = (in_c + 3) // 4 * 4
    taps = k_h * k_w * in_c
    w = np.zeros((out_c + out_c % 2, k_h, k_w, c4), np.int16)
    w[:out_c, :, :, :in_c] = lowered["arrays"]["fw"].view(np.int8).reshape(out_c, -1)[:, :taps].reshape(
        out_c, k_h, k_w, in_c)
    if out_c % 2:
        w[out_c] = w[out_c - 1]
    w = w.reshape(-1, 2, k_h * k_w * c4 // 4, 4)[..., [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    return {**lowered, "kernel": "edgec_conv2d_window_s8",
            "scratch_bytes": cheader.buffer_size("edgec_conv2d_window_s8", p),
            "arrays": {**lowered["arrays"], "fw": fast.words(np.ascontiguousarray(w))}}


def window_fits(lowered: dict) -> bool:
    """The window kernel is for kernels larger than 1x1 (a 1x1 convolution reads its pixels without im2col) whose
    channels padded to a multiple of 4 add at most a third more taps (1 or 2 input channels, as in KWS's first
    layer, would multiply its work: the im2col kernels pack their taps densely)."""
    p = lowered["params"]
    c4 = (p["in_c"] + 3) // 4 * 4
    return p["k_h"] * p["k_w"] > 1 and 3 * c4 <= 4 * p["in_c"]


def wide_fc(lowered: dict) -> dict:
    """The packed fully connected layer on int16 weights (edgec_fully_connected_wide_s8): the same order, each group
    of 4 weights w0..w3 of a row as the int16 values w0, w2, w1, w3."""
    w = lowered["arrays"]["fw"].view(np.int8).astype(np.int16).reshape(-1, 4)[:, [0, 2, 1, 3]]
    return {**lowered, "kernel": "edgec_fully_connected_wide_s8",
            "scratch_bytes": cheader.buffer_size("edgec_fully_connected_wide_s8", lowered["params"]),
            "arrays": {**lowered["arrays"], "fw": fast.words(np.ascontiguousarray(w))}}


def _half(v) -> np.ndarray:
    """int16 values as the low 16 bits of uint32 words."""
    return (np.asarray(v, np.int64) & 0xFFFF).astype(np.uint32)


def fused_depthwise(lowered: dict) -> dict:
    """The depthwise 3x3 with requantization fused into the store (edgec_depthwise_conv2d_3x3_fused_s8): per
    channel and rotation rot of the window (slot i holds kernel row (i - rot) mod 3; rows a, b, c in slots 0, 1, 2)
    the 6 words (a0, b0) (a1, b1) (a2, b2) (c0, c1) (c2, 0) and 2 * bias, the weights the doubled int16 values of
    the generic lowering."""
    w = lowered["arrays"]["fw"].view(np.int16).reshape(-1, 3, 3).astype(np.int32)   # [c][ky][kx], doubled
    bias2 = 2 * lowered["arrays"]["rq"].reshape(-1, 5)[:, 0].astype(np.int64)
    words = np.zeros((len(w), 3, 6), np.uint32)
    for rot in range(3):
        a, b, c = (w[:, (3 + i - rot) % 3] for i in range(3))
        for kx in range(3):
            words[:, rot, kx] = _half(a[:, kx]) | _half(b[:, kx]) << 16
        words[:, rot, 3] = _half(c[:, 0]) | _half(c[:, 1]) << 16
        words[:, rot, 4] = _half(c[:, 2])
        words[:, rot, 5] = (bias2 & 0xFFFFFFFF).astype(np.uint32)
    return {**lowered, "kernel": "edgec_depthwise_conv2d_3x3_fused_s8",
            "scratch_bytes": cheader.buffer_size("edgec_depthwise_conv2d_3x3_fused_s8", lowered["params"]),
            "arrays": {**lowered["arrays"], "fw": words.reshape(-1)}}


# kernel of the generic lowering -> (variant name, builder), fastest first by default
SPEED_VARIANTS = {"edgec_conv2d_im2col_s8": (("blocked4", register_blocks.blocked4_conv), ("window", window_conv),
                                             ("pointwise", pointwise_conv), ("blocked", blocked_conv)),
                  "edgec_fully_connected_packed_s8": (("rows8", register_blocks.rows8_fc), ("wide", wide_fc)),
                  "edgec_depthwise_conv2d_3x3_s8": (("fused", fused_depthwise),)}


# code each speed variant links in beside the generic kernels (arm-none-eabi-gcc -O2, Cortex-M4: its row
# functions and packing-free loops; measured on the MLPerf Tiny builds; blocked4 and rows8: their files' text;
# their portable C on the Cortex-M3 is up to twice that), for the fit check's code estimate
VARIANT_CODE_BYTES = {"blocked": 1024, "window": 4288, "wide": 512, "fused": 2048, "blocked4": 3312, "rows8": 2428,
                      "pointwise": 4400}
# the variants that take only some of their kernel's lowerings (the others take every one)
APPLIES = {"blocked4": register_blocks.pointwise_or_single_channel, "window": window_fits,
           "pointwise": lambda lowered: lowered["params"]["k_h"] == 1 and lowered["params"]["k_w"] == 1}


def variant_code_bytes(ops) -> int:
    """The code the speed variants the ops run on add, each variant counted once."""
    return sum(VARIANT_CODE_BYTES.get(v, 0) for v in {op.lowered.get("variant") for op in ops if op.lowered})


def variants(lowered: dict | None) -> list[str]:
    """The variant names an op lowered this way can run: the generic kernel first, then the speed variants."""
    if not lowered:
        return []
    return [GENERIC] + [name for name, _ in SPEED_VARIANTS.get(lowered["kernel"], ())
                        if APPLIES.get(name, bool)(lowered)]


def apply(lowered: dict, variant: str) -> dict:
    """The lowering of one op on a named variant (GENERIC: unchanged)."""
    if variant == GENERIC:
        return lowered
    build = dict(SPEED_VARIANTS.get(lowered["kernel"], ()))[variant]
    return build(lowered)


def default_variant(lowered: dict | None, optimize: str) -> str:
    """What a build uses without a tuning record: the first speed variant, or the generic kernel for size."""
    names = variants(lowered)
    return names[1] if optimize == "speed" and len(names) > 1 else GENERIC


def specialize(op: Op, optimize: str, choice: str | None = None) -> None:
    """Put op.lowered on its variant: `choice` (a tuning record) if it is one of its variants, else the default."""
    names = variants(op.lowered)
    if not names:
        return
    variant = choice if choice in names and optimize == "speed" else default_variant(op.lowered, optimize)
    chosen = apply(op.lowered, variant)
    extra = constant_bytes(chosen) - constant_bytes(op.lowered)
    op.lowered = {**chosen, "variant": variant, "variants": names, "extra_bytes": extra,
                  "signature": signature(op, op.lowered)}


def signature(op: Op, generic: dict) -> str:
    """A layer's timing signature (the tuning log's key beside the board): its kind, its generic fast kernel and
    that kernel's params (every shape, stride, padding and zero point; not the weights' values), hashed."""
    text = json.dumps([op.kind, generic["kernel"], generic["params"]], sort_keys=True)
    return f"{op.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def constant_bytes(lowered: dict) -> int:
    """Bytes of a lowering's constant arrays (what the generated code holds in flash)."""
    return sum(a.nbytes for a in lowered["arrays"].values())


def summary(ops) -> dict:
    """What the speed variants cost: how many ops run on each variant and the flash their repacked constants
    add over the generic kernels' (the `--optimize size` build)."""
    ops = list(ops)
    lowered = [op.lowered for op in ops if op.lowered and "variant" in op.lowered]
    counts: dict[str, int] = {}
    for low in lowered:
        counts[low["variant"]] = counts.get(low["variant"], 0) + 1
    return {"variants": counts, "extra_constant_bytes": sum(low["extra_bytes"] for low in lowered),
            "layers": {low_op.name: {k: low_op.lowered[k] for k in ("variant", "variants", "signature")}
                       for low_op in ops if low_op.lowered and len(low_op.lowered.get("variants", ())) > 1}}
