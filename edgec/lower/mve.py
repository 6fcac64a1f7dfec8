"""Lowering onto the Helium (MVE) kernels (runtime_c/fast/edgec_*_mve.c) for boards whose core has them
(profile fpu "fp+mve": Cortex-M55), a third path beside the DSP and portable fast kernels.

Only `edgec build` lowers onto them (it compiles with the board's flags); `edgec export` keeps the DSP/portable
kernels, as an exported library may be compiled without Helium flags (the _mve kernels would then be missing).

It starts from the family's generic lowering (edgec/ops/<family>.py `lower`: folded bias, requantization
records, the checks that the fast path is exact) and changes the kernel and, where Helium reads them in
another order, the packed weights:
- convolution: pairs of output channels, [pair][k16 / 16][2][16] int8, k rounded up to 16 and zero padded
  (VMLADAVA takes 16 raw int8 taps of one pixel at a time; the k4 field holds k16), the
  requantization records regrouped 4 channels per vector (`rq_vectors`); scratch: every channel's accumulators
  of 4 pixels, and their taps (int8, no widening);
- depthwise 3x3: int8 [3][3][c] in the sweep orientation instead of doubled int16 (long rows: one channel at
  a time, 4 output pixels per vector; short rows: 4 channels per vector); scratch: a strip of 4 input rows
  of one channel or 3 of 4 channels;
- fully connected: plain rows [out][k4] instead of blocks of 4 interleaved rows;
- add (the two inputs' 256-entry tables gathered 4 values at a time) and global average pooling (4 channels
  per vector): nothing re-packed.
"""
from __future__ import annotations

import numpy as np

from edgec import cheader
from edgec.ir import Op
from edgec.ops import fast

MVE_FPU = "fp+mve"


def has_mve(board) -> bool:
    """Does the board's core run Helium (its profile's cpu/fpu fields)?"""
    return board is not None and board.fpu == MVE_FPU


def rq_vectors(rq: np.ndarray) -> np.ndarray:
    """edgec_rq records [n][5] regrouped for 4-lane vector loads: [ceil(n/4)][field][4] (missing channels 0),
    the shift negated (VSHL by a negative count shifts right), returned as records [4 * ceil(n/4)][5] (the
    array type the generated code declares)."""
    n = len(rq)
    padded = np.zeros((-(-n // 4) * 4, 5), np.int32)
    padded[:n] = rq
    padded[:, 4] = -padded[:, 4]
    return np.ascontiguousarray(padded.reshape(-1, 4, 5).transpose(0, 2, 1)).reshape(-1, 5)


def lower_mve(op: Op, lowered: dict) -> dict:
    """The Helium kernel for an op the generic lowering accepted (the generic one where there is none)."""
    kernel, params, arrays = lowered["kernel"], lowered["params"], lowered["arrays"]
    if kernel == "edgec_conv2d_im2col_s8":
        k = params["k_h"] * params["k_w"] * params["in_c"]
        k16, pairs = -(-k // 16) * 16, -(-params["out_c"] // 2)
        wp = np.zeros((2 * pairs, k16), np.int8)
        wp[:params["out_c"], :k] = op.arrays["weights"].reshape(params["out_c"], k)
        wp = wp.reshape(pairs, 2, k16 // 16, 16).transpose(0, 2, 1, 3)        # [pair][block][channel][16]
        return {**lowered, "kernel": "edgec_conv2d_mve_s8", "params": {**params, "k4": k16},
                "scratch_bytes": cheader.buffer_size("edgec_conv2d_mve_s8", {**params, "k4": k16}),
                "arrays": {"fw": fast.words(np.ascontiguousarray(wp)), "rq": rq_vectors(arrays["rq"])}}
    if kernel == "edgec_depthwise_conv2d_3x3_s8":
        c = params["c"]
        w = (arrays["fw"].view("<i2").reshape(c, 3, 3) // 2).astype(np.int8)    # undo the DSP path's doubling
        return {**lowered, "kernel": "edgec_depthwise_conv2d_3x3_mve_s8",
                "scratch_bytes": cheader.buffer_size("edgec_depthwise_conv2d_3x3_mve_s8", params),
                "arrays": {"fw": fast.words(np.ascontiguousarray(w.transpose(1, 2, 0))), "rq": arrays["rq"]}}
    if kernel == "edgec_fully_connected_packed_s8":
        n_out, n_in, k4 = params["out_features"], params["in_features"], params["k4"]
        wp = np.zeros((n_out, k4), np.int8)
        wp[:, :n_in] = op.arrays["weights"].reshape(n_out, n_in)
        return {**lowered, "kernel": "edgec_fully_connected_mve_s8",
                "scratch_bytes": cheader.buffer_size("edgec_fully_connected_mve_s8", params),
                "arrays": {"fw": fast.words(wp), "rq": arrays["rq"]}}
    if kernel == "edgec_add_lut_s8":
        return {**lowered, "kernel": "edgec_add_lut_mve_s8"}
    if kernel == "edgec_avg_pool_global_s8":
        return {**lowered, "kernel": "edgec_avg_pool_global_mve_s8"}
    return lowered
