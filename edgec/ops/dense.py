"""Dense layers: fully_connected (one row, [out][in] weights), fully_connected_rows (the same weights on
several rows) and matmul (two activations), int8 and (fully_connected) TFLite 16x8; kernels in
runtime_c/edgec_fully_connected.c, the fast one in runtime_c/fast/edgec_fully_connected.c."""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit, fast
from edgec.ops.opdef import CallSite, Int16, OpDef
from edgec.quant.scheme import act_range, finish, finish16, quantize_multiplier, requantize, weighted, weighted16


# ---- quantize ---------------------------------------------------------------------------------
def quantize_fc(op: Op, ins: list[Tensor], out: Tensor) -> None:
    weighted(op, ins[0], out, 0)
    n_out, n_in = op.attrs["weights"].shape
    op.params = dict(in_features=n_in, out_features=n_out, input_zp=ins[0].zero_point,
                     output_zp=out.zero_point, **act_range(op, out))


def quantize_fc_rows(op: Op, ins: list[Tensor], out: Tensor) -> None:
    quantize_fc(op, ins, out)
    op.params["rows"] = op.attrs["rows"]


def quantize_fc16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    weighted16(op, ins, out, 0)


def quantize_matmul(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    mult, shift = quantize_multiplier(ins[0].scale * ins[1].scale / out.scale)
    op.params = dict(batch=a["batch"], m=a["m"], k=a["k"], n=a["n"], a_batch_stride=a["a_batch_stride"],
                     b_batch_stride=a["b_batch_stride"], a_zp=ins[0].zero_point, b_zp=ins[1].zero_point,
                     mult=mult, shift=shift, output_zp=out.zero_point, **act_range(op, out))


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
    return finish16(w @ x + np.asarray(bias, np.int64), mult, shift, p)


def matmul_s8(p: dict, a, b) -> np.ndarray:
    """[batch][m][k] x [batch][k][n] (a batch stride of 0 broadcasts), one multiplier."""
    bt, m, k, n = (int(p[f]) for f in ("batch", "m", "k", "n"))
    a = np.asarray(a, np.int8).reshape(-1)
    b = np.asarray(b, np.int8).reshape(-1)
    out = []
    for i in range(bt):
        am = a[i * int(p["a_batch_stride"]):][:m * k].reshape(m, k).astype(np.int64) - int(p["a_zp"])
        bm = b[i * int(p["b_batch_stride"]):][:k * n].reshape(k, n).astype(np.int64) - int(p["b_zp"])
        out.append((am @ bm).astype(np.int32))
    acc = np.stack(out)
    y = requantize(acc, p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return np.clip(y, int(p["act_min"]), int(p["act_max"])).astype(np.int8).reshape(-1)


def run_fc(op: Op, inputs: list) -> np.ndarray:
    a = op.arrays
    return fully_connected_s8(op.params, inputs[0].reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])


def run_fc16(op: Op, inputs: list) -> np.ndarray:
    a = op.arrays
    return fully_connected_s16(op.params, inputs[0].reshape(-1), a["weights"], a["bias"], a["mult"], a["shift"])


def run_fc_rows(op: Op, inputs: list) -> np.ndarray:
    p, a = op.params, op.arrays
    return fully_connected_rows_s8(p, p["rows"], inputs[0], a["weights"], a["bias"], a["mult"], a["shift"])


def run_matmul(op: Op, inputs: list) -> np.ndarray:
    return matmul_s8(op.params, inputs[0], inputs[1])


# ---- float --------------------------------------------------------------------------------------
def _act(y, op: Op):
    lo, hi = op.attrs.get("act", (-np.inf, np.inf))
    return np.clip(y, lo, hi)


def float_fc(op: Op, inputs: list, weights=None, bias=None, act: bool = True):
    """The op in float, optionally with other weights/bias and without its fused activation."""
    a = op.attrs
    w = np.asarray(a["weights"] if weights is None else weights, np.float64)
    b = np.asarray(a.get("float_bias", a["bias"]) if bias is None else bias, np.float64)   # the model's own bias
    y = w @ np.asarray(inputs[0], np.float64).reshape(-1) + b
    return _act(y, op) if act else y


def float_fc_rows(op: Op, inputs: list):
    a = op.attrs
    return _act(inputs[0].reshape(a["rows"], -1) @ np.asarray(a["weights"], np.float64).T + a["bias"], op)


def float_matmul(op: Op, inputs: list):
    p = op.attrs
    a, b = inputs[0].reshape(-1), inputs[1].reshape(-1)
    out = []
    for i in range(p["batch"]):
        am = a[i * p["a_batch_stride"]:][:p["m"] * p["k"]].reshape(p["m"], p["k"])
        bm = b[i * p["b_batch_stride"]:][:p["k"] * p["n"]].reshape(p["k"], p["n"])
        out.append(am @ bm)
    return _act(np.stack(out), op)


# ---- C ------------------------------------------------------------------------------------------
def c_fc(op: Op, site: CallSite) -> str:
    if op.lowered:
        return cemit.fast_weighted_call(op.lowered["kernel"], site.prefix, site.inputs[0], site.scratch, site.output)
    return cemit.weighted_call("edgec_fully_connected_s8", site.prefix, site.inputs[0], site.arrays, site.output)


def c_fc16(op: Op, site: CallSite) -> str:
    return cemit.weighted_call16("edgec_fully_connected_s16", site.prefix, site.inputs[0], site.arrays, site.output)


def c_fc_rows(op: Op, site: CallSite) -> str:
    n = site.arrays
    call = (f"edgec_fully_connected_rows_s8(&p, {op.params['rows']}, {site.inputs[0]}, {n['weights']}, "
            f"{n['bias']}, {n['mult']}, {n['shift']}, {site.output});")
    return cemit.with_params("edgec_fc_params", op.params, call, cemit.FIELDS["edgec_fc_params"])


def c_matmul(op: Op, site: CallSite) -> str:
    call = f"edgec_matmul_s8(&p, {site.inputs[0]}, {site.inputs[1]}, {site.output});"
    return cemit.with_params("edgec_matmul_params", op.params, call)


# ---- fast kernel --------------------------------------------------------------------------------
def lower_fc(op: Op) -> dict | None:
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
    return {"kernel": "edgec_fast_fc_s8", "struct": "edgec_fast_fc_params", "params": params,
            "arrays": {"fw": fast.words(packed), "rq": got[1]}, "scratch_bytes": 2 * k4}


OPS = [
    OpDef("fully_connected", "fully_connected", quantize_fc, run_fc, float_fc, c_fc, struct="edgec_fc_params",
          fuses_activation=True, weight_axis=0, bias_correction=True,
          macs=lambda op, out: int(op.attrs.get("weights", op.arrays.get("weights")).size),
          lower=lower_fc, int16=Int16(quantize_fc16, run_fc16, c_fc16), code_bytes=1000),
    OpDef("fully_connected_rows", "fully_connected", quantize_fc_rows, run_fc_rows, float_fc_rows, c_fc_rows,
          fuses_activation=True, weight_axis=0),
    OpDef("matmul", "fully_connected", quantize_matmul, run_matmul, float_matmul, c_matmul, fuses_activation=True),
]
