"""The float TFLite operators edgec/frontend/tflite_float.py translates into ONNX, one function each
(`tx`: its Translator): OPS maps a builtin operator's name to its translation. Each writes the ONNX nodes that
compute what TF Lite's float kernel computes (TFLite's SAME padding: the odd pixel at the bottom / right; an
average pool divides by the pixels inside the input; a fused activation after its layer)."""
from __future__ import annotations

import numpy as np

TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)        # the file's (channels-last) axes <-> channels-first


class Untranslatable(Exception):
    """An operator the translation cannot express (collected, then named together)."""

FUSED = {0: None, 1: ("Relu", {}), 2: ("Clip", (-1.0, 1.0)), 3: ("Clip", (0.0, 6.0)), 4: ("Tanh", {})}


def _ins(op) -> list[int]:
    return [int(k) for k in op.InputsAsNumpy()]


def _out(op) -> int:
    return int(op.OutputsAsNumpy()[0])


def _fused(tx, y: str, code: int, base: str) -> str:
    if code not in FUSED:
        raise Untranslatable(f"fused activation {code}")
    act = FUSED[code]
    if act is None:
        return y
    if act[0] == "Clip":
        lo, hi = (tx.initializer(np.float32(v), f"{base}_clip") for v in act[1])
        return tx.node("Clip", [y, lo, hi], base)
    return tx.node(act[0], [y], base)


def _pads(in_hw, out_hw, kernel, stride, dilation, same: bool) -> list[int]:
    """ONNX pads [top, left, bottom, right] of TFLite's padding (SAME: the odd pixel at the end)."""
    if not same:
        return [0, 0, 0, 0]
    total = [max(0, (o - 1) * s + (k - 1) * d + 1 - i) for i, o, k, s, d in zip(in_hw, out_hw, kernel, stride, dilation)]
    return [t // 2 for t in total] + [t - t // 2 for t in total]


def conv(tx, op):
    depthwise = tx.op_name(op) == "DEPTHWISE_CONV_2D"
    o = tx.options(op, "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions")
    x_k, w_k, *rest = _ins(op)
    y_k = _out(op)
    if not tx.is_const(w_k):
        raise Untranslatable("weights computed at run time")
    if len(tx.shape(x_k)) != 4:
        raise Untranslatable(f"input of rank {len(tx.shape(x_k))}")
    w = tx.const(w_k)                                   # [O, kh, kw, I] (depthwise: [1, kh, kw, C x M])
    cin = tx.shape(x_k)[3]
    w = w.transpose(3, 0, 1, 2) if depthwise else w.transpose(0, 3, 1, 2)     # ONNX [O, I / group, kh, kw]
    stride, dil = [o.StrideH(), o.StrideW()], [o.DilationHFactor(), o.DilationWFactor()]
    kernel = list(w.shape[2:])
    pads = _pads(tx.shape(x_k)[1:3], tx.shape(y_k)[1:3], kernel, stride, dil, o.Padding() == 0)
    ins = [tx.value(x_k, "nchw"), tx.initializer(w, f"{tx.tname(w_k)}_oihw")]
    if rest and rest[0] >= 0:
        ins.append(tx.initializer(tx.const(rest[0]).reshape(-1), tx.tname(rest[0])))
    base = tx.tname(y_k)
    y = tx.node("Conv", ins, f"{base}_conv" if o.FusedActivationFunction() else base, kernel_shape=kernel,
                strides=stride, dilations=dil, pads=pads, group=cin if depthwise else cin // w.shape[1])
    tx.set(y_k, _fused(tx, y, o.FusedActivationFunction(), base), "nchw")


def transpose_conv(tx, op):
    """TRANSPOSE_CONV (output shape, weights [O, kh, kw, I], input, bias): an ONNX ConvTranspose, TF Lite's padding
    (the forward convolution's from the output size: the odd pixel at the end) as pads and output_padding."""
    o = tx.options(op, "TransposeConvOptions")
    ins, y_k = _ins(op) + [-1], _out(op)
    w_k, x_k, b_k = ins[1], ins[2], ins[3]
    if not tx.is_const(w_k) or len(tx.shape(x_k)) != 4:
        raise Untranslatable("weights computed at run time, or an input not 4-D")
    w = tx.const(w_k).transpose(3, 0, 1, 2)                       # ONNX [I, O, kh, kw]
    stride, kernel = [o.StrideH(), o.StrideW()], list(w.shape[2:])
    in_hw, out_hw = tx.shape(x_k)[1:3], tx.shape(y_k)[1:3]
    begin = _pads(out_hw, in_hw, kernel, stride, [1, 1], o.Padding() == 0)[:2]
    end = [s * (i - 1) + k - b - out for s, i, k, b, out in zip(stride, in_hw, kernel, begin, out_hw)]
    args = [tx.value(x_k, "nchw"), tx.initializer(w, f"{tx.tname(w_k)}_iohw")]
    if b_k >= 0:
        args.append(tx.initializer(tx.const(b_k).reshape(-1), tx.tname(b_k)))
    base = tx.tname(y_k)
    code = o.FusedActivationFunction()
    y = tx.node("ConvTranspose", args, f"{base}_conv" if code else base, kernel_shape=kernel, strides=stride,
                pads=begin + [max(e, 0) for e in end], output_padding=[max(-e, 0) for e in end])
    tx.set(y_k, _fused(tx, y, code, base), "nchw")


def prelu(tx, op):
    """PRELU: an ONNX PRelu, its constant slope broadcast in the input's order."""
    x_k, a_k = _ins(op)[:2]
    y_k, order = _out(op), tx.layout(x_k)
    rank = len(tx.shape(x_k))
    tx.set(y_k, tx.node("PRelu", [tx.value(x_k, order), tx.operand(a_k, order, rank)], tx.tname(y_k)), order,
           tx.shape(x_k))


def blocks(tx, op):
    """SPACE_TO_DEPTH, DEPTH_TO_SPACE: ONNX's (channels-first; TF's depth order is ONNX's DCR)."""
    kind = tx.op_name(op)
    name = "SpaceToDepth" if kind == "SPACE_TO_DEPTH" else "DepthToSpace"
    block = tx.options(op, f"{name}Options").BlockSize()
    x_k, y_k = _ins(op)[0], _out(op)
    tx.set(y_k, tx.node(name, [tx.value(x_k, "nchw")], tx.tname(y_k), blocksize=block), "nchw")


def log_softmax(tx, op):
    x_k, y_k = _ins(op)[0], _out(op)
    tx.set(y_k, tx.node("LogSoftmax", [tx.value(x_k)], tx.tname(y_k), axis=-1), shape=tx.shape(x_k))


def add_n(tx, op):
    ins, y_k = [k for k in _ins(op) if k >= 0], _out(op)
    order = "nchw" if all(tx.layout(k) == "nchw" for k in ins if k in tx.values) and len(tx.shape(y_k)) == 4 \
        else "nhwc"
    tx.set(y_k, tx.node("Sum", [tx.operand(k, order, len(tx.shape(y_k))) for k in ins], tx.tname(y_k)), order)


def cumsum(tx, op):
    x_k, a_k = _ins(op)[:2]
    y_k, o = _out(op), tx.options(op, "CumsumOptions")
    axis = tx.initializer(np.asarray(tx.raw(a_k)).astype(np.int64).reshape(()), f"{tx.tname(y_k)}_axis")
    tx.set(y_k, tx.node("CumSum", [tx.value(x_k), axis], tx.tname(y_k), exclusive=int(bool(o and o.Exclusive())),
                        reverse=int(bool(o and o.Reverse()))), shape=tx.shape(x_k))


def pool(tx, op):
    o = tx.options(op, "Pool2DOptions")
    x_k, y_k = _ins(op)[0], _out(op)
    kernel, stride = [o.FilterHeight(), o.FilterWidth()], [o.StrideH(), o.StrideW()]
    pads = _pads(tx.shape(x_k)[1:3], tx.shape(y_k)[1:3], kernel, stride, [1, 1], o.Padding() == 0)
    average = tx.op_name(op) == "AVERAGE_POOL_2D"
    base = tx.tname(y_k)
    extra = {"count_include_pad": 0} if average else {}
    y = tx.node("AveragePool" if average else "MaxPool", [tx.value(x_k, "nchw")],
                f"{base}_pool" if o.FusedActivationFunction() else base, kernel_shape=kernel, strides=stride,
                pads=pads, **extra)
    tx.set(y_k, _fused(tx, y, o.FusedActivationFunction(), base), "nchw")


def fully_connected(tx, op):
    o = tx.options(op, "FullyConnectedOptions")
    x_k, w_k, *rest = _ins(op)
    y_k = _out(op)
    units, features = tx.shape(w_k)                     # [units, features]
    base = tx.tname(y_k)
    x = tx.node("Reshape", [tx.value(x_k), tx.initializer(np.array([-1, features], np.int64), f"{base}_rows")],
                f"{base}_rows")
    bias = rest and rest[0] >= 0
    if tx.is_const(w_k):
        ins = [x, tx.initializer(tx.const(w_k), tx.tname(w_k))]
        if bias:
            ins.append(tx.initializer(tx.const(rest[0]).reshape(-1), tx.tname(rest[0])))
        y = tx.node("Gemm", ins, f"{base}_gemm", transB=1)
    else:      # weights computed at run time (TF 2.4's converter writes a MatMul of two activations this way)
        wt = tx.node("Transpose", [tx.value(w_k)], f"{base}_wt", perm=[1, 0])
        y = tx.node("MatMul", [x, wt], f"{base}_matmul")
        if bias:
            b = tx.value(rest[0]) if not tx.is_const(rest[0]) else tx.initializer(tx.const(rest[0]).reshape(-1),
                                                                                   tx.tname(rest[0]))
            y = tx.node("Add", [y, b], f"{base}_bias")
    shape = tx.out_shape(y_k, int(np.prod(tx.shape(x_k))) // features * units)
    if len(shape) != 2:
        y = tx.node("Reshape", [y, tx.initializer(np.array(shape, np.int64), f"{base}_shape")], f"{base}_shaped")
    tx.set(y_k, _fused(tx, y, o.FusedActivationFunction(), base), shape=shape)


BINARY = {"ADD": ("Add", "AddOptions"), "SUB": ("Sub", "SubOptions"), "MUL": ("Mul", "MulOptions"),
          "DIV": ("Div", "DivOptions"), "MAXIMUM": ("Max", None), "MINIMUM": ("Min", None),
          "SQUARED_DIFFERENCE": ("Sub", None), "POW": ("Pow", None),
          # a bool mask (ONNX comparisons: edgec/ops/where.py), read by a SELECT_V2
          "GREATER": ("Greater", None), "GREATER_EQUAL": ("GreaterOrEqual", None), "LESS": ("Less", None),
          "LESS_EQUAL": ("LessOrEqual", None), "EQUAL": ("Equal", None), "SELECT_V2": ("Where", None),
          # TF1's Select: x and y of one shape, the condition of that shape, a scalar, or one value per row (its
          # length x's first axis: applied along axis 0, where SELECT_V2 / ONNX broadcast from the last)
          "SELECT": ("Where", None)}


def binary(tx, op):
    kind = tx.op_name(op)
    onnx_op, opts = BINARY[kind]
    ins = _ins(op)[:3] if kind.startswith("SELECT") else _ins(op)[:2]
    y_k = _out(op)
    rows = kind == "SELECT" and len(tx.shape(ins[0])) == 1 and len(tx.shape(ins[1])) > 1
    shape = np.broadcast_shapes(*(tx.shape(k) for k in ins[rows:]))
    rank = len(shape)
    acts = [k for k in ins if k in tx.values]
    order = "nchw" if rank == 4 and any(tx.layout(k) == "nchw" and len(tx.shape(k)) == 4 for k in acts) else "nhwc"
    if order == "nchw" and any(len(tx.shape(k)) != 4 for k in acts):
        order = "nhwc"
    base = tx.tname(y_k)
    code = tx.options(op, opts).FusedActivationFunction() if opts and op.BuiltinOptions() is not None else 0
    operands = [tx.operand(k, order, rank) for k in ins]
    if rows:          # TF1's row mask [N] read as [N, 1, ...] (axis 0 is the batch in either layout)
        dims = np.array([tx.shape(ins[0])[0]] + [1] * (rank - 1), np.int64)
        operands[0] = tx.node("Reshape", [operands[0], tx.initializer(dims, f"{base}_rows_shape")], f"{base}_rows")
    y = tx.node(onnx_op, operands, f"{base}_{onnx_op.lower()}" if code or kind == "SQUARED_DIFFERENCE" else base)
    if kind == "SQUARED_DIFFERENCE":
        y = tx.node("Mul", [y, y], base)
    tx.set(y_k, _fused(tx, y, code, base), order, shape)


UNARY = {"RELU": "Relu", "TANH": "Tanh", "LOGISTIC": "Sigmoid", "HARD_SWISH": None, "ELU": "Elu",
         "ABS": "Abs", "EXP": "Exp", "SQRT": "Sqrt", "RSQRT": None, "NEG": "Neg", "LOG": "Log", "FLOOR": "Floor",
         "CEIL": "Ceil", "ROUND": "Round", "SIN": "Sin", "COS": "Cos", "SQUARE": None}


def unary(tx, op):
    kind, x_k, y_k = tx.op_name(op), _ins(op)[0], _out(op)
    order, base = tx.layout(x_k), tx.tname(y_k)
    x = tx.value(x_k, order)
    if kind in ("RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"):
        lo, hi = {"RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}[kind]
        y = tx.node("Clip", [x, tx.initializer(np.float32(lo), f"{base}_lo"), tx.initializer(np.float32(hi), f"{base}_hi")],
                    base)
    elif kind == "LEAKY_RELU":
        y = tx.node("LeakyRelu", [x], base, alpha=float(tx.options(op, "LeakyReluOptions").Alpha()))
    elif kind == "HARD_SWISH":        # x * relu6(x + 3) / 6 (ONNX's HardSwish is opset 14)
        y = tx.node("Mul", [x, tx.node("HardSigmoid", [x], f"{base}_gate", alpha=1 / 6, beta=0.5)], base)
    elif kind == "RSQRT":
        y = tx.node("Reciprocal", [tx.node("Sqrt", [x], f"{base}_sqrt")], base)
    elif kind == "SQUARE":
        y = tx.node("Mul", [x, x], base)
    else:
        y = tx.node(UNARY[kind], [x], base)
    tx.set(y_k, y, order, tx.shape(x_k))


def dequantize(tx, op):
    x_k, y_k = _ins(op)[0], _out(op)
    if not tx.is_const(x_k):
        raise Untranslatable("a DEQUANTIZE of a run-time tensor (not a float model's weights)")
    tx.folded[y_k] = tx.const(x_k)


def reshape(tx, op):
    """RESHAPE, SQUEEZE, EXPAND_DIMS: the output shape the file records (its shape operand, often computed at run
    time from a Keras batch of None, is not read; a placeholder shape: from the shape signature, Translator.out_shape)."""
    x_k, y_k = _ins(op)[0], _out(op)
    base = tx.tname(y_k)
    shape = tx.out_shape(y_k, int(np.prod(tx.shape(x_k))))
    tx.set(y_k, tx.node("Reshape", [tx.value(x_k), tx.initializer(np.array(shape, np.int64), f"{base}_shape")], base),
           shape=shape)


def _axes(tx, op, x_k) -> list[int]:
    rank = len(tx.shape(x_k))
    return sorted({int(a) % rank for a in np.asarray(tx.raw(_ins(op)[1])).reshape(-1)})


def mean(tx, op):
    """MEAN, SUM, REDUCE_MAX, REDUCE_MIN; over the spatial axes of a 4-D value in its own order."""
    x_k, y_k = _ins(op)[0], _out(op)
    axes, keep = _axes(tx, op, x_k), int(tx.options(op, "ReducerOptions").KeepDims())
    onnx_op = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin"}[tx.op_name(op)]
    order = tx.layout(x_k)
    if order == "nchw" and (keep or axes == [1, 2]):
        axes = sorted(TO_NCHW.index(a) for a in axes)
    else:
        order = "nhwc"
    x = tx.value(x_k, order)
    if onnx_op == "ReduceSum":           # opset 13: ReduceSum's axes are an input
        y = tx.node(onnx_op, [x, tx.initializer(np.array(axes, np.int64), f"{tx.tname(y_k)}_axes")], tx.tname(y_k),
                    keepdims=keep)
    else:
        y = tx.node(onnx_op, [x], tx.tname(y_k), axes=axes, keepdims=keep)
    kept = [1 if a in _axes(tx, op, x_k) else d for a, d in enumerate(tx.shape(x_k))]
    tx.set(y_k, y, order if keep else "nhwc",
           tuple(kept) if keep else tuple(d for a, d in enumerate(tx.shape(x_k)) if a not in _axes(tx, op, x_k)))


def softmax(tx, op):
    x_k, y_k = _ins(op)[0], _out(op)
    beta, base = float(tx.options(op, "SoftmaxOptions").Beta()), tx.tname(y_k)
    x = tx.value(x_k)
    if beta != 1.0:
        x = tx.node("Mul", [x, tx.initializer(np.float32(beta), f"{base}_beta")], f"{base}_scaled")
    tx.set(y_k, tx.node("Softmax", [x], base, axis=-1), shape=tx.shape(x_k))


def l2_normalization(tx, op):
    """L2_NORMALIZATION (over the last axis): an ONNX LpNormalization p=2 (TF Lite's float kernel also keeps the
    norm above 1e-6; the two differ only on a row of all but zeros), then its fused activation."""
    x_k, y_k = _ins(op)[0], _out(op)
    o, base = tx.options(op, "L2NormOptions"), tx.tname(y_k)
    y = tx.node("LpNormalization", [tx.value(x_k)], base, axis=-1, p=2)
    tx.set(y_k, _fused(tx, y, o.FusedActivationFunction() if o is not None else 0, base), shape=tx.shape(x_k))


def concat(tx, op):
    o = tx.options(op, "ConcatenationOptions")
    ins, y_k = [k for k in _ins(op) if k >= 0], _out(op)
    rank = len(tx.shape(y_k))
    axis = o.Axis() % rank
    order = "nchw" if rank == 4 and any(tx.layout(k) == "nchw" for k in ins if k in tx.values) else "nhwc"
    if order == "nchw":
        axis = TO_NCHW.index(axis)
    base = tx.tname(y_k)
    y = tx.node("Concat", [tx.value(k, order) for k in ins], f"{base}_cat" if o.FusedActivationFunction() else base,
                axis=axis)
    tx.set(y_k, _fused(tx, y, o.FusedActivationFunction(), base), order)


def pad(tx, op):
    """PAD, PADV2, MIRROR_PAD (REFLECT; SYMMETRIC repeats the edge pixel, which ONNX's Pad has no mode for)."""
    ins, y_k = _ins(op), _out(op)
    mirror = tx.op_name(op) == "MIRROR_PAD"
    if mirror and tx.options(op, "MirrorPadOptions").Mode() != 0:
        raise Untranslatable("SYMMETRIC mode")
    x_k = ins[0]
    p = np.asarray(tx.raw(ins[1]), np.int64).reshape(-1, 2)
    order = tx.layout(x_k)
    if order == "nchw":
        p = p[list(TO_NCHW)]
    base = tx.tname(y_k)
    args = [tx.value(x_k, order), tx.initializer(np.concatenate([p[:, 0], p[:, 1]]), f"{base}_pads")]
    if len(ins) > 2 and ins[2] >= 0:
        args.append(tx.initializer(tx.const(ins[2]).reshape(()).astype(np.float32), f"{base}_value"))
    tx.set(y_k, tx.node("Pad", args, base, **({"mode": "reflect"} if mirror else {})), order)


def transpose(tx, op):
    x_k, p_k = _ins(op)[:2]
    y_k = _out(op)
    perm = [int(a) for a in np.asarray(tx.raw(p_k)).reshape(-1)]
    tx.set(y_k, tx.node("Transpose", [tx.value(x_k)], tx.tname(y_k), perm=perm))


def batch_matmul(tx, op):
    """BATCH_MATMUL: an ONNX MatMul (adj_x / adj_y: the last two axes swapped first; a constant operand stored so)."""
    o = tx.options(op, "BatchMatMulOptions")
    y_k, base = _out(op), tx.tname(_out(op))
    args = []
    for k, adj in zip(_ins(op)[:2], (o.AdjX(), o.AdjY()) if o is not None else (False, False)):
        rank = len(tx.shape(k))
        if tx.is_const(k) and k not in tx.values:
            v = tx.const(k)
            args.append(tx.initializer(np.swapaxes(v, -1, -2) if adj else v, tx.tname(k)))
        else:
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            args.append(tx.node("Transpose", [tx.value(k)], f"{base}_adj", perm=perm) if adj else tx.value(k))
    tx.set(y_k, tx.node("MatMul", args, base))


def resize(tx, op):
    """RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: an ONNX Resize (channels-first) to the constant size, with the
    coordinates TF Lite's kernel uses (half_pixel_centers, align_corners or neither; nearest: its rounding)."""
    bilinear = tx.op_name(op) == "RESIZE_BILINEAR"
    o = tx.options(op, "ResizeBilinearOptions" if bilinear else "ResizeNearestNeighborOptions")
    x_k, s_k = _ins(op)[:2]
    y_k, shape = _out(op), tx.shape(x_k)
    if len(shape) != 4 or not tx.is_const(s_k):
        raise Untranslatable("a 4-D input and a constant size")
    oh, ow = (int(v) for v in np.asarray(tx.raw(s_k)).reshape(-1))
    align, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
    if align and half:
        raise Untranslatable("align_corners and half_pixel_centers together")
    ctm = "align_corners" if align else "half_pixel" if half else "asymmetric"
    mode = {"mode": "linear"} if bilinear else {"mode": "nearest",       # half pixel: floor((i + 0.5) / scale)
                                                 "nearest_mode": "round_prefer_ceil" if align or half else "floor"}
    base = tx.tname(y_k)
    sizes = tx.initializer(np.array([shape[0], shape[3], oh, ow], np.int64), f"{base}_sizes")
    y = tx.node("Resize", [tx.value(x_k, "nchw"), "", "", sizes], base, coordinate_transformation_mode=ctm, **mode)
    tx.set(y_k, y, "nchw", (shape[0], oh, ow, shape[3]))


def gelu(tx, op):
    """GELU as PyTorch's exporters write it before opset 20 (Div sqrt 2 -> Erf -> Add 1 -> Mul x -> Mul 0.5, or the
    tanh approximation), which edgec's canonicalizer takes as one Gelu (edgec/frontend/decomposed.py)."""
    x_k, y_k = _ins(op)[0], _out(op)
    o = tx.options(op, "GeluOptions")
    order, base = tx.layout(x_k), tx.tname(y_k)
    x = tx.value(x_k, order)

    def c(v, name):
        return tx.initializer(np.float32(v), f"{base}_{name}")

    if o is not None and o.Approximate():
        cube = tx.node("Mul", [tx.node("Mul", [x, x], f"{base}_sq"), x], f"{base}_cube")
        inner = tx.node("Add", [x, tx.node("Mul", [cube, c(0.044715, "k")], f"{base}_kx3")], f"{base}_inner")
        t = tx.node("Tanh", [tx.node("Mul", [inner, c(np.sqrt(2 / np.pi), "s")], f"{base}_arg")], f"{base}_tanh")
    else:
        t = tx.node("Erf", [tx.node("Div", [x, c(np.sqrt(2.0), "sqrt2")], f"{base}_arg")], f"{base}_erf")
    y = tx.node("Mul", [tx.node("Mul", [x, tx.node("Add", [t, c(1.0, "one")], f"{base}_1p")], f"{base}_x1p"),
                        c(0.5, "half")], base)
    tx.set(y_k, y, order, tx.shape(x_k))


def sequence_lstm(tx, op):
    """UNIDIRECTIONAL_SEQUENCE_LSTM (float weights; TF Lite's gates i, f, c, o, its state from zero as after a
    reset): an ONNX LSTM (gates i, o, f, c) over the time-major sequence; with a cell clip (TFLiteConverter writes
    10 for every Keras LSTM), which ONNX's LSTM cannot express, the cell written out step by step (clipped_lstm).
    Peepholes, CIFG, projection, layer norm and projection clipping, which edgec's LSTM does not take, are named."""
    o = tx.options(op, "UnidirectionalSequenceLSTMOptions")
    ins, y_k = _ins(op) + [-1] * 24, _out(op)
    x_k, base = ins[0], tx.tname(y_k)
    missing = {"CIFG (no input gate)": ins[1] < 0, "peepholes": max(ins[9:12]) >= 0, "a projection": ins[16] >= 0,
               "layer normalization": max(ins[20:24]) >= 0,
               "projection clipping": o is not None and o.ProjClip() != 0,
               "an activation other than tanh": o is not None and o.FusedActivationFunction() != 4}
    if any(missing.values()):
        raise Untranslatable(", ".join(k for k, v in missing.items() if v))
    if any(not tx.is_const(k) for k in ins[1:9] + ins[12:16]):
        raise Untranslatable("weights computed at run time")
    time_major = bool(o is not None and o.TimeMajor())
    if o is not None and o.CellClip() > 0:
        return clipped_lstm(tx, ins, y_k, float(o.CellClip()), time_major)
    w, r, b = ([tx.const(ins[first + g]) for g in (0, 3, 1, 2)] for first in (1, 5, 12))       # ONNX's i, o, f, c
    hidden = r[0].shape[0]
    x = tx.value(x_k) if time_major else tx.node("Transpose", [tx.value(x_k)], f"{base}_steps", perm=[1, 0, 2])
    steps, batch = tx.shape(x_k)[:2] if time_major else tx.shape(x_k)[1::-1]
    args = [x, tx.initializer(np.concatenate(w)[None], f"{base}_W"), tx.initializer(np.concatenate(r)[None], f"{base}_R"),
            tx.initializer(np.concatenate(b + [np.zeros(4 * hidden, np.float32)])[None], f"{base}_B")]
    y = tx.node("LSTM", args, f"{base}_seq", hidden_size=hidden)
    y = tx.node("Reshape", [y, tx.initializer(np.array([steps, batch, hidden], np.int64), f"{base}_tbh")],
                base if time_major else f"{base}_tbh")
    if not time_major:
        y = tx.node("Transpose", [y], base, perm=[1, 0, 2])
    tx.set(y_k, y)


def clipped_lstm(tx, ins, y_k, clip: float, time_major: bool):
    """TF Lite's LSTM with a cell clip, one step after another in ONNX operators: each gate's input projection
    over the whole sequence (x W^T + b), then per step the recurrent product h R^T, i, f, o = sigmoid, g = tanh,
    c = clip(f c + i g, -clip, clip), h = o tanh(c); the h of every step concatenated on the time axis."""
    x_k, base = ins[0], tx.tname(y_k)
    shape = tx.shape(x_k)
    steps, batch = shape[:2] if time_major else shape[1::-1]
    t_axis = 0 if time_major else 1
    c_ = lambda v, n: tx.initializer(np.asarray(v, np.float32), f"{base}_{n}")      # noqa: E731
    proj, rec = [], []
    for g, gate in enumerate("ifgo"):                                               # TF Lite's order i, f, c, o
        w, r, b = tx.const(ins[1 + g]), tx.const(ins[5 + g]), tx.const(ins[12 + g])
        xw = tx.node("MatMul", [tx.value(x_k), c_(w.T, f"W{gate}")], f"{base}_x{gate}")
        proj.append(tx.node("Add", [xw, c_(b, f"b{gate}")], f"{base}_xb{gate}"))
        rec.append(c_(r.T, f"R{gate}"))
    hidden = tx.const(ins[5]).shape[0]
    act = {"i": "Sigmoid", "f": "Sigmoid", "g": "Tanh", "o": "Sigmoid"}
    lo, hi, h, c, outs = c_(-clip, "lo"), c_(clip, "hi"), None, None, []
    flat = tx.initializer(np.array([batch, hidden], np.int64), f"{base}_bh")
    for t in range(steps):
        starts, ends = tx.initializer(np.array([t], np.int64), f"{base}_t"), tx.initializer(np.array([t + 1], np.int64), f"{base}_t1")
        axis = tx.initializer(np.array([t_axis], np.int64), f"{base}_ax")
        gates = {}
        for g, gate in enumerate("ifgo"):
            pre = tx.node("Reshape", [tx.node("Slice", [proj[g], starts, ends, axis], f"{base}_{gate}{t}_x"), flat],
                          f"{base}_{gate}{t}_xr")
            if h is not None:
                pre = tx.node("Add", [pre, tx.node("MatMul", [h, rec[g]], f"{base}_{gate}{t}_h")], f"{base}_{gate}{t}_pre")
            gates[gate] = tx.node(act[gate], [pre], f"{base}_{gate}{t}")
        ig = tx.node("Mul", [gates["i"], gates["g"]], f"{base}_ig{t}")
        c = ig if c is None else tx.node("Add", [tx.node("Mul", [gates["f"], c], f"{base}_fc{t}"), ig], f"{base}_c{t}_sum")
        c = tx.node("Clip", [c, lo, hi], f"{base}_c{t}")
        h = tx.node("Mul", [gates["o"], tx.node("Tanh", [c], f"{base}_tc{t}")], f"{base}_h{t}")
        outs.append(tx.node("Unsqueeze", [h, axis], f"{base}_y{t}"))
    tx.set(y_k, tx.node("Concat", outs, base, axis=t_axis) if steps > 1 else outs[0])


OPS = {"CONV_2D": conv, "DEPTHWISE_CONV_2D": conv, "AVERAGE_POOL_2D": pool, "MAX_POOL_2D": pool,
       "FULLY_CONNECTED": fully_connected, **{k: binary for k in BINARY}, **{k: unary for k in UNARY},
       "RELU6": unary, "RELU_N1_TO_1": unary, "RELU_0_TO_1": unary, "LEAKY_RELU": unary, "DEQUANTIZE": dequantize,
       "RESHAPE": reshape, "SQUEEZE": reshape, "EXPAND_DIMS": reshape, "MEAN": mean, "SUM": mean,
       "REDUCE_MAX": mean, "REDUCE_MIN": mean, "SOFTMAX": softmax, "CONCATENATION": concat, "PAD": pad,
       "PADV2": pad, "MIRROR_PAD": pad, "TRANSPOSE": transpose, "SPACE_TO_DEPTH": blocks, "DEPTH_TO_SPACE": blocks,
       "LOG_SOFTMAX": log_softmax, "ADD_N": add_n, "CUMSUM": cumsum, "BATCH_MATMUL": batch_matmul, "RESIZE_BILINEAR": resize,
       "RESIZE_NEAREST_NEIGHBOR": resize, "GELU": gelu, "TRANSPOSE_CONV": transpose_conv, "PRELU": prelu, "UNIDIRECTIONAL_SEQUENCE_LSTM": sequence_lstm,
       "L2_NORMALIZATION": l2_normalization}
