"""Convolutions over channels-last tensors: `conv2d` (OHWI weights), `depthwise_conv2d` ([k_h][k_w][c] weights,
depth multiplier) and `group_conv2d`, int8, (conv2d, depthwise) TFLite 16x8 and int4 weights; 1-D convolutions
run as 2-D ones of height 1.

The family, module by module: `importers` (ONNX Conv, ConvTranspose, BatchNormalization; TFLite CONV_2D,
DEPTHWISE_CONV_2D), `twins` (quantizers, NumPy twins, float run, equalization), `windows` (the taps of a window,
shared with the pools) and its kernels as records (edgec/ops/kernel.py): `reference` (runtime_c/edgec_conv.c:
int8, 16x8, int4), `im2col` (the fast convolution, runtime_c/fast/, its speed variants blocked4, window,
pointwise and blocked, its Helium and int4 kernels), `rgb3x3` (its variant for 3-channel 3x3 first layers),
`depthwise3x3` (the fast depthwise 3x3, its fused speed variant, its Helium and int4 kernels), `line` (the fast
1-D depthwise convolution), `depthwise_kxk` (the fast depthwise convolution of any other window: 5x5, 7x7,
strides, dilations; its tile speed variant), `s16` (the fast TFLite 16x8 convolution and depthwise convolution:
int32 sums where the layer proves them exact).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.ir import Op
from edgec.ops.conv import depthwise3x3, depthwise_kxk, im2col, line, reference, rgb3x3, s16
from edgec.ops.conv.importers import (conv_from, import_batch_normalization, import_conv, import_conv_transpose,
                                      import_tflite_conv, import_tflite_transpose_conv, spatial, window)
from edgec.ops.conv.twins import (EQUALIZE, conv2d_s8, conv2d_s16, depthwise_conv2d_s8, depthwise_conv2d_s16,
                                  float_conv, group_conv2d_s8, quantize_conv, quantize_conv16, quantize_group_conv,
                                  run_conv, run_conv16)
from edgec.ops.conv.windows import float_windows, pad_windows
from edgec.ops.opdef import Int16, OpDef, always

__all__ = ["conv2d_s8", "conv2d_s16", "conv_from", "depthwise_conv2d_s8", "depthwise_conv2d_s16", "float_conv",
           "float_windows", "group_conv2d_s8", "pad_windows", "run_conv", "run_conv16", "spatial", "window"]


def _weights(op):
    return op.attrs.get("weights", op.arrays.get("weights"))


def _taps(op, depthwise: bool) -> int:
    """Multiply-accumulates per output value: from the weights, or from the parameters where a saved build's int4
    layer keeps neither float nor int8 weights (only the packed ones)."""
    w = _weights(op)
    if w is None:
        p = op.params
        return p["k_h"] * p["k_w"] * (1 if depthwise else p["in_c"])
    return int(np.prod(w.shape[:2] if depthwise else w.shape[1:]))


def block_diagonal(op: Op) -> Op:
    """A grouped convolution as a conv2d over its block-diagonal weights (OHWI, zeros outside each group): the same
    sums (the zeros add nothing) on the 16x8 conv kernel, groups times the multiplications (no 16x8 grouped kernel;
    a QDQ file's int16 grouped conv, edgec/frontend/qdq16.py)."""
    w, groups = np.asarray(op.attrs["weights"]), int(op.attrs["groups"])
    oc, kh, kw, icg = w.shape
    full = np.zeros((oc, kh, kw, icg * groups), w.dtype)
    for o in range(oc):
        k = o // (oc // groups)
        full[o, :, :, k * icg:(k + 1) * icg] = w[o]
    attrs = {k: v for k, v in op.attrs.items() if k != "groups"}
    return dataclasses.replace(op, kind="conv2d", attrs={**attrs, "weights": full})


OPS = [
    OpDef("conv2d", "conv", quantize_conv, float_conv, fuses_activation=True, weight_axis=0, bias_correction=True,
          adaptive_rounding=True, equalize=EQUALIZE, macs=lambda op, out: out.size * _taps(op, False),
          int16=Int16(quantize_conv16, qdq=always), row_bands="window"),
    OpDef("depthwise_conv2d", "conv", quantize_conv, float_conv, fuses_activation=True, weight_axis=-1,
          bias_correction=True, equalize=EQUALIZE, row_bands="window",
          macs=lambda op, out: out.size * _taps(op, True), int16=Int16(quantize_conv16, qdq=always)),
    OpDef("group_conv2d", "conv", quantize_group_conv, float_conv, fuses_activation=True, weight_axis=0,
          int16=Int16(quantize_conv16, qdq=always, as16=block_diagonal)),
]
# rgb3x3 before window4 among the fast convolution's variants (declared fastest first)
KERNELS = (reference.KERNELS + im2col.KERNELS[:1] + rgb3x3.KERNELS + im2col.KERNELS[1:] + depthwise3x3.KERNELS
           + line.KERNELS + depthwise_kxk.KERNELS + s16.KERNELS)

ONNX = {"Conv": import_conv, "ConvTranspose": import_conv_transpose,
        "BatchNormalization": import_batch_normalization}
TFLITE = {"CONV_2D": import_tflite_conv, "DEPTHWISE_CONV_2D": import_tflite_conv,
          "TRANSPOSE_CONV": import_tflite_transpose_conv}
