"""The fast depthwise convolution of any window (runtime_c/fast/edgec_depthwise_conv2d_kxk.c): MCUNet's 5x5 and 7x7
layers at strides 1 and 2, and every 2-D window, stride, dilation and padding the depthwise 3x3 kernel
(depthwise3x3.py) and the 1-D kernel (line.py) do not take, as a kernel record; before it, such layers fell to the
reference kernel (about 15 instructions per MAC on qemu-cortex-m4). Its `--optimize speed` variant, `tile`
(runtime_c/fast/edgec_depthwise_conv2d_kxk_tile.c), runs the same constants on the input widened once per group of 4
channels into a scratch tile: MobileNetV3's and EfficientNet's 5x5 layers on small images."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op
from edgec.ops import cemit, fast
from edgec.ops.kernel import DSP, FAST, VARIANT, Kernel

STRUCT = "edgec_depthwise_conv2d_kxk_params"
FIELDS = ("in_h", "in_w", "out_h", "out_w", "k_h", "k_w", "stride_h", "stride_w", "dil_h", "dil_w", "pad_top",
          "pad_left")


def lower_kxk(op: Op):
    """Depth multiplier 1, channels a multiple of 4: weights [c / 4][k_h][k_w][w0, w2, w1, w3] int16 (the order the
    kernel's SXTB16 pairs read them), then per window row and channel the int32 zero-point term input_zp x the
    row's weights (a row wholly off the image adds it instead of reading k_w zero points); the requantization
    records with the input zero point folded in."""
    p = op.params
    if p["depth_multiplier"] != 1 or p["in_c"] % 4 or p["out_c"] != p["in_c"]:
        return None
    c, kh, kw = p["out_c"], p["k_h"], p["k_w"]
    w = np.asarray(op.arrays["weights"]).reshape(kh, kw, c)          # [ky][kx][c]
    got = fast.conv_like(op, np.ascontiguousarray(w.reshape(kh * kw, c).T))
    if got is None:
        return None
    packed = w.reshape(kh, kw, c // 4, 4)[..., [0, 2, 1, 3]].transpose(2, 0, 1, 3).astype(np.int16)
    rows = int(p["input_zp"]) * w.astype(np.int64).sum(axis=1)       # [ky][c]
    params = {**{k: int(p[k]) for k in FIELDS}, "c": c, "input_zp": int(p["input_zp"]),
              "act_min": got[0]["act_min"], "act_max": got[0]["act_max"]}
    fw = np.concatenate([fast.words(np.ascontiguousarray(packed)), rows.astype(np.int32).view(np.uint32).reshape(-1)])
    return params, {"fw": fw, "rq": got[1]}


KXK = Kernel("edgec_depthwise_conv2d_kxk_s8", ("depthwise_conv2d",), FAST, cemit.fast_weighted, lower=lower_kxk,
             struct=STRUCT)


def same_constants(op: Op, base):
    """The tile variant reads the generic lowering's constants as they are (no flash added)."""
    return base.params, base.arrays


# code the variant links in beside the generic kernel (arm-none-eabi-gcc -O2, Cortex-M4: its file's text); offered
# on cores with the Arm DSP extension (its portable path is correct everywhere, not measured faster there)
TILE = Kernel("edgec_depthwise_conv2d_kxk_tile_s8", ("depthwise_conv2d",), VARIANT, cemit.fast_weighted, base=KXK,
              variant="tile", isa=DSP, lower=same_constants, struct=STRUCT, code_bytes=1600)

KERNELS = [KXK, TILE]
