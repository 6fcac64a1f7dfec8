"""ONNX and TFLite import of the convolutions: Conv and ConvTranspose (zero insertion by a remap, then a
stride-1 convolution with the flipped kernel) through one emission that decides the kind from the groups,
BatchNormalization (folded into the Conv/Gemm before it, or a 1x1 depthwise convolution, or per-channel tables
over a batch), CONV_2D and DEPTHWISE_CONV_2D. `window` and `spatial` serve the pools too."""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT
from edgec.ops import movement, rearrange
from edgec.ops.lut import per_channel_affine
from edgec.ops.tflite16 import ACTIVATIONS, activations, check_zero_points


# ---- ONNX import
def window(cx, node, in_shape, out_shape, kernel, strides, dil):
    """(pad_top, pad_left) for a 1-D or 2-D window over a channels-last tensor."""
    nsp = len(kernel)
    auto = cx.attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begins = []
        for i in range(nsp):
            total = max((out_shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_shape[2 + i], 0)
            begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    elif auto == "VALID":
        begins = [0] * nsp
    else:
        pads = list(cx.attr(node, "pads", [0] * (2 * nsp)))
        begins = pads[:nsp]
    if any(p < 0 for p in begins):
        raise node_error(node, "negative padding is not supported")
    return (0, begins[0]) if nsp == 1 else (begins[0], begins[1])


def spatial(cx, node, x):
    """Input/output sizes as (h, w, c) for a 1-D (h = 1) or 2-D NCHW op."""
    in_shape, out_shape = cx.shape(x, node), cx.shape(node.output[0], node)
    if len(in_shape) not in (3, 4) or in_shape[0] != 1:
        raise node_error(node, f"input shape {list(in_shape)} is not [1, C, L] or [1, C, H, W]")
    if len(in_shape) == 3:
        return in_shape, out_shape, (1, in_shape[2], in_shape[1]), (1, out_shape[2], out_shape[1])
    return (in_shape, out_shape, (in_shape[2], in_shape[3], in_shape[1]),
            (out_shape[2], out_shape[3], out_shape[1]))


def import_conv(cx, node):
    x, w_name = node.input[0], node.input[1]
    x, extra = cx.padded_for_conv.get(x, (x, (0, 0)))    # a zero Pad before the conv: its padding
    if w_name not in cx.consts:
        raise node_error(node, "the weights are not constant")
    w = cx.consts[w_name].astype(np.float32)
    bias = cx.consts[node.input[2]].astype(np.float32) if len(node.input) > 2 and node.input[2] else \
        np.zeros(w.shape[0], np.float32)
    in_shape, out_shape, _, _ = spatial(cx, node, x)     # checks the ranks
    nsp = len(in_shape) - 2
    kernel = list(w.shape[2:])
    strides = list(cx.attr(node, "strides", [1] * nsp))
    dil = list(cx.attr(node, "dilations", [1] * nsp))
    pad_top, pad_left = window(cx, node, in_shape, out_shape, kernel, strides, dil)
    begins = [pad_left + extra[1]] if nsp == 1 else [pad_top + extra[0], pad_left + extra[1]]
    conv_from(cx, node, x, node.output[0], w, bias, strides, dil, begins, cx.attr(node, "group", 1))


def import_conv_transpose(cx, node):
    x, y = node.input[0], node.output[0]
    w = cx.const_input(node, 1).astype(np.float32)          # [C_in, C_out/g, k...]
    shape, yshape = cx.shape(x, node), cx.shape(y, node)
    nsp = len(shape) - 2
    if shape[0] != 1:
        raise node_error(node, f"batch {shape[0]}: convolutions run on a batch of 1")
    if nsp not in (1, 2):
        raise node_error(node, "only 1-D and 2-D ConvTranspose are supported")
    g = int(cx.attr(node, "group", 1))
    kernel = list(w.shape[2:])
    strides = list(cx.attr(node, "strides", [1] * nsp))
    dil = list(cx.attr(node, "dilations", [1] * nsp))
    outpad = list(cx.attr(node, "output_padding", [0] * nsp))
    auto = cx.attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    pads = list(cx.attr(node, "pads", [0] * (2 * nsp)))
    begins = []
    for i in range(nsp):
        total = strides[i] * (shape[2 + i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 - yshape[2 + i]
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
        elif auto == "VALID":
            begins.append(0)
        else:
            begins.append(pads[i])
    # zero insertion + padding: a stride-1 convolution with the flipped kernel gives the result
    mid = y + "__upsampled"
    mshape = tuple(shape[:2]) + tuple(yshape[2 + i] + (kernel[i] - 1) * dil[i] for i in range(nsp))
    cx.shapes[mid] = mshape

    def fn(i):
        lead = (kernel[i] - 1) * dil[i] - begins[i]

        def idx(m):
            j = np.arange(m) - lead
            ok = (j >= 0) & (j % strides[i] == 0) & (j // strides[i] < shape[2 + i])
            return np.where(ok, j // strides[i], -1)
        return idx
    movement.remap_axes(cx, node, x, mid, [lambda m: np.arange(m), lambda m: np.arange(m)] +
                        [fn(i) for i in range(nsp)])
    cx.graph.retensor(cx.values[mid][0], source=x)
    cin, cog = w.shape[0], w.shape[1]
    wt = w.reshape((g, cin // g, cog) + w.shape[2:]).swapaxes(1, 2).reshape((g * cog, cin // g) + w.shape[2:])
    wt = np.flip(wt, axis=tuple(range(2, 2 + nsp))).copy()
    bias = cx.const_input(node, 2, np.zeros(g * cog, np.float32))
    conv_from(cx, node, mid, y, wt, np.asarray(bias, np.float32), [1] * nsp, dil, [0] * nsp, g)


def conv_from(cx, node, x, y, w, bias, strides, dil, begins, group):
    """A convolution of ONNX value x (NCHW / NCW) with weights [oc, ic/g, k...] into y."""
    in_shape, out_shape = cx.shape(x, node), cx.shape(y, node)
    nsp = len(in_shape) - 2
    kernel = list(w.shape[2:])
    ic, oc = in_shape[1], out_shape[1]
    if nsp == 1:
        w = w[:, :, None, :]
        kernel, strides, dil, begins = [1] + kernel, [1] + list(strides), [1] + list(dil), [0] + list(begins)
        ihwc, ohwc = (1, in_shape[2], ic), (1, out_shape[2], oc)
    else:
        ihwc, ohwc = (in_shape[2], in_shape[3], ic), (out_shape[2], out_shape[3], oc)
    cl = (0,) + tuple(range(2, len(in_shape))) + (1,)
    xin = cx.as_layout(x, cl, node)
    out = cx.new_tensor(y, (1,) + tuple(out_shape[2:]) + (oc,), y)
    common = dict(bias=bias, in_hwc=ihwc, out_hwc=ohwc, kernel=tuple(kernel), stride=tuple(strides),
                  dilation=tuple(dil), pad=tuple(begins), act=NO_ACT)
    if group == 1:
        cx.emit("conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), **common)
    elif group == ic and w.shape[1] == 1:
        cx.emit("depthwise_conv2d", node, [xin], out, weights=w[:, 0].transpose(1, 2, 0).copy(),
                depth_multiplier=oc // ic, **common)
    else:
        cx.emit("group_conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), groups=group,
                **common)
    cx.values[y] = (out, cl)


def _channel_shape(kind: str, w: np.ndarray) -> tuple:
    """The shape a per-output-channel vector takes against canonical weights w."""
    return (1,) * (w.ndim - 1) + (-1,) if kind == "depthwise_conv2d" else (-1,) + (1,) * (w.ndim - 1)


def import_batch_normalization(cx, node):
    x = node.input[0]
    if cx.attr(node, "training_mode", 0) or any(o for o in node.output[1:]):
        raise node_error(node, "training-mode BatchNormalization is not supported (export in eval mode)")
    for i in node.input[1:5]:
        if i not in cx.consts:
            raise node_error(node, f"parameter '{i}' is not constant (training-mode BatchNorm?)")
    gamma, beta, mean, var = (cx.consts[i].astype(np.float64) for i in node.input[1:5])
    eps = float(cx.attr(node, "epsilon", 1e-5))
    s = gamma / np.sqrt(var + eps)
    shift = beta - mean * s
    prod = cx.fusable_producer(x)
    if prod is not None and cx.is_weighted(prod.kind) and prod.attrs["act"] == NO_ACT:
        w = prod.attrs["weights"].astype(np.float64)
        if prod.kind == "depthwise_conv2d":
            w = w * s
        else:
            w = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
        prod.attrs["weights"] = w.astype(np.float32)
        ws = prod.attrs.pop("weight_scale", None)    # a QDQ file's weights: its integers, each channel's scale x |s|
        if ws is not None and np.all(s != 0) and np.all(np.isfinite(s)) and np.all(     # (a -128 whose channel's
                w / (np.asarray(ws) * np.abs(s)).reshape(_channel_shape(prod.kind, w)) <= 127.5):   # s < 0: requantized)
            prod.attrs["weight_scale"] = np.asarray(ws, np.float64) * np.abs(s)   # (as ONNX Runtime's BatchNorm
            # after the conv of the file's weights: the integers are not quantized again)
        prod.attrs["bias"] = (prod.attrs["bias"] * s + shift).astype(np.float32)
        cx.rename_output(prod, x, node.output[0], cx.values[x][1])
        return
    # A BatchNorm edgec cannot fold: a 1x1 depthwise convolution does the same.
    in_shape = cx.shape(x, node)
    if in_shape[0] != 1:   # per-channel tables instead of a convolution over a batch of 1
        return per_channel_affine(cx, node, x, s, shift)
    c = in_shape[1]
    hwc = (in_shape[2], in_shape[3], c) if len(in_shape) == 4 else (1, int(np.prod(in_shape[2:])), c)
    xin = cx.as_layout(x, movement.channels_last(len(in_shape)), node)
    out = cx.new_tensor(node.output[0], cx.graph.tensors[xin].shape, node.output[0])
    cx.emit("depthwise_conv2d", node, [xin], out, weights=s.reshape(1, 1, c).astype(np.float32),
            bias=shift.astype(np.float32), in_hwc=hwc, out_hwc=hwc, kernel=(1, 1), stride=(1, 1),
            dilation=(1, 1), pad=(0, 0), act=NO_ACT, depth_multiplier=1)
    cx.values[node.output[0]] = (out, movement.channels_last(len(in_shape)))


# ---- TFLite import (edgec/frontend/tflite.py)
# A grouped CONV_2D of up to this many groups runs as a conv2d over block-diagonal weights (the same int32 sums: the
# zeros outside each group add nothing) on the fast convolution kernels, groups times the multiplications: at 1 to 1.5
# instructions a MAC they beat group_conv2d's portable kernel (21 a MAC on keras_grouped_shuffle_cifar's 1x1 layers
# of 4 and 8 groups, qemu-cortex-m4) up to about 16 groups; more groups keep group_conv2d.
BLOCK_DIAGONAL_GROUPS = 8


def block_diagonal_weights(wq: np.ndarray, groups: int) -> np.ndarray:
    """OHWI weights of in_c / groups channels as OHWI weights of all in_c channels, zeros outside each output
    channel's group."""
    oc, kh, kw, icg = wq.shape
    full = np.zeros((oc, kh, kw, icg * groups), wq.dtype)
    for o in range(oc):
        g = o // (oc // groups)
        full[o, :, :, g * icg:(g + 1) * icg] = wq[o]
    return full


def import_tflite_conv(tx, op):
    """CONV_2D (OHWI weights) and DEPTHWISE_CONV_2D ([1][k_h][k_w][out_c] weights), per-channel int8; int8 or
    int16 (16x8, edgec/ops/tflite16.py) activations."""
    o, depthwise, wq = tx.options(op), tx.op_name(op) == "DEPTHWISE_CONV_2D", tx.const(op, 1)
    x, out = activations(tx, op)
    (n, ih, iw, ic), (_, oh, ow, oc) = tx.tensor(x).shape, tx.shape(op.Outputs(0))
    final, span = out, (wq.shape[1] - 1) * o.DilationHFactor() + 1
    if n != 1:      # the blocks of a SPACE_TO_BATCH_ND (a dilated Keras conv): run stacked as rows, one image
        if o.StrideH() != 1 or span > 1 and o.Padding() != 1:
            raise tx.unsupported(f"a batch of {n} (a dilated convolution's blocks) under row stride {o.StrideH()} "
                                 "and SAME padding (edgec stacks a batch as rows for stride 1, or VALID padding)")
        if span > 1:    # VALID: the rows straddling two blocks are computed, then dropped
            out = rearrange.tflite_scratch(tx, final, (1, n * ih - span + 1, ow, oc), "stacked")
        ih, oh = n * ih, n * ih - span + 1
    win = tx.window(o, (ih, iw), (oh, ow), wq.shape[1:3])
    extra = {"depth_multiplier": oc // ic} if depthwise else {}
    kind = "depthwise_conv2d" if depthwise else "conv2d"
    if not depthwise and wq.shape[3] != ic:     # a grouped CONV_2D (Keras Conv2D(groups=g)): filters of ic / g
        groups = ic // wq.shape[3]              # channels, TFLite Micro's ConvPerChannel group by group
        if ic % wq.shape[3] or oc % groups or tx.tensor(x).dtype != "int8" or n != 1:
            raise tx.unsupported(f"a grouped CONV_2D ({ic} input channels, filters of {wq.shape[3]}, {oc} outputs, "
                                 f"{tx.tensor(x).dtype}, batch {n}): edgec groups int8 convolutions of batch 1 whose "
                                 "channels divide into the groups")
        if groups <= BLOCK_DIAGONAL_GROUPS:
            wq = block_diagonal_weights(wq, groups)
        else:
            kind, extra = "group_conv2d", {"groups": groups}
    arrays, w, b = tx.weighted(op, wq[0] if depthwise else wq, -1 if depthwise else 0, 2, out)
    if depthwise and tx.tensor(x).dtype == "int16" and arrays["bias"].dtype == np.int32:
        raise tx.unsupported("an int32 bias with int16 activations (TFLite Micro's 16x8 DEPTHWISE_CONV_2D takes int64)")
    tx.emit(kind, op, [x], out, arrays,
            tx.act_range(op, out, o.FusedActivationFunction()), weights=w, bias=b, in_hwc=(ih, iw, ic),
            out_hwc=(oh, ow, oc), **win, **extra)
    if out != final:
        rows = [b * (ih // n) + r for b in range(n) for r in range(ih // n - span + 1)]
        rearrange.tflite_remap_flat(tx, op, out, final, rows, ow * oc)



def import_tflite_transpose_conv(tx, op):
    """TRANSPOSE_CONV (output_shape, OHWI weights, input, optional bias), per-channel int8: the input spread
    `stride` apart with its zero point between (a remap; those taps add nothing, as in TFLite Micro's scatter),
    then a stride-1 conv2d with the kernel flipped: the same int32 sums, requantized per channel as TFLM's
    Prepare does (the double product of the scales); 16x8 (int16 activations): the 16x8 conv's int64 sums and bias."""
    from edgec.fixedpoint.scheme import quantize_multiplier
    from edgec.ops.rearrange import tflite_remap, tflite_scratch

    o, x, wq = tx.options(op), tx.input(op, 2, ACTIVATIONS), tx.const(op, 1)
    xt = tx.tensor(x)
    wide = xt.dtype == "int16"        # 16x8: an int64 sum and bias (an int16 bias widened), as TFLite Micro's
    out = tx.output(op, dtypes=(xt.dtype,))
    if wide:
        check_zero_points(tx, op, [x, out])
    if len(xt.shape) != 4 or xt.shape[0] != 1 or wq is None or wq.dtype != np.int8 or wq.ndim != 4:
        raise tx.unsupported("a [1, h, w, c] input and constant int8 OHWI weights")
    (_, ih, iw, ic), (oc, kh, kw, wic), (_, oh, ow, oc2) = xt.shape, wq.shape, tx.tensor(out).shape
    scales, zps, _ = tx.qparams(op.Inputs(1))
    if wic != ic or oc2 != oc or np.any(zps != 0) or scales.size not in (1, oc):
        raise tx.unsupported("weights [out_c, kh, kw, in_c], symmetric, one scale or one per output channel")
    st = (o.StrideH(), o.StrideW())
    pads = []
    for n_out, k, s in zip((oh, ow), (kh, kw), st):        # ComputePaddingHeightWidth, the output as conv input
        conv_out = (n_out + s - 1) // s if o.Padding() == 0 else (n_out - k + s) // s
        pads.append(max(0, (conv_out - 1) * s + k - n_out) // 2)
    if any(p > k - 1 for p, k in zip(pads, (kh, kw))):
        raise tx.unsupported(f"padding {pads} beyond the kernel {kh}x{kw}")
    axes = [(np.zeros(1, np.int64), 0)]
    for a, (n_in, k, s, p, n_out) in enumerate(zip((ih, iw), (kh, kw), st, pads, (oh, ow))):
        r = np.arange(n_out + k - 1) - (k - 1 - p)
        axes.append((np.where((r >= 0) & (r % s == 0) & (r // s < n_in), r // s, -1), a + 1))
    axes.append((np.arange(ic), 3))
    spread = tflite_scratch(tx, x, (1, oh + kh - 1, ow + kw - 1, ic), "spread")
    tflite_remap(tx, op, x, spread, axes, fill=xt.zero_point)
    ws = np.broadcast_to(scales, (oc,)).astype(np.float32)
    bias = tx.const(op, 3) if op.InputsLength() > 3 else None
    bias = np.zeros(oc, np.int64 if wide else np.int32) if bias is None else bias
    want = (np.int64, np.int16) if wide else (np.int32,)
    if bias.dtype not in want or bias.size != oc:
        raise tx.unsupported(f"bias must be {' or '.join(np.dtype(t).name for t in want)} with one value per output "
                             f"channel (got {bias.dtype} {bias.shape})")
    try:
        mult, shift = zip(*(quantize_multiplier(float(xt.scale) * float(s) / float(tx.tensor(out).scale)) for s in ws))
    except ValueError as exc:
        raise tx.unsupported(str(exc)) from None
    flipped = np.ascontiguousarray(wq[:, ::-1, ::-1, :])
    arrays = {"weights": flipped, "bias": bias.reshape(-1).astype(np.int64 if wide else np.int32),
              "mult": np.asarray(mult, np.int32),
              "shift": np.asarray(shift, np.int32)}
    w = (flipped.astype(np.float64) * ws.astype(np.float64).reshape(-1, 1, 1, 1)).astype(np.float32)
    b = (arrays["bias"].astype(np.float64) * float(xt.scale) * ws.astype(np.float64)).astype(np.float32)
    fused = o.FusedActivationFunction() if hasattr(o, "FusedActivationFunction") else 0
    tx.emit("conv2d", op, [spread], out, arrays, tx.act_range(op, out, fused), weights=w, bias=b,
            in_hwc=(oh + kh - 1, ow + kw - 1, ic), out_hwc=(oh, ow, oc), kernel=(kh, kw), stride=(1, 1),
            dilation=(1, 1), pad=(0, 0))
