"""The independent oracle: single-operator INT8 .tflite models, written with the flatbuffers builder API of the
`tflite` schema package, run by TensorFlow Lite Micro's own Python interpreter (`tflite-micro`, reference
kernels: what y_int8_tflm of the MLPerf Tiny goldens came from) and by edgec (NumPy reference, and many models'
generated C compiled into one host program per kernel path). tests/test_tflite_oracle.py drives it; run as a
script for the long sweep (`python tests/tflite_oracle.py --cases 3000`).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator as OPS
from tflite.BuiltinOptions import BuiltinOptions as OPTIONS

from edgec import cheader, ports
from edgec.codegen import cmodel
import hostrun
from edgec.frontend import tflite as importer
from edgec.ops.registry import keeps_state
from edgec.pipeline import schedule_and_plan
from edgec.plan import planner
from edgec.quant import reference

INT8, INT32 = 9, 2
PATHS = {"reference": ("-O1",), "portable": ("-O1",), "dsp-emulated": ("-O1", "-DEDGEC_EMULATE_DSP")}
# run_c's "sanitized" path: -O0 as tests/conftest.py's SANITIZE (every access instrumented; a tenth of -O1's compile time)
SANITIZED = ("-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")


@dataclass
class T:
    """A tensor of the model: shape, int8/int32, quantization, constant data (None: an activation)."""

    shape: tuple
    scale: list
    zp: list
    dtype: int = INT8
    data: np.ndarray | None = None
    axis: int = 0
    variable: bool = False     # a state TFLite Micro keeps between invocations (an LSTM's, SVDF's)
    signature: tuple | None = None   # the shape signature (-1: left to run time, a Keras batch of None)


@dataclass
class Node:
    op: str                    # BuiltinOperator name
    inputs: list               # indices into the model's tensor list (-1: absent)
    output: int | list         # one index, or a list of them (an operator with several outputs)
    options: tuple | None = None   # (BuiltinOptions name, {field: value})
    custom: bytes = b""        # a custom operator's options (flexbuffer); op is then "CUSTOM:<custom code>"


@dataclass
class Case:
    name: str
    tensors: list
    nodes: list
    input: int | list          # the graph's input tensor, or a list of them (several inputs); likewise output
    output: int | list
    x: np.ndarray = field(default=None)     # int8 inputs [n, ...] (several inputs: packed, edgec/ports.py)


# ---- writing a .tflite -----------------------------------------------------------------------------
def _vector(b, start, values, prepend):
    start(b, len(values))
    for v in reversed(values):
        prepend(v)
    return b.EndVector()


def _list(v) -> list:
    return [int(v)] if isinstance(v, (int, np.integer)) else [int(i) for i in v]


def write(case: Case) -> bytes:
    b = flatbuffers.Builder(4096)
    buffers = [None] + [t.data for t in case.tensors if t.data is not None]
    buf_offsets = []
    for data in buffers:
        d = None if data is None else b.CreateByteVector(np.ascontiguousarray(data).tobytes())
        tflite.BufferStart(b)
        if d is not None:
            tflite.BufferAddData(b, d)
        buf_offsets.append(tflite.BufferEnd(b))
    tensors, k = [], 0
    for i, t in enumerate(case.tensors):
        scale = _vector(b, tflite.QuantizationParametersStartScaleVector, [float(s) for s in t.scale], b.PrependFloat32)
        zp = _vector(b, tflite.QuantizationParametersStartZeroPointVector, [int(z) for z in t.zp], b.PrependInt64)
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scale)
        tflite.QuantizationParametersAddZeroPoint(b, zp)
        tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
        q = tflite.QuantizationParametersEnd(b)
        shape = _vector(b, tflite.TensorStartShapeVector, [int(d) for d in t.shape], b.PrependInt32)
        name = b.CreateString(f"t{i}")
        sig = None if t.signature is None else _vector(b, tflite.TensorStartShapeSignatureVector,
                                                       [int(d) for d in t.signature], b.PrependInt32)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, t.dtype)
        if t.data is not None:
            k += 1
            tflite.TensorAddBuffer(b, k)
        tflite.TensorAddName(b, name)
        tflite.TensorAddQuantization(b, q)
        if t.variable:
            tflite.TensorAddIsVariable(b, True)
        if sig is not None:
            tflite.TensorAddShapeSignature(b, sig)
        tensors.append(tflite.TensorEnd(b))
    codes = sorted({n.op for n in case.nodes})
    ops = []
    for n in case.nodes:
        opts = None
        if n.options:
            kind, fields = n.options
            getattr(tflite, f"{kind}Start")(b)
            for f, v in fields.items():
                getattr(tflite, f"{kind}Add{f}")(b, v)
            opts = getattr(tflite, f"{kind}End")(b)
        custom = b.CreateByteVector(n.custom) if n.custom else None
        ins = _vector(b, tflite.OperatorStartInputsVector, n.inputs, b.PrependInt32)
        outs = _vector(b, tflite.OperatorStartOutputsVector, _list(n.output), b.PrependInt32)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(n.op))
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(OPTIONS, n.options[0]))
            tflite.OperatorAddBuiltinOptions(b, opts)
        if custom is not None:
            tflite.OperatorAddCustomOptions(b, custom)
        ops.append(tflite.OperatorEnd(b))
    tvec = _vector(b, tflite.SubGraphStartTensorsVector, tensors, b.PrependUOffsetTRelative)
    ovec = _vector(b, tflite.SubGraphStartOperatorsVector, ops, b.PrependUOffsetTRelative)
    ivec = _vector(b, tflite.SubGraphStartInputsVector, _list(case.input), b.PrependInt32)
    yvec = _vector(b, tflite.SubGraphStartOutputsVector, _list(case.output), b.PrependInt32)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tvec)
    tflite.SubGraphAddInputs(b, ivec)
    tflite.SubGraphAddOutputs(b, yvec)
    tflite.SubGraphAddOperators(b, ovec)
    sg = tflite.SubGraphEnd(b)
    extra = []                 # empty subgraphs after the first (what an IF or WHILE would run: case.subgraphs)
    for _ in range(getattr(case, "subgraphs", 1) - 1):
        tflite.SubGraphStart(b)
        extra.append(tflite.SubGraphEnd(b))
    code_offsets = []
    for c in codes:
        custom_code = b.CreateString(c.split(":", 1)[1]) if c.startswith("CUSTOM:") else None
        code = OPS.CUSTOM if custom_code is not None else getattr(OPS, c)
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        if custom_code is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_code)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))
    cvec = _vector(b, tflite.ModelStartOperatorCodesVector, code_offsets, b.PrependUOffsetTRelative)
    svec = _vector(b, tflite.ModelStartSubgraphsVector, [sg, *extra], b.PrependUOffsetTRelative)
    bvec = _vector(b, tflite.ModelStartBuffersVector, buf_offsets, b.PrependUOffsetTRelative)
    desc = b.CreateString("edgec oracle case")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, cvec)
    tflite.ModelAddSubgraphs(b, svec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, bvec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# ---- random cases ---------------------------------------------------------------------------------
def _act(rng, extreme):
    """(scale, zero point) of an activation: zero points at the int8 limits and odd scales when extreme."""
    scale = float(np.float32(10 ** rng.uniform(-3, 0.7)))
    zp = int(rng.choice([-128, 127, 0])) if extreme and rng.random() < 0.5 else int(rng.integers(-128, 128))
    return scale, zp


def _weights(rng, shape, axis, extreme):
    w = rng.integers(-127, 128, shape).astype(np.int8)
    if extreme and rng.random() < 0.3:
        w[...] = rng.choice([-127, 127])
    n = shape[axis]
    per_channel = rng.random() < 0.8
    s = 10 ** rng.uniform(-4, -1, n if per_channel else 1)
    if extreme and per_channel and rng.random() < 0.5:     # a dead channel as TFLite files have them: zero
        dead = int(rng.integers(0, n))                      # weights, a tiny scale (and a saturated bias)
        np.moveaxis(w, axis, 0)[dead] = 0
        s[dead] = 1e-12
    return w, [float(np.float32(v)) for v in s]


def _bias(rng, n, extreme, scales=None):
    lim = (1 << 31) - 1 if extreme and rng.random() < 0.2 else 1 << 16
    b = rng.integers(-lim, lim, n, dtype=np.int64)
    if scales is not None:
        b = np.where(np.asarray(scales) < 1e-10, rng.choice([-(1 << 31), (1 << 30), (1 << 31) - 1]), b)
    return b.astype(np.int32)


def conv_case(rng, name, depthwise=False, extreme=False):
    h, w = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    c = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 128]))
    kh, kw = int(rng.integers(1, min(h, 5) + 1)), int(rng.integers(1, min(w, 5) + 1))
    if rng.random() < 0.3:
        kh, kw = min(3, h), min(3, w)
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    dh = dw = 1
    padding = int(rng.integers(0, 2))       # SAME, VALID
    mult = int(rng.choice([1, 1, 2])) if depthwise else 1
    oc = c * mult if depthwise else int(rng.choice([1, 2, 3, 5, 8, 13, 16, 33, 64]))

    def out(n, k, s, d):
        return (n + s - 1) // s if padding == 0 else (n - (k - 1) * d - 1) // s + 1
    oh, ow = out(h, kh, sh, dh), out(w, kw, sw, dw)
    xs, xz = _act(rng, extreme)
    ys, yz = _act(rng, extreme)
    wshape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    wq, ws = _weights(rng, wshape, 3 if depthwise else 0, extreme)
    fused = int(rng.choice([0, 1, 2, 3]))
    tensors = [T((1, h, w, c), [xs], [xz]), T(wshape, ws, [0] * len(ws), data=wq, axis=3 if depthwise else 0),
               T((oc,), [xs * s for s in ws], [0] * len(ws), INT32, _bias(rng, oc, extreme, ws)),
               T((1, oh, ow, oc), [ys], [yz])]
    fields = dict(Padding=padding, StrideW=sw, StrideH=sh, FusedActivationFunction=fused)
    if depthwise:
        kind, op = "DepthwiseConv2DOptions", "DEPTHWISE_CONV_2D"
        fields.update(DepthMultiplier=mult, DilationWFactor=1, DilationHFactor=1)
    else:
        kind, op = "Conv2DOptions", "CONV_2D"
        fields.update(DilationWFactor=1, DilationHFactor=1)
    return Case(name, tensors, [Node(op, [0, 1, 2], 3, (kind, fields))], 0, 3), (oh, ow) if min(oh, ow) > 0 else None


def fc_case(rng, name, extreme=False):
    n_in, n_out = int(rng.integers(1, 300)), int(rng.integers(1, 140))
    rows = 1 if rng.random() < 0.7 else int(rng.integers(2, 6))
    xs, xz = _act(rng, extreme)
    ys, yz = _act(rng, extreme)
    wq, ws = _weights(rng, (n_out, n_in), 0, extreme)
    ws = ws[:1]                      # TFLite's int8 FULLY_CONNECTED: one weight scale
    tensors = [T((rows, n_in), [xs], [xz]), T((n_out, n_in), ws, [0], data=wq),
               T((n_out,), [xs * ws[0]], [0], INT32, _bias(rng, n_out, extreme)), T((rows, n_out), [ys], [yz])]
    opts = ("FullyConnectedOptions", dict(FusedActivationFunction=int(rng.choice([0, 1, 2, 3]))))
    return Case(name, tensors, [Node("FULLY_CONNECTED", [0, 1, 2], 3, opts)], 0, 3), True


def pool_case(rng, name, average=True, extreme=False):
    h, w, c = int(rng.integers(1, 24)), int(rng.integers(1, 24)), int(rng.integers(1, 40))
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padding = int(rng.integers(0, 2))

    def out(n, k, s):
        return (n + s - 1) // s if padding == 0 else (n - k) // s + 1
    s, z = _act(rng, extreme)
    tensors = [T((1, h, w, c), [s], [z]), T((1, out(h, kh, sh), out(w, kw, sw), c), [s], [z])]
    opts = ("Pool2DOptions", dict(Padding=padding, StrideW=sw, StrideH=sh, FilterWidth=kw, FilterHeight=kh,
                                  FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [Node("AVERAGE_POOL_2D" if average else "MAX_POOL_2D", [0], 1, opts)], 0, 1), True


def softmax_case(rng, name, extreme=False):
    rows, cols = int(rng.integers(1, 5)), int(rng.choice([1, 2, 3, 10, 12, 33, 100, 256, 511]))
    s, z = _act(rng, extreme)
    if extreme and rng.random() < 0.3:
        s = float(np.float32(rng.choice([1e-3, 0.5, 3.0])))
    beta = float(np.float32(rng.choice([1.0, 1.0, 0.5, 2.0])))
    tensors = [T((rows, cols), [s], [z]), T((rows, cols), [1 / 256], [-128])]
    return Case(name, tensors, [Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=beta)))], 0, 1), True


def add_case(rng, name, extreme=False, op="ADD"):
    """ADD / SUB / MUL of the input and a 1x1 depthwise convolution of it (two different quantizations), or,
    broadcasting, of the input and a 1x1 average pool of it (one pixel against the image)."""
    h, w, c = int(rng.integers(1, 12)), int(rng.integers(1, 12)), int(rng.integers(1, 20))
    if op != "ADD" or rng.random() < 0.3:
        return _broadcast_case(rng, name, extreme, op, h, w, c)
    (xs, xz), (bs, bz), (ys, yz) = (_act(rng, extreme) for _ in range(3))
    wq, ws = _weights(rng, (1, 1, 1, c), 3, extreme)
    tensors = [T((1, h, w, c), [xs], [xz]), T((1, 1, 1, c), ws, [0] * len(ws), data=wq, axis=3),
               T((c,), [xs * v for v in ws], [0] * len(ws), INT32, _bias(rng, c, False)),
               T((1, h, w, c), [bs], [bz]), T((1, h, w, c), [ys], [yz])]
    dw = Node("DEPTHWISE_CONV_2D", [0, 1, 2], 3, ("DepthwiseConv2DOptions", dict(
        Padding=1, StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1)))
    add = Node(op, [0, 3] if rng.random() < 0.5 else [3, 0], 4,
               ("AddOptions", dict(FusedActivationFunction=int(rng.choice([0, 1, 3])))))
    return Case(name, tensors, [dw, add], 0, 4), True


def _broadcast_case(rng, name, extreme, op, h, w, c):
    """op(x, mean of x over the image): [1,h,w,c] against [1,1,1,c], either order."""
    (xs, xz), (ys, yz) = _act(rng, extreme), _act(rng, extreme)
    tensors = [T((1, h, w, c), [xs], [xz]), T((1, 1, 1, c), [xs], [xz]), T((1, h, w, c), [ys], [yz])]
    pool = Node("AVERAGE_POOL_2D", [0], 1, ("Pool2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FilterWidth=w,
                                                                   FilterHeight=h)))
    opts = (f"{op.title()}Options", dict(FusedActivationFunction=int(rng.choice([0, 1, 3]))))
    return Case(name, tensors, [pool, Node(op, [0, 1] if rng.random() < 0.5 else [1, 0], 2, opts)], 0, 2), True


def concat_case(rng, name, extreme=False):
    """CONCATENATION of the input and a 3x3 max pool of it (one quantization) along a random axis."""
    h, w, c = int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 20))
    s, z = _act(rng, extreme)
    axis = int(rng.choice([1, 2, 3, -1]))
    shape = [1, h, w, c]
    shape[axis] *= 2
    tensors = [T((1, h, w, c), [s], [z]), T((1, h, w, c), [s], [z]), T(tuple(shape), [s], [z])]
    pool = Node("MAX_POOL_2D", [0], 1, ("Pool2DOptions", dict(Padding=0, StrideW=1, StrideH=1, FilterWidth=3,
                                                               FilterHeight=3)))
    cat = Node("CONCATENATION", [0, 1] if rng.random() < 0.5 else [1, 0], 2, ("ConcatenationOptions", dict(Axis=axis)))
    return Case(name, tensors, [pool, cat], 0, 2), True


def pad_case(rng, name, extreme=False):
    """PAD of a [1,h,w,c] or [n,c] input by random amounts on every axis but the batch."""
    shape = (1, int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 10))) if rng.random() < 0.7 \
        else (int(rng.integers(1, 6)), int(rng.integers(1, 30)))
    pads = rng.integers(0, 4, (len(shape), 2)).astype(np.int32)
    pads[0] = 0
    s, z = _act(rng, extreme)
    out = tuple(int(n + a + b) for n, (a, b) in zip(shape, pads))
    tensors = [T(shape, [s], [z]), T(pads.shape, [1.0], [0], INT32, pads), T(out, [s], [z])]
    return Case(name, tensors, [Node("PAD", [0, 1], 2, ("PadOptions", {}))], 0, 2), True


def activation_case(rng, name, extreme=False, op="LOGISTIC"):
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 20)))
    s, z = _act(rng, extreme)
    if rng.random() < 0.5:
        s = float(np.float32(10 ** rng.uniform(-2.5, -0.5)))     # the inputs that reach the curve's bends
    out = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}.get(op) or \
        (float(np.float32(s * 10 ** rng.uniform(-1.5, 0.5))), _act(rng, extreme)[1])
    tensors = [T(shape, [s], [z]), T(shape, [out[0]], [out[1]])]
    return Case(name, tensors, [Node(op, [0], 1)], 0, 1), True


def mean_case(rng, name, extreme=False):
    """MEAN over random axes of a rank 2-4 tensor, keep_dims or not; half of them Keras's global average pool
    ([1,h,w,c] over axes 1 and 2); a third keep the input's quantization."""
    if rng.random() < 0.5:
        shape, axes = (1, int(rng.integers(1, 30)), int(rng.integers(1, 30)), int(rng.integers(1, 40))), [1, 2]
    else:
        r = int(rng.integers(2, 5))
        shape = tuple(int(v) for v in rng.integers(1, 8, r))
        axes = sorted({int(a) for a in rng.choice(r, int(rng.integers(1, r + 1)))})
    keep = bool(rng.integers(0, 2))
    (s, z), other = _act(rng, extreme), _act(rng, extreme)
    ys, yz = (s, z) if rng.random() < 0.3 else other
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    listed = [a - len(shape) if rng.random() < 0.3 else a for a in rng.permutation(axes)]    # any order, negative
    tensors = [T(shape, [s], [z]), T((len(axes),), [1.0], [0], INT32, np.array(listed, np.int32)),
               T(out or (1,), [ys], [yz])]
    return Case(name, tensors, [Node("MEAN", [0, 1], 2, ("ReducerOptions", dict(KeepDims=keep)))], 0, 2), True


MAKERS = {"conv": lambda r, n, e: conv_case(r, n, False, e), "depthwise": lambda r, n, e: conv_case(r, n, True, e),
          "fully_connected": fc_case, "avg_pool": lambda r, n, e: pool_case(r, n, True, e),
          "max_pool": lambda r, n, e: pool_case(r, n, False, e), "softmax": softmax_case, "add": add_case,
          "sub": lambda r, n, e: add_case(r, n, e, "SUB"), "mul": lambda r, n, e: add_case(r, n, e, "MUL"),
          "concat": concat_case, "mean": mean_case, "pad": pad_case, "logistic": activation_case, "tanh": lambda r, n, e: activation_case(r, n, e, "TANH"),
          "hard_swish": lambda r, n, e: activation_case(r, n, e, "HARD_SWISH"),
          "relu": lambda r, n, e: activation_case(r, n, e, str(r.choice(["RELU", "RELU6"])))}


def cases(seed: int, n: int, kinds: list[str] | None = None, makers: dict | None = None) -> list[Case]:
    """n valid random cases, every operator (of `kinds` of `makers`, default all of MAKERS) in turn, every third
    one with edge values."""
    rng = np.random.default_rng(seed)
    makers = MAKERS if makers is None else makers
    out, kinds, i = [], list(kinds or makers), 0
    while len(out) < n:
        kind = kinds[i % len(kinds)]
        case, ok = makers[kind](rng, f"c{seed}_{i}_{kind}", i % 3 == 2)
        i += 1
        if not ok:
            continue
        shape = case.tensors[case.input].shape
        x = rng.integers(-128, 128, (4,) + tuple(shape)).astype(np.int8)
        x[0] = case.tensors[case.input].zp[0]
        x[1] = rng.choice([-128, 127], shape)
        avoid = getattr(case, "avoid", None)      # an input value the operator leaves undefined (DIV by zero)
        if avoid is not None:
            x[x == avoid] = avoid + 1 if avoid < 127 else avoid - 1
        case.x = x
        out.append(case)
    return out


# ---- running ----------------------------------------------------------------------------------------
def tflm(model: bytes, x, carry_state: bool = False) -> np.ndarray:
    """TFLite Micro's outputs [n, ...] for inputs x [n, ...]; several inputs: a list of arrays [n, ...], one per
    input; several outputs: packed (each flattened, in the model's order). Each sample from the interpreter's reset
    (a stateful model's variable tensors: an LSTM's, an SVDF's), or with carry_state the state carried from one
    sample to the next, as TFLite Micro carries it between Invoke calls (and edgec's device between invokes)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=1 << 22)
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    n_out = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0).OutputsLength()
    outs = []
    for i in range(len(xs[0])):
        for k, xk in enumerate(xs):
            interp.set_input(xk[i], k)
        if not carry_state:
            interp.reset()      # each sample an inference of its own (a stateful model's state from its reset)
        interp.invoke()
        outs.append(np.concatenate([np.asarray(interp.get_output(k)).reshape(-1) for k in range(n_out)]))
    return np.stack(outs)


def run_c(graphs: list, xs: list, work: Path, path: str, reset_each: bool = False) -> list[np.ndarray]:
    """The generated C of many models, compiled into one host program (kernel `path`), over their inputs (a model
    with state: one stream, the state carried, or NAME_reset() before each input with reset_each)."""
    models = []
    for g in graphs:
        if path == "reference":
            g = g.replace_ops(planner.schedule(g))
            plan = planner.plan(g)
        else:
            g, plan = schedule_and_plan(g)
        cmodel.generate(g, plan, work / g.name, g.name, runtime=False)
        models.append(hostrun.HostModel(g.name, work / g.name, sum(g.tensors[t].nbytes for t in g.outputs),
                                        ports.multi(g), reset_each and keeps_state(g)))
    files = cheader.files_called([(work / g.name / f"{g.name}.c").read_text() for g in graphs])   # what they call
    runtime = [cheader.runtime_dir() / f for f in files if f.endswith(".c")]
    flags = SANITIZED if path == "sanitized" else PATHS[path]
    return hostrun.run_models(models, xs, work, [*flags, f"-I{cheader.runtime_dir()}"], runtime)


def check(case_list: list[Case], work: Path, paths=tuple(PATHS), expect=None) -> list[str]:
    """Every case through TFLM and edgec (reference and each C path): the cases that differ, described.
    expect(case) -> the expected outputs [n, ...] instead of TFLM's (an operator TFLite Micro does not register,
    whose result is defined by data movement alone: TILE)."""
    bad, models = [], []
    for case in case_list:
        model = write(case)
        f = work / f"{case.name}.tflite"
        work.mkdir(parents=True, exist_ok=True)
        f.write_bytes(model)
        graph = importer.load(f, case.name)
        carry = keeps_state(graph)      # a model with state: the samples one stream, as TFLM between Invoke calls
        want = tflm(model, case.x, carry) if expect is None else \
            np.asarray(expect(case), np.int8).reshape(len(case.x), -1)
        got = reference.run_sequence(graph, [xi.reshape(-1) for xi in case.x])
        if not np.array_equal(got, want):
            bad.append(f"{case.name} reference: max diff {int(np.abs(got.astype(int) - want).max())}")
        models.append((f, want))
    for path in paths:
        graphs = [importer.load(f, c.name) for (f, _), c in zip(models, case_list)]
        outs = run_c(graphs, [c.x for c in case_list], work / path, path)
        for (f, want), c, got in zip(models, case_list, outs):
            got = np.ascontiguousarray(got).view(want.dtype)     # the output's bytes as its type (int32 indices)
            if not np.array_equal(got, want):
                bad.append(f"{c.name} {path}: max diff {int(np.abs(got.astype(int) - want).max())}")
    return bad


if __name__ == "__main__":      # the long sweep: python tests/tflite_oracle.py --cases 3000 [--seed 1]
    import argparse
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=150)
    a = ap.parse_args()
    failures, done = [], 0
    for s in range(math.ceil(a.cases / a.batch)):
        batch = cases(a.seed * 100000 + s, min(a.batch, a.cases - done))
        failures += check(batch, Path(tempfile.mkdtemp(prefix="edgec-oracle-")))
        done += len(batch)
        print(f"{done} cases, {len(failures)} differ", flush=True)
    print("\n".join(failures[:50]))
    sys.exit(1 if failures else 0)
