"""Matrix products with constant weights: `fully_connected` (one row x [out][in] weights), `fully_connected_rows`
(many rows x the same weights), int8 and (fully_connected) TFLite 16x8 and int4 weights (a MatMul of two
activations is edgec/ops/matmul.py's). Its kernels, as records (edgec/ops/kernel.py): the reference ones in
runtime_c/edgec_fully_connected.c; the fast fully connected one (4 rows at a time) in runtime_c/fast/ with its
speed variants rows8 and wide, its Helium and int4 kernels, and the fast one of many rows. A Flatten of a
channels-last tensor feeding a Gemm/MatMul permutes the weight columns instead of moving the data.
"""
from __future__ import annotations

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, SYNTHETIC, Tensor
from edgec.ops import cemit, dense_pairs, fast, matmul, movement
from edgec.ops.dense_pairs import packed_rows
from edgec.ops.kernel import DSP, FAST, HELIUM, INT4, INT16, MVE, REFERENCE, VARIANT, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.fixedpoint.scheme import act_range, finish, finish16, finish16_b32, unpack_int4, weighted, weighted16
from edgec.ops.conv import s16 as conv16
from edgec.ops.conv.reference import bias32
from edgec.ops.dense_cost import FC_CPI, fc_cost, fc_flash
from edgec.ops.tflite16 import ACTIVATIONS, activations


# ---- quantize ---------------------------------------------------------------------------------
def quantize_fc(op: Op, ins: list[Tensor], out: Tensor) -> None:
    weighted(op, ins[0], out, 0)
    n_out, n_in = op.attrs["weights"].shape
    op.params.update(in_features=n_in, out_features=n_out, input_zp=ins[0].zero_point,
                     output_zp=out.zero_point, **act_range(op, out))


def quantize_fc_rows(op: Op, ins: list[Tensor], out: Tensor) -> None:
    quantize_fc(op, ins, out)
    op.params["rows"] = op.attrs["rows"]


def quantize_fc16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    weighted16(op, ins, out, 0)


# ---- NumPy integer twins ------------------------------------------------------------------------
def fully_connected_s8(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::FullyConnected, with per-output-channel multipliers (TFLM style)."""
    x = np.asarray(x, np.int8).reshape(p["in_features"]).astype(np.int64) - int(p["input_zp"])
    w = np.asarray(w, np.int8).reshape(p["out_features"], p["in_features"]).astype(np.int64)
    acc = (w @ x + np.asarray(bias, np.int64)).astype(np.int32)
    return finish(acc, mult, shift, p)


def fully_connected_rows_s8(p: dict, rows: int, x, w, bias, mult, shift) -> np.ndarray:
    """`rows` independent rows through the same fully connected layer."""
    x = np.asarray(x, np.int8).reshape(rows, int(p["in_features"]))
    return np.stack([fully_connected_s8(p, r, w, bias, mult, shift) for r in x])


def fully_connected_s16(p: dict, x, w, bias, mult, shift) -> np.ndarray:
    """TFLite reference_integer_ops::FullyConnected, 16x8, per-output-channel multipliers."""
    x = np.asarray(x, np.int16).reshape(p["in_features"]).astype(np.int64)
    w = np.asarray(w, np.int8).reshape(p["out_features"], p["in_features"]).astype(np.int64)
    if np.asarray(bias).dtype == np.int32:       # an int32 bias: TFLite's int32 sum, 32-bit requantization
        return finish16_b32(w @ x + np.asarray(bias, np.int64), mult, shift, p)
    return finish16(w @ x + np.asarray(bias, np.int64), mult, shift, p)


def run_fc(op: Op, inputs: list) -> np.ndarray:
    a = op.arrays
    return fully_connected_s8(op.params, inputs[0].reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])


def run_fc16(op: Op, inputs: list) -> np.ndarray:
    a = op.arrays
    return fully_connected_s16(op.params, inputs[0].reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])


def run_fc_rows(op: Op, inputs: list) -> np.ndarray:
    p, a = op.params, op.arrays
    return fully_connected_rows_s8(p, p["rows"], inputs[0], a["weights"], a["bias"], a["mult"], a["shift"])


def run_fc_rows16(op: Op, inputs: list) -> np.ndarray:
    """16x8 `rows` rows: each through TFLite's 16x8 FullyConnected."""
    p, a = op.params, op.arrays
    x = np.asarray(inputs[0], np.int16).reshape(int(p["rows"]), int(p["in_features"]))
    return np.stack([fully_connected_s16(p, r, a["weights"], a["bias"], a["mult"], a["shift"]) for r in x])


# ---- float --------------------------------------------------------------------------------------
def _act(y, op: Op):
    lo, hi = op.attrs.get("act", (-np.inf, np.inf))
    return np.clip(y, lo, hi)


def float_fc(op: Op, inputs: list, weights=None, bias=None, act: bool = True):
    """The op in float, optionally with other weights/bias and without its fused activation."""
    a = op.attrs
    w = np.asarray(a.get("float_weights", a["weights"]) if weights is None else weights, np.float64)  # the model's own
    b = np.asarray(a.get("float_bias", a["bias"]) if bias is None else bias, np.float64)   # the model's own bias
    y = w @ np.asarray(inputs[0], np.float64).reshape(-1) + b
    return _act(y, op) if act else y


def float_fc_rows(op: Op, inputs: list):
    a = op.attrs
    return _act(inputs[0].reshape(a["rows"], -1) @ np.asarray(a["weights"], np.float64).T + a["bias"], op)


# ---- the reference kernels (runtime_c/edgec_fully_connected.c) -------------------------------------------------
def int4_weights(op: Op) -> bool:
    """Whether a quantized fully connected layer has packed int4 weights (`--weights int4`: the format of
    edgec/ops/conv/reference.py, rows [out][in] flattened)."""
    return "weights4" in op.arrays


def unpacked(op: Op) -> np.ndarray:
    """A layer's int4 weights as int8 values [out][in]."""
    n_out, n_in = int(op.params["out_features"]), int(op.params["in_features"])
    return unpack_int4(op.arrays["weights4"], n_out * n_in).reshape(n_out, n_in)


def run_fc4(op: Op, inputs: list) -> np.ndarray:
    """The int4 layer's twin: the int8 twin on the unpacked weights."""
    a = op.arrays
    return fully_connected_s8(op.params, inputs[0].reshape(-1), unpacked(op), a["bias"], a["mult"], a["shift"])


def c_fc_rows(op: Op, low, site: CallSite, cast=lambda pointer, const=False: pointer) -> str:
    n = site.arrays
    call = (f"{low.kernel.name}(&p, {cast(site.inputs[0], const=True)}, {n['weights']}, "
            f"{n['bias']}, {n['mult']}, {n['shift']}, {cast(site.output)});")
    return cemit.with_params("edgec_fully_connected_rows_params", op.params, call, only_fields=True)


STRUCT = "edgec_fully_connected_params"
FC = Kernel("edgec_fully_connected_s8", ("fully_connected",), REFERENCE, cemit.weighted, run=run_fc, struct=STRUCT,
            code_bytes=1000)     # the packed kernel's one-pass entry (its chunked one, 1.3 kB: long inputs only)
FC_16 = Kernel("edgec_fully_connected_s16", ("fully_connected",), REFERENCE, cemit.weighted16, precision=INT16,
               run=run_fc16, struct=STRUCT)
FC_4 = Kernel("edgec_fully_connected_s4", ("fully_connected",), REFERENCE, cemit.weighted4, precision=INT4,
              applies=int4_weights, run=run_fc4, struct=STRUCT)
FC_ROWS = Kernel("edgec_fully_connected_rows_s8", ("fully_connected_rows",), REFERENCE, c_fc_rows, run=run_fc_rows)
FC_16_B32 = Kernel("edgec_fully_connected_s16_b32", ("fully_connected",), REFERENCE, cemit.weighted16, precision=INT16,
                   applies=bias32, run=run_fc16, struct=STRUCT)       # 16x8 with an int32 bias
FC_ROWS_16_B32 = Kernel("edgec_fully_connected_rows_s16_b32", ("fully_connected_rows",), REFERENCE,
                        lambda op, low, site: c_fc_rows(op, low, site, cemit.i16), precision=INT16, applies=bias32,
                        run=run_fc_rows16)
FC_ROWS_16 = Kernel("edgec_fully_connected_rows_s16", ("fully_connected_rows",), REFERENCE,
                    lambda op, low, site: c_fc_rows(op, low, site, cemit.i16), precision=INT16, run=run_fc_rows16)


# ---- the fast kernels (runtime_c/fast/edgec_fully_connected_packed.c), speed variants, Helium ---------------------
def lower_fc(op: Op):
    """4 rows at a time over weights packed [block of 4 rows][group of 4 inputs][row][4]."""
    p, a = op.params, op.arrays
    w = a["weights"].reshape(p["out_features"], p["in_features"])
    got = fast.conv_like(op, w)
    if got is None:
        return None
    n_out, n_in = w.shape
    k4 = fast.k4(n_in)
    wp = np.zeros((n_out, k4), np.int8)
    wp[:, :n_in] = w
    blocks = n_out // 4 * 4
    head = wp[:blocks].reshape(-1, 4, k4 // 4, 4).transpose(0, 2, 1, 3)   # [block][group][row][4]
    packed = np.concatenate([head.reshape(-1), wp[blocks:].reshape(-1)]).astype(np.int8)
    params = {"in_features": n_in, "out_features": n_out, **got[0], "k4": k4}
    return params, {"fw": fast.words(packed), "rq": got[1]}


def c_fc_packed_rows(op: Op, low, site: CallSite) -> str:
    """Every row through the fast fully connected kernel (the same packing)."""
    return (f"{low.kernel.name}(&{site.prefix}_params, {site.inputs[0]}, "
            f"{site.prefix}_fw, {site.prefix}_rq, {site.scratch}, {site.output});")


# the int16 inputs of a pair of groups as the widened words hold them: (x0, x2) (x1, x3) (x4, x6) (x5, x7)
ROWS8_PAIR_ORDER = [0, 2, 1, 3, 4, 6, 5, 7]
ROWS8_FULL, ROWS8_RELU, ROWS8_CLAMP, ROWS8_UNIFORM = 0, 1, 2, 3    # fast/edgec_fully_connected_rows8.c


def rows8_stage(rq: np.ndarray, lo: int, hi: int) -> int:
    """The rows8 kernel's output stage for a layer: the full int8 range or a ReLU (a range up to 127) where every
    record's neg is -1 (the sign correction is then the accumulator's sign), else the generic clamp; the full range
    with one requantization for every row (a .tflite's per-tensor weight scale) reads it once a pass (uniform)."""
    rq = np.asarray(rq)
    if hi != 127 or np.any(rq[:, 3] != -1):
        return ROWS8_CLAMP
    if lo != -128:
        return ROWS8_RELU
    return ROWS8_UNIFORM if np.all(rq[:, 1:] == rq[:1, 1:]) else ROWS8_FULL


def rows8_fc(op: Op, base):
    """edgec_fully_connected_rows8_s8 (fast/edgec_fully_connected_rows8.c, blocks of 8 rows, two passes of 4): a
    header word (its output stage, `rows8_stage`), then per block of 8 rows (the last padded with copies of the last
    row) its two halves of 4 rows: the 4 doubled biases, then per pair of groups of 4 inputs (k4 rounded up to 8,
    zero weights) each row's 8 doubled int16 weights in ROWS8_PAIR_ORDER (4 words, one LDM)."""
    p = base.params
    w = packed_rows(base).astype(np.int16)
    n_out, k4 = w.shape
    k8, n = (k4 + 7) // 8 * 8, -(-n_out // 8) * 8
    w8 = np.zeros((n_out, k8), np.int16)
    w8[:, :k4] = w
    w8, rq = fast.padded(w8, n), fast.padded(base.arrays["rq"], n)
    halves = w8.reshape(n // 4, 4, k8 // 8, 8)[..., ROWS8_PAIR_ORDER].transpose(0, 2, 1, 3)   # [half][pair][row][8]
    bias = (2 * rq[:, 0].astype(np.int64)).astype(np.int32).view(np.uint32).reshape(n // 4, 4)
    body = np.concatenate([bias, fast.doubled_words(halves).reshape(n // 4, -1)], axis=1).reshape(-1)
    stage = rows8_stage(rq, int(p["act_min"]), int(p["act_max"]))
    return {**p, "k4": k8}, {**base.arrays, "fw": np.concatenate([np.array([stage], np.uint32), body]),
                             "rq": np.ascontiguousarray(rq)}


def wide_fc(op: Op, base):
    """The packed fully connected layer on int16 weights (edgec_fully_connected_wide_s8): the same order, each group
    of 4 weights w0..w3 of a row as the int16 values w0, w2, w1, w3."""
    w = base.arrays["fw"].view(np.int8).astype(np.int16).reshape(-1, 4)[:, [0, 2, 1, 3]]
    return base.params, {**base.arrays, "fw": fast.words(np.ascontiguousarray(w))}


def mve_fc(op: Op, base):
    """edgec_fully_connected_mve_s8: plain rows [out][k4] instead of blocks of 4 interleaved rows."""
    p = base.params
    n_out, n_in, k4 = p["out_features"], p["in_features"], p["k4"]
    wp = np.zeros((n_out, k4), np.int8)
    wp[:, :n_in] = op.arrays["weights"].reshape(n_out, n_in)
    return p, {"fw": fast.words(wp), "rq": base.arrays["rq"]}


def lower_fc4(op: Op):
    """edgec_fully_connected_packed_s4: rows of in_features rounded up to 8, nibbles in PERM8 order (the Arm DSP
    path unpacks 8 nibbles into four int16 pairs with SXTB16 and multiplies them with SMLAD)."""
    w = unpacked(op)
    got = fast.conv_like(op, w)
    if got is None:
        return None
    n_out, n_in = w.shape
    k8 = (n_in + 7) // 8 * 8
    params = {"in_features": n_in, "out_features": n_out, **got[0], "k4": k8}
    return params, {"fw": fast.nibble_words(w), "rq": got[1]}


def lower_fc_rows(op: Op):
    """Every row through the packed fully connected kernel: its packing, and the row count in its params."""
    got = lower_fc(op)
    return None if got is None else ({**got[0], "rows": int(op.params["rows"])}, got[1])


PACKED_STRUCT = "edgec_fully_connected_packed_params"
FC_WIDEN_GROUPS = 256   # EDGEC_FC_WIDEN_GROUPS (edgec_nn.h): over it (groups of 4 inputs), the chunked path (1.3 kB)


def packed_entry(params) -> str:
    """The C entry a packed call names (not the run-time test of _packed_s8): so the linker drops the other."""
    return f"edgec_fully_connected_packed_{'chunked' if params['k4'] // 4 > FC_WIDEN_GROUPS else 'onepass'}_s8"


PACKED = Kernel("edgec_fully_connected_packed_s8", ("fully_connected",), FAST, lambda op, low, site:
                cemit.fast_weighted_call(packed_entry(low.params), site.prefix, site.inputs[0], site.scratch,
                                         site.output), lower=lower_fc, struct=PACKED_STRUCT, cost=fc_cost("packed"),
                flash_bytes=fc_flash("packed"), cycles_per_instruction=FC_CPI["packed"],
                entries=("edgec_fully_connected_packed_onepass_s8", "edgec_fully_connected_packed_chunked_s8"))
# code each speed variant links in beside the generic kernels (arm-none-eabi-gcc -O2, Cortex-M4; rows8: its file's
# text), for the fit check's code estimate
ROWS8 = Kernel("edgec_fully_connected_rows8_s8", ("fully_connected",), VARIANT, cemit.fast_weighted, base=PACKED,
               variant="rows8", lower=rows8_fc, struct=PACKED_STRUCT, code_bytes=1700, cost=fc_cost("rows8"),
               flash_bytes=fc_flash("rows8"), cycles_per_instruction=FC_CPI["rows8"])
WIDE = Kernel("edgec_fully_connected_wide_s8", ("fully_connected",), VARIANT, cemit.fast_weighted, base=PACKED,
              variant="wide", lower=wide_fc, struct=PACKED_STRUCT, code_bytes=512, cost=fc_cost("wide"),
              flash_bytes=fc_flash("wide"), cycles_per_instruction=FC_CPI["wide"])
# int8 weights for parts whose flash has wait states (the memory chooser weighs its 1 byte a weight)
PAIRS = Kernel("edgec_fully_connected_pairs_s8", ("fully_connected",), VARIANT, cemit.fast_weighted, base=PACKED,
               variant="pairs", isa=DSP, applies=dense_pairs.applies, lower=dense_pairs.lower, struct=PACKED_STRUCT,
               code_bytes=1960, cost=fc_cost("pairs"), flash_bytes=fc_flash("pairs"),
               cycles_per_instruction=FC_CPI["pairs"])
FC_MVE = Kernel("edgec_fully_connected_mve_s8", ("fully_connected",), HELIUM, cemit.fast_weighted, base=PACKED,
                isa=MVE, lower=mve_fc, struct=PACKED_STRUCT)
PACKED_ROWS = Kernel("edgec_fully_connected_packed_rows_s8", ("fully_connected_rows",), FAST, c_fc_packed_rows,
                     lower=lower_fc_rows, struct="edgec_fully_connected_packed_rows_params")
PACKED_4 = Kernel("edgec_fully_connected_packed_s4", ("fully_connected",), FAST, cemit.fast_weighted, precision=INT4,
                  lower=lower_fc4, struct=PACKED_STRUCT)


def lower_fc_bias32(op: Op):
    """edgec_fully_connected_bias32_s8, for what the packed lowering declines (a bias beyond its |acc| < 2^30):
    int16 weight rows (fast.rows16_words), per row bias - input_zp * sum w modulo 2^32 (TFLite's sums wrap), the
    multiplier and its shifts (fast.rq_any, exact after the clamp to the activation range)."""
    p, a = op.params, op.arrays
    n_out, n_in = int(p["out_features"]), int(p["in_features"])
    w = np.asarray(a["weights"], np.int64).reshape(n_out, n_in)
    rq = np.zeros((-(-n_out // 4) * 4, 4), np.int64)
    for o, (m, sh) in enumerate(zip(np.broadcast_to(a["mult"], n_out), np.broadcast_to(a["shift"], n_out))):
        q = fast.rq_any(int(m), int(sh), int(p["act_max"]) - int(p["output_zp"]))
        if q is None:
            return None
        rq[o, 1:] = q
    rq[:n_out, 0] = np.asarray(a["bias"], np.int64) - int(p["input_zp"]) * w.sum(axis=1)
    params = {"in_features": n_in, "out_features": n_out, "k4": fast.k4(n_in),
              **{k: int(p[k]) for k in ("output_zp", "act_min", "act_max")}}
    return params, {"fw": fast.rows16_words(w), "rq_any": fast.wrapped(rq)}


def c_fc_bias32(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    return f"{low.kernel.name}(&{site.prefix}_params, {site.inputs[0]}, {n['fw']}, {n['rq_any']}, {site.output});"


# after PACKED: it runs only the layers the packed lowering declines
BIAS32 = Kernel("edgec_fully_connected_bias32_s8", ("fully_connected",), FAST, c_fc_bias32,
                lower=lower_fc_bias32, struct=PACKED_STRUCT)


# ---- the fast 16x8 fully connected layer, one row or several (fast/edgec_fully_connected_fast_s16.c: the fast 16x8
# convolution's 1x1 case, edgec/ops/conv/s16.py: int32 sums where the layer proves them exact; its params are that
# convolution's, a const record built here, not a struct filled on the stack at run time)
def lower_fc16(op: Op):
    p = op.params
    if "weights" not in op.arrays:          # int4 weights: the reference kernel
        return None
    w = np.asarray(op.arrays["weights"], np.int8).reshape(int(p["out_features"]), int(p["in_features"]))
    rq = conv16.records(op, w)
    if rq is None:
        return None
    k4, words = conv16.packed(w)
    return conv16.fc_params(p, k4), {"fw": words, "rq16": rq}


FAST_16 = Kernel("edgec_fully_connected_fast_s16", ("fully_connected", "fully_connected_rows"), FAST, conv16.call,
                 precision=INT16, lower=lower_fc16, struct=conv16.STRUCT)

KERNELS = [FC, FC_16_B32, FC_16, FC_4, FC_ROWS, FC_ROWS_16_B32, FC_ROWS_16, PACKED, ROWS8, WIDE, PAIRS, FC_MVE, PACKED_ROWS,
           PACKED_4, BIAS32, FAST_16]


def _macs(op: Op) -> int:
    w = op.attrs.get("weights", op.arrays.get("weights"))     # (a saved int4 build has neither: its params)
    return int(w.size) if w is not None else int(op.params["in_features"]) * int(op.params["out_features"])


OPS = [
    OpDef("fully_connected", "fully_connected", quantize_fc, float_fc, fuses_activation=True, weight_axis=0,
          bias_correction=True, adaptive_rounding=True, macs=lambda op, out: _macs(op), int16=Int16(quantize_fc16, qdq=always)),
    OpDef("fully_connected_rows", "fully_connected", quantize_fc_rows, float_fc_rows, fuses_activation=True,
          weight_axis=0, macs=lambda op, out: _macs(op) * int(op.attrs.get("rows", op.params.get("rows", 1))),
          int16=Int16(quantize_fc16, qdq=always, nameable=False, layer=True, rows=always)),   # a QDQ file's MatMul over [T, C]
    # rows; `--int16 NODE` and an int16 recurrence's chain (edgec/quant/int16.py) may name it, the budget does not
]


# ---- ONNX import
def _dense(cx, node, x, w_out_in, bias):
    xshape = cx.shape(x, node)
    if int(np.prod(xshape[:-1])) != 1:
        return _dense_rows(cx, node, x, w_out_in, bias)
    tensor, perm = cx.activation(x, node)
    if tensor in cx.feature_perm:
        w_out_in = w_out_in[:, cx.feature_perm[tensor]]
    elif not movement.same_order(xshape, perm, movement.identity(len(xshape))):
        tensor = cx.as_layout(x, movement.identity(len(xshape)), node)
    oshape = cx.shape(node.output[0], node)
    out = cx.new_tensor(node.output[0], oshape, node.output[0])
    cx.emit("fully_connected", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
            bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT)
    cx.values[node.output[0]] = (out, movement.identity(len(oshape)))


def _dense_rows(cx, node, x, w_out_in, bias):
    xshape = cx.shape(x, node)
    tensor = cx.as_layout(x, tuple(range(len(xshape))), node)
    oshape = cx.shape(node.output[0], node)
    out = cx.new_tensor(node.output[0], oshape, node.output[0])
    cx.emit("fully_connected_rows", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
            bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT,
            rows=int(np.prod(xshape[:-1], dtype=np.int64)))
    cx.values[node.output[0]] = (out, tuple(range(len(oshape))))


def import_gemm(cx, node):
    a, b = node.input[0], node.input[1]
    if b not in cx.consts:
        raise node_error(node, "the second operand (B) must be a constant weight matrix")
    if cx.attr(node, "transA", 0):
        a = _transposed(cx, node, a)
    w = cx.consts[b].astype(np.float32)
    w = w if cx.attr(node, "transB", 0) else w.T
    w = w * float(cx.attr(node, "alpha", 1.0))
    n = w.shape[0]
    bias = np.zeros(n, np.float32)
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in cx.consts:
            return _product_then_add(cx, node)
        c = cx.consts[node.input[2]].astype(np.float32)
        if c.size != 1 and c.shape[-1] == n and int(np.prod(c.shape[:-1])) != 1:
            raise node_error(node, f"a bias C of shape {list(c.shape)} that varies per row is not supported")
        bias = np.broadcast_to(c.reshape(-1)[-n:] if c.size > 1 else c.reshape(1), (n,)).copy()
        bias = bias * float(cx.attr(node, "beta", 1.0))
    _dense(cx, node, a, w, bias)


def _product_then_add(cx, node):
    """A Gemm whose C is computed (tf2onnx's Keras LSTM cell: x W + h U in one Gemm): the product A B as a Gemm
    without C, then an Add of C (edgec/ops/binary)."""
    from onnx import helper
    from edgec.ops import binary
    if float(cx.attr(node, "beta", 1.0)) != 1.0:
        raise node_error(node, "a computed bias (C) is supported with beta 1 only")
    y, name = node.output[0], node.name or "gemm"
    product = helper.make_node("Gemm", list(node.input[:2]), [f"{SYNTHETIC}{y}__product"], name=f"{name}__product")
    product.attribute.extend(a for a in node.attribute if a.name != "beta")
    cx.shapes[product.output[0]] = cx.shape(y, node)
    import_gemm(cx, product)
    binary.ONNX["Add"](cx, helper.make_node("Add", [product.output[0], node.input[2]], [y], name=f"{name}__plus_c"))


def _transposed(cx, node, x):
    """ONNX value x [K, M] as a new value [M, K] (Gemm transA)."""
    shape = cx.shape(x, node)
    t = x + "__T"
    cx.shapes[t] = tuple(shape[::-1])
    tensor, perm = cx.activation(x, node)
    cx.values[t] = (tensor, tuple(int(i) for i in np.argsort((1, 0))[list(perm)]))
    return t


def import_matmul(cx, node):
    a, b = node.input
    if a not in cx.consts and b not in cx.consts:
        return matmul.import_activation_matmul(cx, node)
    if b not in cx.consts or cx.consts[b].ndim < 2 or int(np.prod(cx.consts[b].shape[:-2])) != 1:
        raise node_error(node, "MatMul is supported as activation x constant 2-D matrix, or of two activations")
    w = cx.consts[b].astype(np.float32).reshape(cx.consts[b].shape[-2:]).T
    _dense(cx, node, a, w, np.zeros(w.shape[0], np.float32))


ONNX = {"Gemm": import_gemm, "MatMul": import_matmul}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_fully_connected(tx, op):
    """FULLY_CONNECTED: [out][in] int8 weights, one row or many (`fully_connected_rows`); per-tensor weights
    take TFLM's float32 scale product."""
    o, x, wq = tx.options(op), tx.input(op, 0, ACTIVATIONS), tx.const(op, 1)
    if wq.ndim != 2 or tx.tensor(x).size % wq.shape[1]:
        raise tx.unsupported(f"input of {tx.tensor(x).size} values for {list(wq.shape)} weights")
    rows, shape = tx.tensor(x).size // wq.shape[1], None
    if movement.dynamic_shape(tx, op) and int(np.prod(tx.shape(op.Outputs(0)))) != rows * wq.shape[0]:
        shape = (*tx.tensor(x).shape[:-1], wq.shape[0]) if o.KeepNumDims() else (rows, wq.shape[0])   # batch None
    x, out = activations(tx, op, 0, shape)          # int8, or int16 (16x8)
    arrays, w, b = tx.weighted(op, wq, 0, 2, out, per_tensor_float32=True)
    extra = {"rows": rows} if rows > 1 else {}
    tx.emit("fully_connected_rows" if rows > 1 else "fully_connected", op, [x], out, arrays,
            tx.act_range(op, out, o.FusedActivationFunction()), weights=w, bias=b, **extra)


TFLITE = {"FULLY_CONNECTED": import_tflite_fully_connected}
