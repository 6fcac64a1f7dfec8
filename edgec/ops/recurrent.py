"""`lstm` and `gru`: ONNX LSTM and GRU over a sequence fixed at build time (any batch the model fixes, one
direction per op; a bidirectional layer is two ops and a concat; layout 1 is rewritten to layout 0 between
Transposes at load, `to_time_major`), quantized the way TFLite's integer LSTM is: int8 input and
output, int8 per-row weights, gate pre-activations in int16 Q3.12, gate activations (sigmoid, tanh) in int16
Q0.15 by TFLite's 513-entry int16 table with linear interpolation, the LSTM cell state in int16 Q4.11 (a fixed
power-of-two scale). Unlike TFLite, the hidden state fed back to the next step stays int16 Q0.15 (TFLite feeds
back its int8 output); only what leaves the op is requantized to int8. With attrs['weight_bits'] 4 (`--weights
int4`, `--int4 NODE`) W and R are int4 in [-7, 7] per row, each packed two per byte in its flattened order
(arrays 'w_x4', 'w_h4' in place of 'w_x', 'w_h'; kernels edgec_recurrent_s4 / edgec_recurrent_fast_s4). Kernels: runtime_c/edgec_recurrent.c (portable), and
runtime_c/fast/edgec_recurrent_fast.c (`lower_recurrent`: the same recurrence, its gate matrix products on SMLAD).

Per step t (ONNX gate order: LSTM i, o, f, c; GRU z, r, h), with rq = TFLite's Q31 requantization:
  pre[j] = rq(bias_x[j] + W[j]·x_t, mult_x[j], shift_x[j]) + wb[j] + rq(R[j]·h, mult_h[j], shift_h[j]) + rb[j]
LSTM: i, o, f = sigmoid(pre), g = tanh(pre); c = f*c + i*g; h = o * tanh(c)
      with peepholes (ONNX's input P, TF's use_peepholes): pre_i, pre_f += P_i, P_f (.) c_{t-1} and pre_o +=
      P_o (.) c_t before their sigmoids, each term rq(p * c, peep_mult[g], peep_shift[g]) saturated into the
      Q3.12 pre-activation; P int16 per gate (scale max|P_g| / 32767, as TFLite's integer LSTM quantizes its
      cell-to-gate weights symmetric int16, its multiplier cell scale * weight scale / gate scale); the int16
      weights [3][hidden] (i, o, f) follow init_c in that array (params.peephole 1)
GRU: z, r = sigmoid(pre); n = tanh(x part + r * (R h + rb))  (linear_before_reset = 1, PyTorch's)
                          or tanh(x part + R (r*h) + rb)     (linear_before_reset = 0, ONNX's default)
     h = (1 - z) * n + z * h
"""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError, node_error
from edgec.ir import Op, Tensor
from edgec.ops import cemit, concat, fast, movement
from edgec.ops.kernel import FAST, INT4, INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef
from edgec.fixedpoint.scheme import pack_int4, quantize_multiplier, quantize_weights, requantize, unpack_int4

GATE_BITS = 12          # gate pre-activations: int16 Q3.12
STATE_BITS = 15         # gate activations and the hidden state: int16 Q0.15
CELL_BITS = 11          # LSTM cell state: int16 Q4.11 (|c| < 16)
MAX_HIDDEN = 512        # 127 * 32768 * hidden stays inside the int32 recurrent accumulator
GATES = {"lstm": 4, "gru": 3}
OUT_SEQUENCE, OUT_LAST_HIDDEN, OUT_LAST_CELL = 0, 1, 2   # the op's output: ONNX's Y, Y_h or Y_c


# ---- int16 tables (TFLite's LUTPopulate / lut_lookup_with_interpolation for int16) ------------------
def table16(fn) -> np.ndarray:
    """fn sampled at the 513 Q3.12 inputs (k - 256) * 128, in Q0.15, saturated to int16."""
    x = (np.arange(513, dtype=np.float64) - 256) * 128 / (1 << GATE_BITS)
    return np.clip(np.round(fn(x) * (1 << STATE_BITS)), -32768, 32767).astype(np.int16)


def sigmoid_table() -> np.ndarray:
    return table16(lambda x: 1.0 / (1.0 + np.exp(-x)))


def tanh_table() -> np.ndarray:
    return table16(np.tanh)


def lookup16(table, v) -> np.ndarray:
    """TFLite's int16 table lookup: entry (v >> 7) + 256 and the next, interpolated by the low 7 bits."""
    v = np.asarray(v, np.int64)
    t = np.asarray(table, np.int64)
    idx = (v >> 7) + 256
    base = t[idx]
    delta = ((t[idx + 1] - base) * (v & 0x7F) + 64) >> 7
    return np.clip(base + delta, -32768, 32767)


# ---- quantize ---------------------------------------------------------------------------------
def _q12(b) -> np.ndarray:
    return np.clip(np.round(np.asarray(b, np.float64) * (1 << GATE_BITS)), -2 ** 31, 2 ** 31 - 1).astype(np.int32)


def _multipliers(real) -> tuple[np.ndarray, np.ndarray]:
    ms = [quantize_multiplier(float(r)) for r in real]
    return np.array([m for m, _ in ms], np.int32), np.array([s for _, s in ms], np.int32)


def quantize_recurrent(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    per_channel, four = a.get("per_channel", True), a.get("weight_bits", 8) == 4
    wx, sx = quantize_weights(a["W"], 0, per_channel, 7 if four else 127)
    wh, sh = quantize_weights(a["R"], 0, per_channel, 7 if four else 127)
    wx, wh = np.asarray(wx, np.int8), np.asarray(wh, np.int8)
    mult_x, shift_x = _multipliers(x.scale * np.asarray(sx) * (1 << GATE_BITS))
    mult_h, shift_h = _multipliers(np.asarray(sh) * 2.0 ** (GATE_BITS - STATE_BITS))
    state_bits = CELL_BITS if a["output"] == OUT_LAST_CELL else STATE_BITS
    out_mult, out_shift = quantize_multiplier(2.0 ** -state_bits / out.scale)
    op.params.update(steps=a["steps"], batch=a.get("batch", 1), input_size=a["input_size"], hidden=a["hidden"],
                     gru=int(op.kind == "gru"), reverse=a["reverse"],
                     linear_before_reset=a.get("linear_before_reset", 0),
                     output=a["output"], out_mult=out_mult, out_shift=out_shift,
                     output_zp=out.zero_point)
    op.arrays.update(
        w_x=wx, w_h=wh, bias_x=(-int(x.zero_point) * wx.astype(np.int64).sum(axis=1)).astype(np.int32),
        mult_x=mult_x, shift_x=shift_x, mult_h=mult_h, shift_h=shift_h, wb=_q12(a["Wb"]), rb=_q12(a["Rb"]),
        init_h=np.clip(np.round(np.asarray(a["init_h"]) * (1 << STATE_BITS)), -32768, 32767).astype(np.int16),
        init_c=np.clip(np.round(np.asarray(a["init_c"]) * (1 << CELL_BITS)), -32768, 32767).astype(np.int16),
        sigmoid=sigmoid_table(), tanh=tanh_table())
    op.params.update(peephole=0, peep_mult=[0, 0, 0], peep_shift=[0, 0, 0])     # every field of the C params
    if a.get("P") is not None:
        _quantize_peephole(op, np.asarray(a["P"], np.float64))
    for key in ("w_x", "w_h"):
        op.arrays.pop(key + "4", None)
        if four:
            op.arrays[key + "4"] = pack_int4(op.arrays.pop(key))


def _quantize_peephole(op: Op, P: np.ndarray) -> None:
    """The peephole weights [3][hidden] (i, o, f) int16 per gate after init_c, and their multipliers: c (Q4.11)
    times p (scale s) into Q3.12 is 2 s (TFLite's effective_cell_to_*_scale: cell * weight / gate scale)."""
    hid = int(op.attrs["hidden"])
    P = P.reshape(3, hid)
    scale = np.maximum(np.abs(P).max(axis=1), 1e-30) / 32767.0
    if np.any(2 * scale >= 1.0):
        raise EdgecError(f"node '{op.name}': peephole weights up to {np.abs(P).max():g} (edgec takes |P| < 0.5 * 32767)")
    q = np.clip(np.round(P / scale[:, None]), -32767, 32767).astype(np.int16)
    mult, shift = _multipliers(2 * scale)
    op.params.update(peephole=1, peep_mult=[int(m) for m in mult], peep_shift=[int(v) for v in shift])
    op.arrays["init_c"] = np.concatenate([op.arrays["init_c"], q.reshape(-1)]).astype(np.int16)


def peephole_weights(p: dict, arr: dict) -> np.ndarray | None:
    """The int16 peephole weights [3][hidden] (i, o, f) after init_c, or None."""
    if not p.get("peephole"):
        return None
    n = int(p["batch"]) * int(p["hidden"])
    return np.asarray(arr["init_c"], np.int64)[n:].reshape(3, int(p["hidden"]))


def matrices(p: dict, arr: dict) -> tuple[np.ndarray, np.ndarray]:
    """W [gates*hidden][input_size] and R [gates*hidden][hidden] as int64 values (int8, or int4 unpacked)."""
    rows, n_in, hid = (3 if p["gru"] else 4) * int(p["hidden"]), int(p["input_size"]), int(p["hidden"])
    if "w_x4" in arr:
        return (unpack_int4(arr["w_x4"], rows * n_in).reshape(rows, n_in).astype(np.int64),
                unpack_int4(arr["w_h4"], rows * hid).reshape(rows, hid).astype(np.int64))
    return np.asarray(arr["w_x"], np.int64).reshape(rows, n_in), np.asarray(arr["w_h"], np.int64).reshape(rows, hid)


# ---- NumPy integer twin (bit-exact with runtime_c/edgec_recurrent.c) ---------------------------------
def _rshift_round(v, bits: int):
    """floor((v + 2^(bits-1)) / 2^bits): rounding half up, as the C."""
    return (np.asarray(v, np.int64) + (1 << (bits - 1))) >> bits


def _sat16(v):
    return np.clip(v, -32768, 32767)


def recurrent_s8(p: dict, arr: dict, x, wide: bool = False) -> np.ndarray:
    """The whole sequence of [steps][batch][input_size]; int8 hidden state of every step
    ([steps][batch][hidden]), or the last hidden or cell state ([batch][hidden]), as p["output"] says.
    wide: int16 input and output (edgec_recurrent_s16)."""
    steps, n_in, hid, gru = int(p["steps"]), int(p["input_size"]), int(p["hidden"]), bool(p["gru"])
    batch = int(p["batch"])
    xs = np.asarray(x, np.int16 if wide else np.int8).reshape(steps, batch, n_in).astype(np.int64)
    wx, wh = matrices(p, arr)
    sig, tnh = arr["sigmoid"], arr["tanh"]
    mh, sh, rb = arr["mult_h"], arr["shift_h"], np.asarray(arr["rb"], np.int64)
    h = np.asarray(arr["init_h"], np.int64).reshape(batch, hid).copy()
    c = np.asarray(arr["init_c"], np.int64)[:batch * hid].reshape(batch, hid).copy()
    ys = np.zeros((steps, batch, hid), np.int64)
    peep = peephole_weights(p, arr)

    def peeped(pre, g, cell):       # a gate's pre-activation + rq(p_g * c), saturated (g: 0 i, 1 o, 2 f)
        if peep is None:
            return pre
        return _sat16(pre + np.asarray(requantize((peep[g] * cell).astype(np.int32), p["peep_mult"][g],
                                                  p["peep_shift"][g]), np.int64))

    def rq_h(v, rows):
        return np.asarray(requantize(v.astype(np.int32), mh[rows], sh[rows]), np.int64) + rb[rows]

    for k in range(steps):
        t = steps - 1 - k if p["reverse"] else k
        px = np.asarray(requantize((xs[t] @ wx.T + arr["bias_x"]).astype(np.int32), arr["mult_x"], arr["shift_x"]),
                        np.int64) + arr["wb"]
        if not gru:
            pre = _sat16(px + rq_h(h @ wh.T, slice(None)))
            i, f = (lookup16(sig, peeped(pre[:, q * hid:(q + 1) * hid], q, c)) for q in (0, 2))
            gg = lookup16(tnh, pre[:, 3 * hid:])
            c = _sat16(_rshift_round(f * c, STATE_BITS) + _rshift_round(i * gg, 2 * STATE_BITS - CELL_BITS))
            o = lookup16(sig, peeped(pre[:, hid:2 * hid], 1, c))
            h = _rshift_round(o * lookup16(tnh, _sat16(c << (GATE_BITS - CELL_BITS))), STATE_BITS)
        else:
            zr, nr = slice(0, 2 * hid), slice(2 * hid, 3 * hid)
            pre = _sat16(px[:, zr] + rq_h(h @ wh[zr].T, zr))
            z, r = lookup16(sig, pre[:, :hid]), lookup16(sig, pre[:, hid:])
            px = np.clip(px, -2 ** 31, 2 ** 31 - 1)
            if p["linear_before_reset"]:
                hn = np.clip(rq_h(h @ wh[nr].T, nr), -2 ** 31, 2 ** 31 - 1)
                npre = px[:, nr] + _rshift_round(r * hn, STATE_BITS)
            else:
                npre = px[:, nr] + rq_h(_rshift_round(r * h, STATE_BITS) @ wh[nr].T, nr)
            n = lookup16(tnh, _sat16(npre))
            h = _rshift_round((32768 - z) * n + z * h, STATE_BITS)
        ys[t] = h
    last = ys[0 if p["reverse"] else steps - 1]
    out = {OUT_SEQUENCE: ys, OUT_LAST_HIDDEN: last, OUT_LAST_CELL: c}[int(p["output"])]
    q = requantize(out.astype(np.int32), p["out_mult"], p["out_shift"]) + int(p["output_zp"])
    if wide:
        return np.clip(q, -32768, 32767).astype(np.int16).reshape(-1)
    return np.clip(q, -128, 127).astype(np.int8).reshape(-1)


def run_recurrent(op: Op, inputs: list) -> np.ndarray:
    return recurrent_s8(op.params, op.arrays, inputs[0])


def run_recurrent16(op: Op, inputs: list) -> np.ndarray:
    return recurrent_s8(op.params, op.arrays, inputs[0], wide=True)


def _nothing(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """The 16x8 variant (int16 input and output, zero points 0): quantize_recurrent's parameters as they are
    (bias_x is 0, out_mult / out_shift take Q0.15 to the int16 output's scale)."""


def takes_int16_recurrence(op: Op) -> bool:
    """Whether a float model's recurrence may run edgec_recurrent_s16 (edgec/quant/int16.py recurrent_default:
    with --int16-recurrence, or by default where the calibration set says it gains, ptq.recurrence_choice): an
    LSTM or GRU whose int32 input product holds every int16 input (|x| <= 32768)."""
    return op.kind in GATES and int(op.attrs["input_size"]) <= MAX_HIDDEN


# ---- float --------------------------------------------------------------------------------------
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def float_recurrent(op: Op, inputs: list) -> np.ndarray:
    a = op.attrs
    steps, hid, batch = a["steps"], a["hidden"], a.get("batch", 1)
    xs = np.asarray(inputs[0], np.float64).reshape(steps, batch, a["input_size"])
    W, R, Wb, Rb = (np.asarray(a[k], np.float64) for k in ("W", "R", "Wb", "Rb"))
    h = np.asarray(a["init_h"], np.float64).reshape(batch, hid).copy()
    c = np.asarray(a["init_c"], np.float64).reshape(batch, hid).copy()
    P = np.zeros((3, hid)) if a.get("P") is None else np.asarray(a["P"], np.float64).reshape(3, hid)
    ys = np.zeros((steps, batch, hid))
    for k in range(steps):
        t = steps - 1 - k if a["reverse"] else k
        px = xs[t] @ W.T + Wb
        if op.kind == "lstm":
            pre = px + h @ R.T + Rb
            i, f = (_sigmoid(pre[:, q * hid:(q + 1) * hid] + P[q] * c) for q in (0, 2))
            c = f * c + i * np.tanh(pre[:, 3 * hid:])
            h = _sigmoid(pre[:, hid:2 * hid] + P[1] * c) * np.tanh(c)
        else:
            pre = px[:, :2 * hid] + h @ R[:2 * hid].T + Rb[:2 * hid]
            z, r = _sigmoid(pre[:, :hid]), _sigmoid(pre[:, hid:])
            Rn, Rbn = R[2 * hid:], Rb[2 * hid:]
            hn = r * (h @ Rn.T + Rbn) if a.get("linear_before_reset", 0) else (r * h) @ Rn.T + Rbn
            n = np.tanh(px[:, 2 * hid:] + hn)
            h = (1 - z) * n + z * h
        ys[t] = h
    last = ys[0 if a["reverse"] else steps - 1]
    return {OUT_SEQUENCE: ys, OUT_LAST_HIDDEN: last, OUT_LAST_CELL: c}[a["output"]].reshape(-1)


# ---- C ------------------------------------------------------------------------------------------
ARRAYS = ("w_x", "w_h", "bias_x", "mult_x", "shift_x", "mult_h", "shift_h", "wb", "rb", "init_h", "init_c",
          "sigmoid", "tanh")


def c_recurrent(op: Op, low, site: CallSite) -> str:
    n = site.arrays
    arrays = ", ".join(n.get(k + "4", n.get(k)) for k in ARRAYS)     # (int4: the packed w_x4, w_h4)
    none = "(const int32_t *)0"
    records = f"{n.get('rq_x', none)}, {n.get('rq_h', none)}, " if low.kernel.role == FAST else ""
    x, y = site.inputs[0], site.output
    if low.kernel.precision == INT16:
        x, y = cemit.i16(x, const=True), cemit.i16(y)
    call = f"{low.kernel.name}(&p, {x}, {arrays}, {records}\n        {site.scratch}, {y});"
    return cemit.with_params("edgec_recurrent_params", op.params, call)


def _padded_rows(w: np.ndarray) -> np.ndarray:
    """int8 weight rows zero-padded to whole words, as words (the fast kernel's layout)."""
    rows, k = w.shape
    wp = np.zeros((rows, (k + 3) // 4 * 4), np.int8)
    wp[:, :k] = w
    return fast.words(wp)


def lower_recurrent16(op: Op):
    """edgec_recurrent_fast_s16: lower_recurrent's arrays, the x products' records checked for int16 inputs."""
    return lower_recurrent(op, x_max=32768)


def lower_recurrent(op: Op, x_max: int = 128):
    """edgec_recurrent_fast_s8 (runtime_c/fast/edgec_recurrent_fast.c): the same arrays with the weight rows
    padded to words (int4 weights, edgec_recurrent_fast_s4: rows padded to 8 and 8 nibbles a word in
    fast.nibble_words' order), plus the fast requantization records of each product (rq_x, rq_h; field 0 the
    left shift of a multiplier over 1; left out, and the reference requantization used, when a multiplier or an
    accumulator is outside what they take). None (the portable s4 kernel) for int4 rows whose 16-fold sums could
    leave int32."""
    p = op.params
    g, hid = GATES[op.kind], int(p["hidden"])
    wx, wh = matrices(p, op.arrays)
    four = "w_x4" in op.arrays
    bias = np.asarray(op.arrays["bias_x"], np.int64)
    records = {}
    for key, acc, m, s in (("rq_x", np.abs(bias) + x_max * np.abs(wx).sum(axis=1), "mult_x", "shift_x"),
                           ("rq_h", 32768 * np.abs(wh).sum(axis=1), "mult_h", "shift_h")):
        # a multiplier over 1 (shift > 0): the accumulator shifted left first (record field 0), which is what
        # TFLite's MultiplyByQuantizedMultiplier does, then the record of the multiplier with no shift
        left = np.maximum(np.asarray(op.arrays[s], np.int64), 0)
        rq = fast.rq_records(np.zeros(g * hid), op.arrays[m], np.asarray(op.arrays[s], np.int64) - left)
        if rq is not None and np.all(acc * (1 << left) < fast.ACC_LIMIT):     # (records take |acc| < 2^30)
            rq[:, 0] = left
            records[key] = rq.reshape(-1)
    if four and (16 * 128 * np.abs(wx).sum(axis=1).max() >= 2 ** 31 or 16 * 32768 * np.abs(wh).sum(axis=1).max() >= 2 ** 31):
        return None     # (the int4 DSP path sums 16 times each product in int32: the portable s4 kernel instead)
    pack = fast.nibble_words if four else _padded_rows
    arrays = {**{k: v for k, v in op.arrays.items() if k not in ("w_x4", "w_h4")},
              "w_x": pack(wx.astype(np.int8)), "w_h": pack(wh.astype(np.int8)), **records}
    return dict(p), arrays


def int4_weights(op: Op) -> bool:
    """Whether a quantized recurrence has packed int4 W and R."""
    return "w_x4" in op.arrays


KINDS = ("lstm", "gru")
RECURRENT = Kernel("edgec_recurrent_s8", KINDS, REFERENCE, c_recurrent, run=run_recurrent, code_bytes=2400)
RECURRENT_4 = Kernel("edgec_recurrent_s4", KINDS, REFERENCE, c_recurrent, precision=INT4, applies=int4_weights,
                     run=run_recurrent)
RECURRENT_16 = Kernel("edgec_recurrent_s16", KINDS, REFERENCE, c_recurrent, precision=INT16, run=run_recurrent16)
RECURRENT_FAST = Kernel("edgec_recurrent_fast_s8", KINDS, FAST, c_recurrent, lower=lower_recurrent)
RECURRENT_FAST_16 = Kernel("edgec_recurrent_fast_s16", KINDS, FAST, c_recurrent, precision=INT16,
                           applies=lambda op: not int4_weights(op), lower=lower_recurrent16)
RECURRENT_FAST_4 = Kernel("edgec_recurrent_fast_s4", KINDS, FAST, c_recurrent, precision=INT4, lower=lower_recurrent)
KERNELS = [RECURRENT, RECURRENT_4, RECURRENT_16, RECURRENT_FAST, RECURRENT_FAST_4, RECURRENT_FAST_16]


def _macs(op: Op, out: Tensor) -> int:
    a = op.params or op.attrs       # (a saved build's graph keeps the params, not the float attributes)
    return int(a["steps"] * a.get("batch", 1) * GATES[op.kind] * a["hidden"] * (a["input_size"] + a["hidden"]))


OPS = [OpDef(kind, "recurrent", quantize_recurrent, float_recurrent, macs=_macs, int16=Int16(_nothing, layer=True))
       for kind in KINDS]


# ---- ONNX import
def to_time_major(model) -> int:
    """Rewrite every LSTM/GRU/RNN node of layout 1 (batch first, which onnxruntime cannot run: calibration
    would fail) as layout 0 between Transposes, in place (edgec/frontend/loader.py, before shape inference);
    returns how many it rewrote. The Transposes of batch 1 are views on the device."""
    from onnx import helper
    nodes, count = [], 0
    read = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
    for node in model.graph.node:
        layout = [a for a in node.attribute if a.name == "layout"]
        if node.op_type not in ("LSTM", "GRU", "RNN") or node.domain not in ("", "ai.onnx") or not layout \
                or layout[0].i != 1:
            nodes.append(node)
            continue
        count += 1
        layout[0].i = 0
        tag = node.name or node.output[0] or node.op_type
        for i, perm in ((0, [1, 0, 2]), (5, [1, 0, 2]), (6, [1, 0, 2])):
            if len(node.input) > i and node.input[i]:
                name = f"{node.input[i]}__time_major_{tag}"
                nodes.append(helper.make_node("Transpose", [node.input[i]], [name], perm=perm,
                                              name=f"{tag}/to_time_major_{i}"))
                node.input[i] = name
        after = []
        for i, perm in ((0, [2, 0, 1, 3]), (1, [1, 0, 2]), (2, [1, 0, 2])):
            if len(node.output) > i and node.output[i] and node.output[i] not in read:
                node.output[i] = ""         # not used: no Transpose (and the importer computes nothing for it)
            elif len(node.output) > i and node.output[i]:
                name = f"{node.output[i]}__time_major"
                after.append(helper.make_node("Transpose", [name], [node.output[i]], perm=perm,
                                              name=f"{tag}/to_batch_first_{i}"))
                node.output[i] = name
        nodes += [node] + after
    if count:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return count


def _initial_state(cx, node, i, dirs, size):
    """A constant initial state (zeros when absent) as [dirs][batch * hidden]; an error when it is computed."""
    if len(node.input) <= i or not node.input[i]:
        return np.zeros((dirs, size))
    if node.input[i] not in cx.consts:
        raise node_error(node, f"its initial state '{node.input[i]}' must be a constant (an initial state "
                               "computed on the device or given as a model input is not supported yet)")
    return np.asarray(cx.consts[node.input[i]], np.float64).reshape(dirs, size)


def import_recurrent(cx, node):
    """LSTM / GRU: forward, reverse or bidirectional (two ops and a concat), layout 0 (to_time_major rewrote
    layout 1 at load)."""
    kind = node.op_type.lower()
    gates = GATES[kind]
    shape = cx.shape(node.input[0], node)
    if int(cx.attr(node, "layout", 0)):
        raise node_error(node, "layout 1 reached the importer (edgec.frontend.loader.prepare rewrites it)")
    steps, batch, n_in = shape
    direction = cx.attr(node, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    dirs = 2 if direction == "bidirectional" else 1
    W, R = (np.asarray(cx.const_input(node, i), np.float64) for i in (1, 2))
    hid = int(R.shape[-1])
    _check_limits(cx, node, kind, hid)
    B = np.asarray(cx.const_input(node, 3, np.zeros((dirs, 2 * gates * hid))), np.float64)
    seq_lens = cx.const_input(node, 4)
    if seq_lens is not None and np.any(np.asarray(seq_lens) != steps):
        raise node_error(node, f"sequence_lens must all be the sequence length ({steps}) when given")
    init_h = _initial_state(cx, node, 5, dirs, batch * hid)
    init_c = _initial_state(cx, node, 6, dirs, batch * hid) if kind == "lstm" else np.zeros((dirs, batch * hid))
    P = cx.const_input(node, 7) if kind == "lstm" and len(node.input) > 7 and node.input[7] else None
    P = None if P is None or not np.any(np.asarray(P)) else np.asarray(P, np.float64).reshape(dirs, 3 * hid)
    outputs = [k for k, o in enumerate(node.output[:3]) if o and cx.real_uses(o)] or [0]
    x = cx.as_layout(node.input[0], movement.identity(3), node)
    for k in outputs:       # Y, Y_h, Y_c: one op (per direction) each, the recurrence run again for each
        value = node.output[k]
        oshape = cx.shape(value, node)
        parts = []
        for d in range(dirs):
            src = value if dirs == 1 else f"edgec:{value}:{'forward' if d == 0 else 'reverse'}"
            out = cx.new_tensor(src.replace(":", "_"), tuple(oshape) if dirs == 1 else
                                ((steps, batch, hid) if k == OUT_SEQUENCE else (batch, hid)), src)
            cx.emit(kind, node, [x], out, steps=steps, batch=batch, input_size=n_in, hidden=hid, W=W[d], R=R[d],
                    Wb=B[d, :gates * hid], Rb=B[d, gates * hid:], init_h=init_h[d], init_c=init_c[d],
                    reverse=int(direction == "reverse" or d == 1), output=k, gru=int(kind == "gru"),
                    linear_before_reset=int(cx.attr(node, "linear_before_reset", 0)),
                    **({} if P is None else {"P": P[d]}))
            parts.append(out)
        if dirs == 2:   # [rows][2][batch * hid]: each row's forward then reverse states (ONNX's num_directions)
            out = cx.new_tensor(value, tuple(oshape), value)
            concat.emit_concat(cx, node, parts, out, outer=steps if k == OUT_SEQUENCE else 1,
                               chunks=[batch * hid] * 2)
            parts = [out]
        cx.values[value] = (parts[0], movement.identity(len(oshape)))


def _check_limits(cx, node, kind, hid):
    acts = cx.attr(node, "activations")
    default = [b"Sigmoid", b"Tanh", b"Tanh"] if kind == "lstm" else [b"Sigmoid", b"Tanh"]
    if acts and [a if isinstance(a, bytes) else a.encode() for a in acts][:len(default)] != default:
        raise node_error(node, "only the default activations (sigmoid, tanh) are supported")
    if cx.attr(node, "clip") is not None:
        raise node_error(node, "the 'clip' attribute (cell clipping) is not supported")
    if cx.attr(node, "input_forget", 0):
        raise node_error(node, "input_forget (coupled input and forget gates) is not supported")
    if hid > MAX_HIDDEN:
        raise node_error(node, f"hidden_size {hid} is over edgec's limit of {MAX_HIDDEN}")


ONNX = {"LSTM": import_recurrent, "GRU": import_recurrent}
