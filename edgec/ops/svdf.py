"""`svdf`: TFLite's integer SVDF (int8 input and output, int8 feature weights, int8 or int16 time weights and
activation state, int32 bias), computed as TFLite Micro's svdf reference kernel computes it, bit for bit; the
recurrent family's (a state over time). Kernels: runtime_c/edgec_svdf.c, and the fast one
runtime_c/fast/edgec_svdf_fast.c (the same state, the same numbers).

For each batch row, with filters = units * rank and the state [filters][memory]:
  the state shifts one step to the left (its oldest column drops out);
  state[f][memory - 1] = state_zp + clamp_T(rq(Wf[f].(x - x_zp), m1, s1))   (T: the state's type; the sum
  stored as T, wrapping as TFLM's cast does)
  acc[u] = bias[u] + sum over the rank r of sum_j Wt[u*rank + r][j] * (state[u*rank + r][j] - state_zp)
  y[u] = clamp8(rq(acc[u], m2, s2) + y_zp)
(m1 from float32(x_scale * wf_scale / state_scale), m2 from float32(state_scale * wt_scale / y_scale), as TFLM's
Prepare; TFLM's integer SVDF applies no fused activation.) The state is TFLite Micro's variable tensor: carried from
one inference to the next (edgec/ops/state.py: a persistent buffer of the arena, [batch][filters][memory] of the
state's type), every entry its zero point after reset, as TFLite Micro's reset() leaves it.
"""
from __future__ import annotations

import numpy as np

from edgec.fixedpoint.scheme import quantize_multiplier, requantize
from edgec.ir import Op, Tensor
from edgec.ops import cemit, fast, state as op_state
from edgec.ops.kernel import FAST, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef

STATE_RANGE = {9: (-128, 127), 7: (-32768, 32767)}       # tflite.TensorType INT8, INT16 -> the state's clamp


# ---- NumPy integer twin (bit-exact with runtime_c/edgec_svdf.c) ------------------------------------
def svdf_s8(p: dict, arr: dict, x, carried: np.ndarray | None = None) -> np.ndarray:
    """The output of one inference; `carried` ([batch][filters][memory], int8 or int16): the state, updated in place
    (None: from reset)."""
    batch, n_in, rank, units, memory = (int(p[k]) for k in ("batch", "input_size", "rank", "units", "memory"))
    filters = units * rank
    xs = np.asarray(x, np.int8).astype(np.int64).reshape(batch, n_in) - int(p["input_zp"])
    wf = np.asarray(arr["w_feature"], np.int64).reshape(filters, n_in)
    wt = np.asarray(arr["w_time"], np.int64).reshape(filters, memory)
    szp = int(p["state_zp"])
    state = np.full((batch, filters, memory), szp, np.int64)       # TFLite Micro's reset state
    if carried is not None:
        state[:] = carried.reshape(batch, filters, memory)
    state[:, :, :-1] = state[:, :, 1:]
    feat = np.asarray(requantize((xs @ wf.T).astype(np.int32), p["mult1"], p["shift1"]), np.int64)
    lo, hi = int(p["state_min"]), int(p["state_max"])
    state[:, :, -1] = (szp + np.clip(feat, lo, hi) - lo) % (hi - lo + 1) + lo    # stored as T: wraps, as TFLM's
    if carried is not None:
        carried.reshape(-1)[:] = state.reshape(-1)
    per_filter = ((state - szp) * wt).sum(axis=2)                  # [batch][filters]
    acc = np.asarray(arr["bias"], np.int64) + per_filter.reshape(batch, units, rank).sum(axis=2)
    y = np.asarray(requantize(acc.astype(np.int32), p["mult2"], p["shift2"]), np.int64) + int(p["output_zp"])
    return np.clip(y, -128, 127).astype(np.int8).reshape(-1)


def state_svdf(op: Op) -> tuple:
    """The state entries (the reference kernel and the twin keep them shifted, oldest first; the fast kernel keeps
    each row a ring) and the fast kernel's ring position (the oldest entry's; any after reset, every entry alike)."""
    p = op.params or op.attrs
    dtype = "int8" if int(p["state_max"]) == 127 else "int16"          # the state's type, as TFLite Micro holds it
    return (op_state.Field("state", dtype, (p["batch"], p["units"] * p["rank"], p["memory"]), p["state_zp"]),
            op_state.Field("pos", "int32", (1,), 0))


def run_svdf(op: Op, inputs: list, state: dict | None = None) -> np.ndarray:
    return svdf_s8(op.params, op.arrays, inputs[0], None if state is None else state["state"])


def quantize_svdf(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """Nothing to derive: the importer gives every integer (a .tflite-only kind)."""


# ---- C ------------------------------------------------------------------------------------------
def c_svdf(op: Op, low, site: CallSite) -> str:
    a = site.arrays
    call = (f"{low.kernel.name}(&p, {site.inputs[0]}, {a['w_feature']}, {a['w_time']}, {a['bias']},\n"
            f"        {op_state.c_field(site.state, state_svdf(op), 'state')}, {site.output});")
    return cemit.with_params("edgec_svdf_params", op.params, call, only_fields=True)


def _macs(op: Op, out: Tensor) -> int:
    p = op.params or op.attrs
    return int(p["batch"] * p["units"] * p["rank"] * (p["input_size"] + p["memory"]))


# ---- the fast kernel (runtime_c/fast/edgec_svdf_fast.c): the same numbers; the state a ring (no shift)
def ring_order(state: np.ndarray, pos: int) -> np.ndarray:
    """The fast kernel's state [.., memory] (a ring, its oldest entry at `pos`) in the twin's order, oldest first."""
    return np.roll(np.asarray(state), -int(pos), axis=-1)


def lower_svdf_fast(op: Op):
    """Constants of edgec_svdf_fast_s8 (edgec_nn.h): the feature weights widened and blocked, each row of time
    weights twice (the ring's window), the input and state zero points folded into per-filter and per-unit
    constants (modulo 2^32, as the sums wrap); an int8 state's time weights int8 (it is int8 in the state too); None
    (the reference kernel) for a memory whose state rows would not start on words (odd; int8: not a multiple of 4),
    or an output multiplier not below 1 with a right shift (edgec_rq_right), or outside fast.rq_any (the feature
    multiplier any shift fast.rq_any takes: an int16 state's small scale makes it 1 or more, a left shift)."""
    p, a = op.params, op.arrays
    q1 = fast.rq_any(p["mult1"], p["shift1"], int(p["state_max"]))
    q2 = fast.rq_any(p["mult2"], p["shift2"], 127 - int(p["output_zp"]))
    eight = int(p["state_max"]) == 127
    if q1 is None or q2 is None or q2[1] or not q2[2] or int(p["memory"]) % (4 if eight else 2):
        return None         # (the output: edgec_rq_right, no left shift, a right one; rows not starting on words)
    filters, n_in, units = int(p["units"]) * int(p["rank"]), int(p["input_size"]), int(p["units"])
    wt_type = np.int8 if eight else np.int16
    wf = np.asarray(a["w_feature"], np.int64).reshape(filters, n_in)
    fbias = np.zeros(-(-filters // 4) * 4, np.int64)
    fbias[:filters] = -int(p["input_zp"]) * wf.sum(axis=1)
    wt_sum = np.asarray(a["w_time"], np.int64).reshape(units, -1).sum(axis=1)
    tbias = np.asarray(a["bias"], np.int64) - int(p["state_zp"]) * wt_sum
    params = {k: int(p[k]) for k in ("batch", "input_size", "rank", "units", "memory", "state_zp", "state_min",
                                     "state_max", "output_zp")}
    params.update(mult1=q1[0], left1=q1[1], right1=q1[2], mult2=q2[0], left2=q2[1], right2=q2[2],
                  path=4 * (q1[1] != 0 or q1[2] == 0)          # the feature sums on edgec_rq_any
                  + (0 if p["rank"] != 1 or p["memory"] != 8 else 1 if eight else 2))     # the unrolled units
    return params, {"w_feature": fast.rows16_words(wf), "fbias": fast.wrapped(fbias),
                    "w_time": fast.words(np.tile(np.asarray(a["w_time"]).reshape(filters, -1), 2).astype(wt_type)),
                    "tbias": fast.wrapped(tbias)}


def c_svdf_fast(op: Op, low, site: CallSite) -> str:
    a = site.arrays
    fields = state_svdf(op)
    call = (f"{low.kernel.name}(&p, {site.inputs[0]}, {a['w_feature']}, {a['fbias']}, {a['w_time']}, {a['tbias']},\n"
            f"        {op_state.c_field(site.state, fields, 'state')}, {op_state.c_field(site.state, fields, 'pos')},\n"
            f"        {site.output});")
    return cemit.with_params("edgec_svdf_fast_params", low.params, call, only_fields=True)


OPS = [OpDef("svdf", "recurrent", quantize_svdf, None, macs=_macs, sensitivity=False, state=state_svdf)]
KERNELS = [Kernel("edgec_svdf_s8", ("svdf",), REFERENCE, c_svdf, run=run_svdf, code_bytes=1800),   # (the fast one's)
           Kernel("edgec_svdf_fast_s8", ("svdf",), FAST, c_svdf_fast, lower=lower_svdf_fast)]
ONNX: dict = {}


# ---- TFLite import
def _mult(tx, real: float, what: str) -> tuple[int, int]:
    try:
        return quantize_multiplier(real)
    except ValueError as exc:
        raise tx.unsupported(f"{what}: {exc}") from None


def import_tflite_svdf(tx, op):
    """SVDF with int8 input (see the module doc)."""
    o = tx.options(op)
    rank = int(o.Rank()) if o is not None else 1
    x = tx.input(op, 0)
    xt, xshape = tx.tensor(x), tx.shape(op.Inputs(0))
    if len(xshape) != 2:
        raise tx.unsupported(f"input of rank {len(xshape)} (SVDF takes [batch, features])")
    batch, n_in = (int(d) for d in xshape)
    wf, wt = tx.const(op, 1), tx.const(op, 2)
    if wf is None or wf.dtype != np.int8 or wf.ndim != 2 or wf.shape[1] != n_in:
        raise tx.unsupported(f"feature weights must be int8 [filters, {n_in}]")
    filters = int(wf.shape[0])
    if rank < 1 or filters % rank:
        raise tx.unsupported(f"{filters} filters are not a multiple of the rank {rank}")
    if wt is None or wt.dtype not in (np.int8, np.int16) or wt.ndim != 2 or wt.shape[0] != filters:
        raise tx.unsupported(f"time weights must be int8 or int16 [{filters}, memory]")
    s_i = op.Inputs(4)
    st = tx.sg.Tensors(s_i)
    if st.Type() not in STATE_RANGE or np.dtype(wt.dtype).itemsize != (1 if st.Type() == 9 else 2):
        raise tx.unsupported("the activation state must be int8 or int16, of the time weights' type")
    units, memory = filters // rank, int(wt.shape[1])
    bias = tx.const(op, 3)
    if bias is None:
        bias = np.zeros(units, np.int32)
    if bias.dtype != np.int32 or bias.size != units:
        raise tx.unsupported(f"bias must be int32 with {units} values")
    (wfs, wfz, _), (wts, wtz, _), (ss, sz, _) = (tx.qparams(op.Inputs(k)) for k in (1, 2, 4))
    if wfs.size != 1 or wts.size != 1 or np.any(wfz != 0) or np.any(wtz != 0):
        raise tx.unsupported("weights must be symmetric per tensor (TFLite Micro's SVDF kernel)")
    out = tx.output(op)
    yt = tx.tensor(out)
    f32 = np.float32
    m1 = _mult(tx, float(f32(f32(f32(xt.scale) * wfs[0]) / ss[0])), "feature multiplier")
    m2 = _mult(tx, float(f32(f32(ss[0] * wts[0]) / f32(yt.scale))), "output multiplier")
    lo, hi = STATE_RANGE[st.Type()]
    params = dict(batch=batch, input_size=n_in, rank=rank, units=units, memory=memory, input_zp=xt.zero_point,
                  state_zp=int(sz[0]), state_min=lo, state_max=hi, mult1=m1[0], shift1=m1[1], mult2=m2[0],
                  shift2=m2[1], output_zp=yt.zero_point)
    arrays = dict(w_feature=np.asarray(wf, np.int8).reshape(-1), w_time=np.asarray(wt, np.int16).reshape(-1),
                  bias=np.asarray(bias, np.int32).reshape(-1))
    tx.emit("svdf", op, [x], out, arrays, params, **params)


TFLITE = {"SVDF": import_tflite_svdf}
