"""A float tail: a DEQUANTIZE inside a `.tflite` graph and the float32 operators after it, run on the device in
float32 as TFLite Micro runs them (its float-only builtins NEG, FLOOR, CEIL, ROUND, SQRT, EXP, LOG, SIN, COS,
SQUARE, FLOOR_DIV, FLOOR_MOD, L2_POOL_2D, SOFTMAX / LOG_SOFTMAX of a float32 tensor, and a QUANTIZE back into
integers), and EMBEDDING_LOOKUP (int32 ids into a constant int8 table: its rows copied, or dequantized into
float32 as TFLM's hybrid kernel).

The NumPy twins perform TFLM's float32 (and, where its C++ does, float64) operations in its order; NumPy's
float32 +, -, *, /, floor, ceil, sqrt, fmod are IEEE, so NEG, FLOOR, CEIL, ROUND, SQUARE, SQRT, FLOOR_DIV,
FLOOR_MOD, DEQUANTIZE, QUANTIZE and the lookup are bit-identical with TFLM. EXP, LOG, SIN, COS and the softmaxes
call the C library's expf, logf, sinf, cosf, whose last bit may differ between C libraries: the twin calls the
host's own (ctypes), so on the host the twin, the generated C and TFLM agree bit for bit; a device's C library may
differ in the last bits (DEVICE_ULPS, the bench's tolerance there). C kernels: runtime_c/edgec_float.c.
edgec/ops/registry.py hands DEQUANTIZE, QUANTIZE, SOFTMAX and LOG_SOFTMAX here when they compute in float
(`takes`).
"""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Op, Tensor
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef

F32 = np.float32
UNARY = {"NEG": 0, "FLOOR": 1, "CEIL": 2, "ROUND": 3, "SQRT": 4, "EXP": 5, "LOG": 6, "SIN": 7, "COS": 8,
         "SQUARE": 9}
BINARY = {"FLOOR_DIV": 0, "FLOOR_MOD": 1}
IN_CODE = {"int8": 0, "int16": 1, "uint8": 2}
RANK = 6                       # broadcasting over up to 6 dimensions (TFLM's 4-D and 5-D, and more)
DETECTION = "CUSTOM TFLite_Detection_PostProcess"
DEVICE_ULPS = 4               # a device's expf, logf, sinf, cosf against the host's (newlib's on the M4: 1 seen)


def bits(v: float) -> int:
    """A float32's bit pattern (an op's float parameter kept as an integer)."""
    return int(np.asarray(v, F32).view(np.int32))


def value(b: int) -> F32:
    return np.asarray(b, np.int32).view(F32)[()]


def c_float(b: int) -> str:
    """C99's hexadecimal literal of a float32 bit pattern: every bit as given."""
    return float(value(b)).hex() + "f"


def _f(pointer: str, const: bool = True) -> str:
    c = "const " if const else ""
    return f"({c}float *)({c}void *)({pointer})"


# ---- NumPy twins ------------------------------------------------------------------------------------------------
_LIBM: dict = {}


def libm(name: str, x) -> np.ndarray:
    """expf, logf, sinf, cosf of float32 values: the host C library's own functions (what the generated C and
    TFLM's x86 build call), through ctypes; float64 rounded once where no C library is found."""
    if not _LIBM:
        import ctypes
        import ctypes.util

        path = ctypes.util.find_library("m")
        lib = ctypes.CDLL(path) if path else None
        for f in ("expf", "logf", "sinf", "cosf"):
            fn = getattr(lib, f, None) if lib is not None else None
            if fn is not None:
                fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            _LIBM[f] = fn
    x = np.asarray(x, F32)
    fn = _LIBM[name]
    if fn is None:
        with np.errstate(all="ignore"):
            return getattr(np, name[:-1])(x.astype(np.float64)).astype(F32)
    return np.fromiter((fn(float(v)) for v in x.reshape(-1)), F32, x.size).reshape(x.shape)


def unary(x, code: int) -> np.ndarray:
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        if code == UNARY["ROUND"]:          # TFLM's RoundToNearest: half to even, through floor
            f = np.floor(x)
            d = x - f
            even = np.fmod(f, F32(2)) == 0
            return np.where((d < F32(0.5)) | ((d == F32(0.5)) & even), f, f + F32(1)).astype(F32)
        table = {0: np.negative, 1: np.floor, 2: np.ceil, 4: np.sqrt, 9: np.square}
        if code in table:
            return table[code](x).astype(F32)
    return libm({5: "expf", 6: "logf", 7: "sinf", 8: "cosf"}[code], x)


def binary(a, b, code: int) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, F32), np.asarray(b, F32))
    with np.errstate(all="ignore"):
        if code == BINARY["FLOOR_DIV"]:     # std::floor of the float64 quotient
            return np.floor(a.astype(np.float64) / b.astype(np.float64)).astype(F32)
        m = np.fmod(a, b)                    # std::fmod, then toward the divisor's sign
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m).astype(F32)


def softmax(x, beta: F32, log: bool) -> np.ndarray:
    """TFLM's float Softmax / LogSoftmax over the last axis (rows summed in order, in float32)."""
    x = np.asarray(x, F32)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        m = row.max()
        if log:
            e = libm("expf", row - m)
            s = F32(0)
            for v in e:
                s = F32(s + v)
            out[r] = row - m - libm("logf", s)
        else:
            e = libm("expf", (row - m) * F32(beta))
            s = F32(0)
            for v in e:
                s = F32(s + v)
            out[r] = e / s
    return out.reshape(x.shape)


def l2_pool(x, p: dict) -> np.ndarray:
    """TFLM's L2Pool: sqrt(sum of squares / taps) over the window's taps inside the image, then the clamp."""
    x = np.asarray(x, F32)
    n, h, w, c = x.shape
    oh, ow = p["out_h"], p["out_w"]
    out = np.empty((n, oh, ow, c), F32)
    lo, hi = value(p["lo_bits"]), value(p["hi_bits"])
    for y in range(oh):
        for xx in range(ow):
            y0, x0 = y * p["stride_h"] - p["pad_h"], xx * p["stride_w"] - p["pad_w"]
            ys = range(max(0, -y0), min(p["k_h"], h - y0))
            xs = range(max(0, -x0), min(p["k_w"], w - x0))
            s, k = np.zeros((n, c), F32), 0
            for fy in ys:
                for fx in xs:
                    v = x[:, y0 + fy, x0 + fx, :]
                    s = (s + v * v).astype(F32)
                    k += 1
            out[:, y, xx, :] = np.minimum(np.maximum(np.sqrt(s / F32(k)), lo), hi)
    return out


class IndexOutside(EdgecError):
    """An EMBEDDING_LOOKUP or GATHER id outside its table: the inference fails, as TFLite Micro's does."""


def lookup(ids, table: np.ndarray, p: dict) -> np.ndarray:
    """EMBEDDING_LOOKUP: the rows of `table` the ids name (run_lookup has refused an id outside the table);
    dequantized (scale, zero point 0) for a float output."""
    rows = table.reshape(table.shape[0], -1)
    out = rows[np.asarray(ids, np.int64).reshape(-1)].astype(np.int8)
    return (out.astype(F32) * value(p["scale_bits"])).astype(F32) if p["hybrid"] else out


def run_dequantize(op, ins):
    p = op.params
    return ((np.asarray(ins[0], np.int32) - p["zp"]).astype(F32) * value(p["scale_bits"])).astype(F32)


def run_quantize(op, ins):
    """TFLM's AffineQuantize: round half away from zero of the float32 quotient, plus the zero point, clamped."""
    p = op.params
    with np.errstate(all="ignore"):
        v = (np.asarray(ins[0], F32) / value(p["scale_bits"])).astype(np.float64)
        q = np.sign(v) * np.floor(np.abs(v) + 0.5)
    lo, hi = {0: (-128, 127), 1: (-32768, 32767), 2: (0, 255)}[p["out_code"]]
    q = np.clip(np.nan_to_num(q, nan=lo, posinf=hi, neginf=lo) + p["zp"], lo, hi)
    return q.astype({0: np.int8, 1: np.int16, 2: np.uint8}[p["out_code"]])


def run_slice(op, ins):
    p = op.params
    return np.asarray(ins[0], F32).reshape(p["outer"], p["row"])[:, p["start"]:p["start"] + p["n"]].copy()


def run_unary(op, ins):
    return unary(ins[0], op.params["code"])


def _second(op, ins):
    return op.arrays["b"] if "b" in op.arrays else ins[1]


def _spread(x, dims, strides):
    """x (flat) read at the output's indices through element strides (0: broadcast), as the C kernel reads it."""
    x = np.ascontiguousarray(np.asarray(x, F32).reshape(-1))
    return np.lib.stride_tricks.as_strided(x, tuple(int(d) for d in dims),
                                           tuple(int(s) * x.itemsize for s in strides), writeable=False)


def run_binary(op, ins):
    a, d = op.arrays, op.arrays["dims"]
    return binary(_spread(ins[0], d, a["a_strides"]), _spread(_second(op, ins), d, a["b_strides"]),
                  op.params["code"])


def run_softmax(op, ins):
    return softmax(ins[0], value(op.params["beta_bits"]), bool(op.params["log"]))


def run_l2_pool(op, ins):
    return l2_pool(ins[0], op.params)


def run_lookup(op, ins):
    """The lookup; an id outside the table fails the inference (the device's invoke returns EDGEC_ERROR_INDEX),
    as TFLite Micro's Invoke fails."""
    ids, rows = np.asarray(ins[0], np.int64).reshape(-1), op.params["rows"]
    bad = ids[(ids < 0) | (ids >= rows)]
    if bad.size:
        raise IndexOutside(f"{op.name}: id {int(bad[0])} outside the table's {rows} rows (TFLite Micro's Invoke "
                           "fails there too; the device's invoke returns EDGEC_ERROR_INDEX, -5)")
    return lookup(ins[0], op.arrays["table"], op.params)


# ---- C calls ----------------------------------------------------------------------------------------------------
def c_dequantize(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_float_dequantize({p['n']}, {p['in_code']}, {p['zp']}, {c_float(p['scale_bits'])}, "
            f"(const void *)({s.inputs[0]}), {_f(s.output, False)});")


def c_quantize(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_float_quantize({p['n']}, {p['out_code']}, {p['zp']}, {c_float(p['scale_bits'])}, "
            f"{_f(s.inputs[0])}, (void *)({s.output}));")


def c_slice(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_float_slice({p['outer']}, {p['row']}, {p['start']}, {p['n']}, {_f(s.inputs[0])}, "
            f"{_f(s.output, False)});")


def c_unary(op, low, s: CallSite) -> str:
    return f"edgec_float_unary({op.params['n']}, {op.params['code']}, {_f(s.inputs[0])}, {_f(s.output, False)});"


def c_binary(op, low, s: CallSite) -> str:
    b = s.arrays["b"] if "b" in s.arrays else _f(s.inputs[1])
    return (f"edgec_float_binary({op.params['code']}, {s.arrays['dims']}, {s.arrays['a_strides']}, "
            f"{s.arrays['b_strides']}, {_f(s.inputs[0])}, {b}, {_f(s.output, False)});")


def c_softmax(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_float_softmax({p['rows']}, {p['cols']}, {p['log']}, {c_float(p['beta_bits'])}, "
            f"{_f(s.inputs[0])}, {_f(s.output, False)});")


def c_l2_pool(op, low, s: CallSite) -> str:
    p = op.params
    args = ", ".join(str(p[k]) for k in ("batch", "in_h", "in_w", "channels", "out_h", "out_w", "k_h", "k_w",
                                         "stride_h", "stride_w", "pad_h", "pad_w"))
    return (f"edgec_float_l2_pool({args}, {c_float(p['lo_bits'])}, {c_float(p['hi_bits'])}, "
            f"{_f(s.inputs[0])}, {_f(s.output, False)});")


def c_lookup(op, low, s: CallSite) -> str:
    p = op.params
    return (f"if (edgec_float_embedding_lookup({p['ids']}, {p['rows']}, {p['cols']}, {p['hybrid']}, "
            f"{c_float(p['scale_bits'])}, (const int32_t *)(const void *)({s.inputs[0]}), {s.arrays['table']}, "
            f"(void *)({s.output})) != 0) return EDGEC_ERROR_INDEX;   /* an id outside the table, as TFLM fails */")


def computes(graph, tensor: str) -> bool:
    """Whether a float32 tensor is a float tail's (a graph output the bench compares as floats)."""
    return any(op.output == tensor and op.kind in _KINDS for op in graph.ops)


def device_ulps(graph) -> int:
    """How far (units in the last place) a device's float32 outputs may lie from the host reference's: DEVICE_ULPS
    where a float tail calls the C library's exp, log, sin or cos (a device's C library may round their last bit
    otherwise than the host's), else 0 (bit for bit)."""
    libm = {UNARY[k] for k in ("EXP", "LOG", "SIN", "COS")}
    return DEVICE_ULPS if any(op.kind == "float_softmax" or (op.kind == "float_unary" and op.params.get("code") in libm)
                              for op in graph.ops) else 0


def _quantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """Nothing to quantize: the importer's parameters are the op's (the file's scales as float32 bits)."""


_KINDS = {   # kind: (C kernel, twin, C call)
    "float_dequantize": ("edgec_float_dequantize", run_dequantize, c_dequantize),
    "float_quantize": ("edgec_float_quantize", run_quantize, c_quantize),
    "float_unary": ("edgec_float_unary", run_unary, c_unary),
    "float_binary": ("edgec_float_binary", run_binary, c_binary),
    "float_softmax": ("edgec_float_softmax", run_softmax, c_softmax),
    "float_l2_pool": ("edgec_float_l2_pool", run_l2_pool, c_l2_pool),
    "embedding_lookup": ("edgec_float_embedding_lookup", run_lookup, c_lookup),
    "float_slice": ("edgec_float_slice", run_slice, c_slice),
}
OPS = [OpDef(kind, "float", _quantize, None, qparams="fixed", fixed_qparams=lambda op: (1.0, 0), sensitivity=False)
       for kind in _KINDS]
KERNELS = [Kernel(name, (kind,), REFERENCE, call, run=run, code_bytes=600)
           for kind, (name, run, call) in _KINDS.items()]
ONNX: dict = {}

from edgec.ops.float_tail.tflite import (TFLITE, TFLITE_FLOAT, computed_indices,  # noqa: E402,F401
                                         import_gather, takes)     # (the importers)
