"""The 3x3 convolution of a 3-channel input on cores with the DSP extension (an image model's first layer: VWW's
and the corpus MobileNets' 96x96x3 -> 48x48x8 stride 2, IC's 32x32x3 -> 32x32x16) as a speed variant of the fast
convolution (edgec/ops/conv/im2col.py): edgec_conv2d_rgb3x3_s8 (runtime_c/fast/edgec_conv2d_window.c) reads each
output pixel's 27 taps straight from the input, a kernel row's 9 bytes (3 pixels x 3 channels) as the groups of
bytes 0-3 and 4-7 and then the three rows' 9th bytes as one more group: 28 taps a pixel (14 k-steps of window4's
2x4 block) where window4 pads the channels to 4 (36 taps, 18 k-steps) and widens the rows into a ring first."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.conv.im2col import CONV_KINDS, IM2COL, STRUCT, all_negs, pass_reads
from edgec.ops.kernel import DSP, VARIANT, Kernel

TAPS = 28   # a pixel's taps: 3 kernel rows x 8 bytes, then (row 0's 9th byte, row 1's, row 2's, a zero weight)


def rgb3x3_fits(base) -> bool:
    """3 input channels and a 3x3 kernel (any stride; the fast convolution takes no dilation)."""
    p = base.params
    return p["in_c"] == 3 and (p["k_h"], p["k_w"]) == (3, 3)


def rgb_taps(w: np.ndarray) -> np.ndarray:
    """int8 weights [out_c][3][3][3] (OHWI) as [out_c][TAPS] in the kernel's tap order."""
    rows = w.reshape(len(w), 3, 9)
    return np.concatenate([rows[:, :, :8].reshape(len(w), 24), rows[:, :, 8], np.zeros((len(w), 1), w.dtype)],
                          axis=1)


def rgb3x3_conv(op: Op, base):
    """window4's stream of 4-channel blocks (fast.blocks: doubled biases, then per group of 4 taps the doubled words
    (w0, w2) of channels 0..3, then (w1, w3)) over the taps in rgb_taps' order."""
    p = base.params
    taps = base.arrays["fw"].view(np.int8).reshape(p["out_c"], p["k4"])[:, :27].reshape(p["out_c"], 3, 3, 3)
    words, rq = fast.blocks(rgb_taps(taps).astype(np.int16), base.arrays["rq"], 4, lambda g: g[..., [0, 2, 1, 3]]
                            .reshape(*g.shape[:2], 4, 2, 2).transpose(0, 1, 3, 2, 4))
    return p, {**base.arrays, "fw": words, "rq": rq}


def rgb3x3_entry(params, rq: np.ndarray) -> str:
    """The C entry point an rgb3x3 call names: `banded` (column bands: band_w below out_w, rgb3x3_band), else
    `clamped` (a range narrower than int8's), `row28` (the row assembly: out_c a multiple of 4, every record's neg
    -1) or `full`, as edgec_conv2d_rgb3x3_s8 chooses at run time; the linker then drops the other loops (1-2 kB)."""
    if params["band_w"] < params["out_w"]:
        return "edgec_conv2d_rgb3x3_banded_s8"
    if (params["act_min"], params["act_max"]) != (-128, 127):
        return "edgec_conv2d_rgb3x3_clamped_s8"
    row = params["out_c"] % 4 == 0 and all_negs(params, rq)
    return "edgec_conv2d_rgb3x3_row28_s8" if row else "edgec_conv2d_rgb3x3_full_s8"


def rgb3x3_band(params, limit: int):
    """`Kernel.narrow` of rgb3x3: its params with column bands (`band_w`, an even count of columns: whole pixel
    pairs) as wide as `limit` bytes of scratch allow, the bands of one width (the last one what is left), at least
    one pair; None where whole rows are within `limit` or the rows are no wider than a pair. The numbers are the
    same (the taps are read from the input, nothing is widened twice); a band costs a call of the row assembly."""
    out_w = int(params["out_w"])
    if RGB3X3.scratch_bytes(params) <= limit or out_w <= 2:
        return None
    width = 2
    for b in range(out_w - 1 - (out_w - 1) % 2, 2, -2):
        if RGB3X3.scratch_bytes({**params, "band_w": b}) <= limit:
            width = b
            break
    bands = -(-out_w // width)
    width = -(-out_w // bands)
    return {**params, "band_w": width + width % 2}


def rgb3x3_call(op, low, site) -> str:
    """`Kernel.call` of rgb3x3: the entry its params and records need (rgb3x3_entry)."""
    return cemit.fast_weighted_call(rgb3x3_entry(low.params, low.arrays["rq"]), site.prefix, site.inputs[0],
                                    site.scratch, site.output)


# code: the entry its call names (rgb3x3_entry) with the pairs' assembly, the row assembly of 28 words and the 2x4
# block's C (arm-none-eabi-gcc -O2, Cortex-M4, VWW's and IC's row28 build: 4,360 B; 5,714 B before h47-flash, every
# loop linked; shared with window4 where both run)
RGB3X3 = Kernel("edgec_conv2d_rgb3x3_s8", CONV_KINDS, VARIANT, rgb3x3_call, base=IM2COL, variant="rgb3x3",
                applies=rgb3x3_fits, lower=rgb3x3_conv, struct=STRUCT, isa=DSP, code_bytes=4360, narrow=rgb3x3_band,
                entries=tuple(f"edgec_conv2d_rgb3x3_{loop}_s8" for loop in ("clamped", "full", "row28", "banded")),
                reads=pass_reads(2))

KERNELS = [RGB3X3]
