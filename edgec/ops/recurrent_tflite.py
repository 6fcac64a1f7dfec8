"""`lstm_tflite`: TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input, hidden state and output, int8 weights
per tensor, int32 gate biases, int16 cell state of a power-of-two scale), computed as TFLite Micro's lstm_eval
computes it, bit for bit; the recurrent family's TFLite kind (edgec/ops/recurrent.py runs ONNX LSTMs its own
way). Kernel: runtime_c/edgec_recurrent_tflite.c.

Per step, for each gate (forget, input, cell, output; gate g of the arrays in that order):
  pre = sat16(clamp16(rq(W_g.(x - x_zp) + bias_g, mx_g, sx_g)) + clamp16(rq(R_g.(h - h_zp), mh_g, sh_g)))
  (the two products' multipliers from the float32 product of their scales over 2^-12, TFLM's
  GetQuantizedConvolutionMultipler), then TFLM's int16 sigmoid (forget, input, output) or tanh (cell) of the
  Q3.12 pre-activation: its 256-entry sigmoid table with linear interpolation.
  c = sat16(clamp16(rq(f * c, fc_mult, fc_shift)) + clamp16(rq(i * g, ig_mult, ig_shift)))   (then the cell clip)
  h = clamp8(rq(tanh_c(c) * o, oh_mult, oh_shift) + h_zp); the output of the step is h.
In 16x8 (`act16`: int16 input, hidden state and output, zero point 0, int64 gate biases; TFLite Micro's
LstmStep<int16_t, int8_t, int16_t, int64_t>) the gate products are int64 sums requantized by TFLite's 64-bit
MultiplyByQuantizedMultiplier, and h is clamped to int16; the rest is the same arithmetic.
The hidden and cell states are TFLite Micro's variable tensors: carried from one inference to the next
(edgec/ops/state.py: a persistent buffer of the arena), h = its zero point and c = 0 after reset, as TFLite Micro's
reset() leaves them.
"""
from __future__ import annotations

import numpy as np

from edgec.fixedpoint.scheme import quantize_multiplier, requantize, requantize64
from edgec.ir import Op, Tensor
from edgec.ops import cemit, fast, state as op_state
from edgec.ops.kernel import FAST, INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef

GATES = 4                # forget, input, cell, output (TFLM's order)
TANH = 4                 # tflite.ActivationFunctionType.TANH: the cell gate's activation
# TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h, Apache-2.0): sigmoid(k / 24) in
# unsigned 0.16, k = 0..255, the table TFLite's int16 Logistic and Tanh interpolate (its values, which no
# rounding of the formula reproduces exactly)
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535], np.int64)


# ---- TFLM's int16 activations ---------------------------------------------------------------------
def sigmoid16(v) -> np.ndarray:
    """reference_integer_ops::Logistic of int16 Q3.12 (input_multiplier 0: 3, no shift) -> Q0.15."""
    x = np.asarray(v, np.int64) * 3
    a = np.abs(x)
    uh = a >> 9
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    r = np.where(uh >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    r = np.where(x >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(np.int16).astype(np.int64)


def tanh_shift(power: int) -> tuple[int, int]:
    """lstm_internal::Tanh's (multiplier, shift) of an input of scale 2^power, in the power-of-two case resolved."""
    shift, mult = 15 + power - 3, 0
    if shift < 0:
        shift, mult = -shift, 3
    if mult == 0:
        mult, shift = 3 << shift, 0
    return mult, shift


def tanh16(v, power: int) -> np.ndarray:
    """reference_integer_ops::Tanh of int16 input of scale 2^power -> Q0.15."""
    mult, shift = tanh_shift(power)
    x = (np.asarray(v, np.int64) * mult + ((1 << (shift - 1)) if shift > 0 else 0)) >> shift
    a = np.abs(x)
    uh = a >> 8
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    r = np.where(uh >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    r = np.where(x >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(np.int16).astype(np.int64)


def _rq(acc, mult, shift):
    return np.asarray(requantize(np.asarray(acc, np.int64).astype(np.int32), mult, shift), np.int64)


def _clamp16(v):
    return np.clip(v, -32768, 32767)


# ---- NumPy integer twin (bit-exact with runtime_c/edgec_recurrent_tflite.c) -------------------------
def lstm_tflite_s8(p: dict, arr: dict, x, carried: dict | None = None) -> np.ndarray:
    """int8 output of the whole sequence, laid out as the input ([steps][batch] time major, else
    [batch][steps]), each step's hidden state; `carried` ({"c": int16, "h": int8 [batch][hidden]}): the state,
    updated in place (None: from reset)."""
    steps, batch, n_in, hid = (int(p[k]) for k in ("steps", "batch", "input_size", "hidden"))
    act16 = bool(p.get("act16", 0))
    xs = np.asarray(x, np.int16 if act16 else np.int8).astype(np.int64)
    gate_rq, lo, hi = (requantize64, -32768, 32767) if act16 else (_rq, -128, 127)
    xs = xs.reshape(steps, batch, n_in) if p["time_major"] else xs.reshape(batch, steps, n_in).transpose(1, 0, 2)
    wx = np.asarray(arr["w_x"], np.int64).reshape(GATES, hid, n_in)
    wh = np.asarray(arr["w_h"], np.int64).reshape(GATES, hid, hid)
    bias = np.asarray(arr["bias"], np.int64).reshape(GATES, hid)
    mx, sx, mh, sh = (np.asarray(arr[k], np.int64) for k in ("mult_x", "shift_x", "mult_h", "shift_h"))
    h = np.full((batch, hid), int(p["hidden_zp"]), np.int64)
    c = np.zeros((batch, hid), np.int64)
    if carried is not None:
        h, c = (carried[k].reshape(batch, hid).astype(np.int64) for k in ("h", "c"))
    ys = np.zeros((steps, batch, hid), np.int64)
    for t in range(steps):
        xt = xs[t] - int(p["input_zp"])
        hz = h - int(p["hidden_zp"])
        gates = []
        for g in range(GATES):
            a = _clamp16(np.asarray(gate_rq(xt @ wx[g].T + bias[g], mx[g], sx[g]), np.int64))
            b = _clamp16(np.asarray(gate_rq(hz @ wh[g].T, mh[g], sh[g]), np.int64))
            pre = _clamp16(a + b)
            gates.append(tanh16(pre, -12) if g == 2 and not p["cell_sigmoid"] else sigmoid16(pre))
        f, i, gg, o = gates
        c = _clamp16(_clamp16(_rq(f * c, p["fc_mult"], p["fc_shift"])) + _clamp16(_rq(i * gg, p["ig_mult"],
                                                                                        p["ig_shift"])))
        if p["cell_clip"] > 0:
            c = np.clip(c, -int(p["cell_clip"]), int(p["cell_clip"]))
        tc = tanh16(c, int(p["cell_power"]))
        h = np.clip(_rq(tc * o, p["oh_mult"], p["oh_shift"]) + int(p["hidden_zp"]), lo, hi)
        ys[t] = h
    if carried is not None:
        carried["h"][...], carried["c"][...] = h.reshape(carried["h"].shape), c.reshape(carried["c"].shape)
    out = ys if p["time_major"] else ys.transpose(1, 0, 2)
    return out.astype(np.int16 if act16 else np.int8).reshape(-1)


def state_lstm_tflite(op: Op) -> tuple:
    p = op.params or op.attrs
    shape = (p["batch"], p["hidden"])
    return (op_state.Field("c", "int16", shape, 0),
            op_state.Field("h", "int16" if p.get("act16") else "int8", shape, p["hidden_zp"]))


def run_lstm_tflite(op: Op, inputs: list, state: dict | None = None) -> np.ndarray:
    return lstm_tflite_s8(op.params, op.arrays, inputs[0], state)


def quantize_lstm_tflite(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """Nothing to derive: the importer gives every integer (a .tflite-only kind)."""


# ---- C ------------------------------------------------------------------------------------------
ARRAYS = ("w_x", "w_h", "bias", "mult_x", "shift_x", "mult_h", "shift_h")
FAST_ARRAYS = ("w_x", "w_h", "bias", "rq_x", "rq_h", "rq_oh")     # lower_lstm_tflite's


def c_lstm_tflite(op: Op, low, site: CallSite) -> str:
    arrays = ", ".join(site.arrays[k] for k in (FAST_ARRAYS if low.kernel.role == FAST else ARRAYS))
    fields = state_lstm_tflite(op)
    c, h = (op_state.c_field(site.state, fields, k) for k in ("c", "h"))
    x, y = site.inputs[0], site.output
    if op.params.get("act16"):
        x, y = cemit.i16(x, const=True), cemit.i16(y)
    call = f"{low.kernel.name}(&p, {x}, {arrays},\n        {c}, {h}, {site.scratch}, {y});"
    return cemit.with_params("edgec_lstm_tflite_params", op.params, call, only_fields=True)


def _unit_rows(w: np.ndarray, hid: int) -> np.ndarray:
    """[4 * hid][k] int8 gate rows -> the fast kernel's int16 words: per hidden unit, per group of 4 inputs (k
    zero-padded to whole groups), its 4 gates' rows as (w0, w2), (w1, w3)."""
    k = w.shape[1]
    groups = (k + 3) // 4
    wp = np.zeros((GATES, hid, groups * 4), np.int16)
    wp[:, :, :k] = w.reshape(GATES, hid, k)
    wp = wp.reshape(GATES, hid, groups, 4)[..., [0, 2, 1, 3]]
    return fast.words(np.ascontiguousarray(wp.transpose(1, 2, 0, 3)))


def _records(bound: np.ndarray, mult, shift) -> np.ndarray | None:
    """The 4 gates' edgec_rq records of one product (field 0: the left shift of a multiplier over 1, as TFLite's
    MultiplyByQuantizedMultiplier shifts the accumulator first), or None where an accumulator (|acc| <= bound, per
    gate) shifted left could reach 2^30 or a multiplier is outside what the records take."""
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    rq = fast.rq_records(np.zeros(GATES), mult, shift - left)
    if rq is None or np.any(bound * (1 << left) >= fast.ACC_LIMIT):
        return None
    rq[:, 0] = left
    return rq.reshape(-1)


def lower_lstm_tflite(op: Op):
    """edgec_lstm_tflite_fast_s8 (runtime_c/fast/edgec_lstm_tflite_fast.c): the weights widened and interleaved
    per hidden unit (_unit_rows), the zero points folded into the biases ([hidden][8]: the 4 gates' input biases
    bias - x_zp * row sum, then their recurrent ones -h_zp * row sum; modulo 2^32, as TFLite Micro's int32 sums
    wrap), the requantization records of each gate product and of the output gate x tanh(cell) product. None
    (the reference kernel) where a record does not apply (an accumulator that could reach 2^30) or the cell's
    multipliers are not the powers of two the kernel shifts by (TFLite's power-of-two cell scale gives them)."""
    p = op.params
    hid, n_in = int(p["hidden"]), int(p["input_size"])
    if p.get("act16"):
        return None
    if any(int(p[f"{k}_mult"]) != 1 << 30 or not -30 <= int(p[f"{k}_shift"]) <= 0 for k in ("fc", "ig")):
        return None
    m, e = int(p["oh_mult"]), -int(p["oh_shift"])
    if not (0 <= m != 1 << 30 and 0 <= e <= 30):
        return None
    # (|tanh(c) * o| < 2^30, no zero point: the rounding term 2^(e - 1) alone, whatever the shift, unlike
    # fast.rq_records' bound for a zero point folded in)
    arrays = {"rq_oh": np.array([0, m, (1 << e - 1) if e else 0, -1 if e else 0, e], np.int32)}
    wx = np.asarray(op.arrays["w_x"], np.int64).reshape(GATES * hid, n_in)
    wh = np.asarray(op.arrays["w_h"], np.int64).reshape(GATES * hid, hid)
    bx = np.asarray(op.arrays["bias"], np.int64) - int(p["input_zp"]) * wx.sum(axis=1)
    bh = -int(p["hidden_zp"]) * wh.sum(axis=1)
    for key, b, w, m, s in (("rq_x", bx, wx, "mult_x", "shift_x"), ("rq_h", bh, wh, "mult_h", "shift_h")):
        bound = (np.abs(b) + 128 * np.abs(w).sum(axis=1)).reshape(GATES, hid).max(axis=1)
        arrays[key] = _records(bound, op.arrays[m], op.arrays[s])
        if arrays[key] is None:
            return None
    bias = np.stack([bx.reshape(GATES, hid).T, bh.reshape(GATES, hid).T], axis=1).reshape(-1)
    arrays.update(w_x=_unit_rows(wx, hid), w_h=_unit_rows(wh, hid),
                  bias=(bias % (1 << 32)).astype(np.uint32).view(np.int32))
    return dict(p), arrays


def _macs(op: Op, out: Tensor) -> int:
    p = op.params or op.attrs
    return int(p["steps"] * p["batch"] * GATES * p["hidden"] * (p["input_size"] + p["hidden"]))


OPS = [OpDef("lstm_tflite", "recurrent", quantize_lstm_tflite, None, macs=_macs, sensitivity=False,
             state=state_lstm_tflite)]
KERNELS = [Kernel("edgec_lstm_tflite_s8", ("lstm_tflite",), REFERENCE, c_lstm_tflite, run=run_lstm_tflite,
                  code_bytes=1600),
           Kernel("edgec_lstm_tflite_fast_s8", ("lstm_tflite",), FAST, c_lstm_tflite, lower=lower_lstm_tflite),
           Kernel("edgec_lstm_tflite_s16", ("lstm_tflite",), REFERENCE, c_lstm_tflite, run=run_lstm_tflite,
                  precision=INT16, code_bytes=1600)]
ONNX: dict = {}


# ---- TFLite import
FORGET, INPUT, CELL, OUTPUT = (2, 1, 3, 4)          # input-to-gate weights of each gate; recurrent: + 4; bias: + 11
ABSENT = (9, 10, 11, 16, 17, 20, 21, 22, 23)        # peephole, projection, layer-norm inputs


def _mult(tx, real: float, what: str) -> tuple[int, int]:
    try:
        return quantize_multiplier(real)
    except ValueError as exc:
        raise tx.unsupported(f"{what}: {exc}") from None


def import_tflite_lstm(tx, op):
    """UNIDIRECTIONAL_SEQUENCE_LSTM with int8 input, or int16 (16x8) (see the module doc)."""
    o = tx.options(op)
    if op.InputsLength() != 24:
        raise tx.unsupported(f"{op.InputsLength()} inputs (TFLite Micro's LSTM takes 24)")
    present = [k for k in ABSENT if op.Inputs(k) >= 0]
    if present:
        raise tx.unsupported(f"inputs {present} given (peephole, projection or layer normalization: TFLite Micro's "
                             "kernel takes none)")
    x = tx.input(op, 0, ("int8", "int16"))
    xt, xshape = tx.tensor(x), tx.shape(op.Inputs(0))
    act16 = xt.dtype == "int16"
    act_type, bias_type = (7, np.int64) if act16 else (9, np.int32)
    if len(xshape) != 3:
        raise tx.unsupported(f"input of rank {len(xshape)} (the LSTM takes [batch, time, features] or time major)")
    time_major = bool(o.TimeMajor()) if o is not None else False
    steps, batch = (xshape[0], xshape[1]) if time_major else (xshape[1], xshape[0])
    n_in = int(xshape[2])
    if o is not None and o.FusedActivationFunction() not in (TANH,):
        raise tx.unsupported("a cell activation other than tanh")
    if o is not None and hasattr(o, "DiagonalRecurrentTensors") and o.DiagonalRecurrentTensors():
        raise tx.unsupported("diagonal recurrent weights")
    h_i, c_i = op.Inputs(18), op.Inputs(19)
    if tx.sg.Tensors(h_i).Type() != act_type or tx.sg.Tensors(c_i).Type() != 7:
        raise tx.unsupported(f"the hidden state must be {xt.dtype} as the input and the cell state int16 (the "
                             "integer LSTM)")
    hs, hz, _ = tx.qparams(h_i)
    if act16 and (xt.zero_point != 0 or np.any(hz != 0)):
        raise tx.unsupported("16x8 input or hidden state with a zero point (TFLite requires 0)")
    cs, _, _ = tx.qparams(c_i)
    power = int(np.round(np.log2(float(cs[0]))))
    if abs(np.log2(float(cs[0])) - power) >= 1e-3:
        raise tx.unsupported(f"cell state scale {float(cs[0]):g} is not a power of two")
    hid = int(tx.shape(h_i)[-1])
    w_x, w_h, bias, mult_x, shift_x, mult_h, shift_h = [], [], [], [], [], [], []
    gate_scale = 2.0 ** -12
    for k in (FORGET, INPUT, CELL, OUTPUT):
        for src, dst, ms, ss, act_scale, shape in ((k, w_x, mult_x, shift_x, xt.scale, (hid, n_in)),
                                                  (k + 4, w_h, mult_h, shift_h, float(hs[0]), (hid, hid))):
            w = tx.const(op, src)
            if w is None or w.dtype != np.int8 or tuple(w.shape) != shape:
                raise tx.unsupported(f"input {src} must be int8 weights of shape {list(shape)}")
            s, z, _ = tx.qparams(op.Inputs(src))
            if s.size != 1 or np.any(z != 0):
                raise tx.unsupported(f"weights {src} must be symmetric per tensor (TFLite Micro's LSTM kernel)")
            real = float(np.float32(np.float32(act_scale) * s[0])) / gate_scale
            m, sh = _mult(tx, real, f"weights {src}")
            dst.append(np.asarray(w, np.int8))
            ms.append(m)
            ss.append(sh)
        b = tx.const(op, k + 11)
        if b is None:
            b = np.zeros(hid, bias_type)
        if b.dtype != bias_type or b.size != hid:
            raise tx.unsupported(f"bias {k + 11} must be {np.dtype(bias_type)} with {hid} values")
        bias.append(np.asarray(b, bias_type).reshape(-1))
    out = tx.output(op, dtypes=(xt.dtype,))
    q = 2.0 ** -15
    cscale = float(cs[0])
    fc, ig, oh = (_mult(tx, q * cscale / cscale, "forget x cell"), _mult(tx, q * q / cscale, "input x cell gate"),
                  _mult(tx, q * q / float(hs[0]), "output x tanh(cell)"))
    clip = float(o.CellClip()) if o is not None else 0.0
    qclip = int(min(max(clip / cscale, -32768.0), 32767.0)) if clip > 0 else 0
    params = dict(steps=steps, batch=batch, input_size=n_in, hidden=hid, time_major=int(time_major),
                  input_zp=xt.zero_point, hidden_zp=int(hz[0]), cell_sigmoid=0, cell_power=power, cell_clip=qclip,
                  fc_mult=fc[0], fc_shift=fc[1], ig_mult=ig[0], ig_shift=ig[1], oh_mult=oh[0], oh_shift=oh[1],
                  act16=int(act16))
    arrays = dict(w_x=np.concatenate(w_x).reshape(-1), w_h=np.concatenate(w_h).reshape(-1),
                  bias=np.concatenate(bias), mult_x=np.array(mult_x, np.int32), shift_x=np.array(shift_x, np.int32),
                  mult_h=np.array(mult_h, np.int32), shift_h=np.array(shift_h, np.int32))
    tx.emit("lstm_tflite", op, [x], out, arrays, params, **params)


TFLITE = {"UNIDIRECTIONAL_SEQUENCE_LSTM": import_tflite_lstm}
