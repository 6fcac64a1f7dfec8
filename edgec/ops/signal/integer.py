"""TFLite's builtin operators where a signal-library front end computes on plain (not quantized) integers around
the Signal* operators: CAST, a 1-D STRIDED_SLICE, a CONCATENATION of one tensor with constants, and int32 ADD,
MUL, DIV, MINIMUM and MAXIMUM with a constant operand (TFLM's micro_speech preprocessor re-zeroes the energies
outside its band with the first ones and maps its log features to int8 with the others); and the int32
comparisons with a constant and SELECT_V2 of int32 values that Keras' Embedding writes before its GATHER (token
ids below 0 wrapped). RESHAPE of such a tensor
is the same bytes. edgec/ops/registry.py hands these operators here when their first input is such a tensor
(`takes`), and to their own families otherwise. Twins below; C kernels in runtime_c/edgec_signal.c."""
from __future__ import annotations

import numpy as np

from edgec.ir import DTYPES, Tensor

CODE = {"int8": 0, "int16": 1, "int32": 2, "uint32": 3, "uint64": 4}
ARITH = {"ADD": 0, "MUL": 1, "DIV": 2, "MINIMUM": 3, "MAXIMUM": 4}
COMPARE = {"EQUAL": 0, "NOT_EQUAL": 1, "LESS": 2, "LESS_EQUAL": 3, "GREATER": 4, "GREATER_EQUAL": 5}
TYPE_OF = {9: "int8", 7: "int16", 2: "int32", 15: "uint32", 12: "uint64"}
PLAIN = ("int32", "uint32", "uint64")


# ---- twins ---------------------------------------------------------------------------------------------------
def cast(x, to: str) -> np.ndarray:
    """C's conversion: the low bits of the two's-complement value."""
    v = np.asarray(x)
    u = v.astype(np.uint64) if v.dtype == np.uint64 else v.astype(np.int64).astype(np.uint64)
    return u.astype(f"uint{np.dtype(DTYPES[to]).itemsize * 8}").view(DTYPES[to])


def arith(x, b, code: int) -> np.ndarray:
    a, c = np.asarray(x, np.int64), np.broadcast_to(np.asarray(b, np.int64).reshape(-1), np.shape(x))
    if code == ARITH["ADD"]:
        v = a + c
    elif code == ARITH["MUL"]:
        v = a * c
    elif code == ARITH["DIV"]:
        v = np.sign(a) * np.sign(c) * (np.abs(a) // np.abs(c))          # C's division truncates
    else:
        v = np.minimum(a, c) if code == ARITH["MINIMUM"] else np.maximum(a, c)
    return ((v + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def compare(x, b, code: int) -> np.ndarray:
    a, c = np.asarray(x, np.int64), np.broadcast_to(np.asarray(b, np.int64).reshape(-1), np.shape(x))
    return [a == c, a != c, a < c, a <= c, a > c, a >= c][code].astype(np.uint8)


def run_compare(op, ins):
    return compare(ins[0], op.arrays["b"], op.params["code"])


def run_select(op, ins):
    cond, x, y = (np.asarray(v).reshape(-1) for v in ins)
    return np.where(cond != 0, x, y).astype(np.int32)


def run_cast(op, ins):
    return cast(ins[0], next(k for k, v in CODE.items() if v == op.params["to_code"]))


def run_slice(op, ins):
    p = op.params
    return np.asarray(ins[0]).reshape(-1)[p["begin"]:p["begin"] + p["n"] * p["stride"]:p["stride"]]


def run_concat(op, ins):
    a, p = op.arrays, op.params          # (the constant arrays end in a pad: C has no empty arrays)
    return np.concatenate([a["pre"][:p["before"]], np.asarray(ins[0]).reshape(-1).view(np.uint32),
                           a["post"][:p["after"]]])


def run_arith(op, ins):
    return arith(ins[0], op.arrays["b"], op.params["code"])


# ---- C calls -------------------------------------------------------------------------------------------------
def c_cast(op, low, s) -> str:
    p = op.params
    return f"edgec_signal_cast({p['n']}, {p['from_code']}, {p['to_code']}, {s.inputs[0]}, {s.output});"


def c_slice(op, low, s) -> str:
    p = op.params
    return (f"edgec_signal_slice_u32({p['begin']}, {p['stride']}, {p['n']}, (const uint32_t *)(const void *)"
            f"({s.inputs[0]}), (uint32_t *)(void *)({s.output}));")


def c_concat(op, low, s) -> str:
    p, a = op.params, s.arrays
    return (f"edgec_signal_concat_u32({p['before']}, {p['n']}, {p['after']}, {a['pre']}, (const uint32_t *)"
            f"(const void *)({s.inputs[0]}), {a['post']}, (uint32_t *)(void *)({s.output}));")


def c_arith(op, low, s) -> str:
    p = op.params
    return (f"edgec_signal_arith_s32({p['n']}, {p['code']}, {p['b_size']}, (const int32_t *)(const void *)"
            f"({s.inputs[0]}), {s.arrays['b']}, (int32_t *)(void *)({s.output}));")


def c_compare(op, low, s) -> str:
    p = op.params
    return (f"edgec_signal_compare_s32({p['n']}, {p['code']}, {p['b_size']}, (const int32_t *)(const void *)"
            f"({s.inputs[0]}), {s.arrays['b']}, (uint8_t *)(void *)({s.output}));")


def c_select(op, low, s) -> str:
    return (f"edgec_signal_select_s32({op.params['n']}, (const uint8_t *)(const void *)({s.inputs[0]}), "
            f"(const int32_t *)(const void *)({s.inputs[1]}), (const int32_t *)(const void *)({s.inputs[2]}), "
            f"(int32_t *)(void *)({s.output}));")


# ---- import --------------------------------------------------------------------------------------------------
def takes(tx, op) -> bool:
    """Whether operator `op` computes on a front end's plain integers: its first input is an int32, uint32 or
    uint64 tensor of this import (its first computed input; a SELECT_V2's first value), or an int16 one a Signal*
    operator computed."""
    name = next((tx.values[i] for i in op.InputsAsNumpy() if i in tx.values), None)     # (constants skipped)
    if name is None:
        return False
    dtype = tx.graph.tensors[name].dtype
    if tx.op_name(op) == "CAST" and dtype in ("int8", "int16") and _to(tx, op) in ("int8", "int16", "int32"):
        return True                         # a quantized activation's raw values converted (TFLM's static_cast)
    if dtype == "bool" and tx.op_name(op) == "SELECT_V2" and op.InputsLength() == 3 and op.Inputs(1) in tx.values:
        dtype = tx.graph.tensors[tx.values[op.Inputs(1)]].dtype        # a select of int32 values (token ids)
    return dtype in PLAIN or (dtype == "int16" and any(o.output == name and o.kind.startswith("signal_")
                                                       for o in tx.graph.ops))


def _out(tx, op, n: int) -> str:
    t = tx.sg.Tensors(op.Outputs(0))
    dtype = TYPE_OF.get(t.Type())
    if dtype is None:
        raise tx.unsupported(f"an output of TFLite type #{t.Type()} (edgec's integer front end runs "
                             f"{', '.join(TYPE_OF.values())})")
    name = tx._tname(op.Outputs(0))
    tx.graph.tensors[name] = Tensor(name=name, shape=(n,), source=name, scale=1.0, zero_point=0, dtype=dtype)
    tx.values[op.Outputs(0)] = name
    return name


def _x(tx, op) -> tuple[str, Tensor]:
    name = tx.values[op.Inputs(0)]
    return name, tx.graph.tensors[name]


def import_reshape(tx, op):
    tx.values[op.Outputs(0)] = tx.values[op.Inputs(0)]         # the same bytes (the front end's tensors are 1-D)


def _to(tx, op) -> str | None:
    return TYPE_OF.get(tx.sg.Tensors(op.Outputs(0)).Type())


def import_cast(tx, op):
    """CAST: C's conversion of the values (TFLite Micro's static_cast), a front end's plain integers or a quantized
    int8 / int16 activation's raw values (its output as the file quantizes it, or plain)."""
    name, x = _x(tx, op)
    signal_made = any(o.output == name and o.kind.startswith("signal_") for o in tx.graph.ops)
    if x.dtype in ("int8", "int16") and not signal_made:
        out = tx.output(op, dtypes=("int8", "int16", "int32"))
    else:
        out = _out(tx, op, x.size)
    tx.emit("signal_cast", op, [name], out, n=x.size, from_code=CODE[x.dtype],
            to_code=CODE[tx.graph.tensors[out].dtype])


def _four_bytes(tx, x: Tensor) -> None:
    if x.dtype not in ("int32", "uint32"):
        raise tx.unsupported(f"a {x.dtype} tensor (edgec slices and concatenates int32 and uint32 ones)")


def import_strided_slice(tx, op):
    name, x = _x(tx, op)
    _four_bytes(tx, x)
    begin, end, stride = (tx.const(op, k) for k in (1, 2, 3))
    o = tx.options(op)
    if any(v is None or v.size != 1 for v in (begin, end, stride)) or len(tx.shape(op.Inputs(0))) != 1 or \
            (o is not None and (o.BeginMask() or o.EndMask() or o.ShrinkAxisMask() or o.EllipsisMask()
                                or o.NewAxisMask())):
        raise tx.unsupported("a strided slice other than one constant [begin:end:stride] of a 1-D tensor")
    b, e, s = int(begin[0]), int(end[0]), int(stride[0])
    n = len(range(x.size)[b:e:s])
    if s <= 0 or n <= 0:
        raise tx.unsupported(f"the slice [{b}:{e}:{s}] (edgec takes positive strides, non-empty slices)")
    tx.emit("signal_slice", op, [name], _out(tx, op, n), begin=range(x.size)[b:e:s][0], stride=s, n=n)


def import_concatenation(tx, op):
    parts = [op.Inputs(k) for k in range(op.InputsLength())]
    live = [k for k, i in enumerate(parts) if i in tx.values]
    if len(live) != 1 or len(tx.shape(op.Outputs(0))) != 1:
        raise tx.unsupported("a concatenation of other than one tensor with constants, or not 1-D")
    name = tx.values[parts[live[0]]]
    x = tx.graph.tensors[name]
    _four_bytes(tx, x)
    consts = [np.asarray(tx.const(op, k)).reshape(-1) for k in range(len(parts)) if k != live[0]]
    pre = np.concatenate([np.zeros(0, np.uint32)] + [c.view(np.uint32) for c in consts[:live[0]]])
    post = np.concatenate([np.zeros(0, np.uint32)] + [c.view(np.uint32) for c in consts[live[0]:]])
    out = _out(tx, op, pre.size + x.size + post.size)
    tx.emit("signal_concat", op, [name], out, before=pre.size, n=x.size, after=post.size,
            pre=np.ascontiguousarray(np.r_[pre, 0].astype(np.uint32)),
            post=np.ascontiguousarray(np.r_[post, 0].astype(np.uint32)))


def import_arith(tx, op):
    kind = tx.op_name(op)
    name, x = _x(tx, op)
    o = tx.options(op)
    if x.dtype != "int32" or op.InputsLength() != 2 or op.Inputs(1) in tx.values:
        raise tx.unsupported(f"{kind} of other than an int32 tensor and a constant")
    if o is not None and hasattr(o, "FusedActivationFunction") and o.FusedActivationFunction():
        raise tx.unsupported(f"{kind} with a fused activation on int32")
    b = np.asarray(tx.const(op, 1), np.int32).reshape(-1)
    if b.size not in (1, x.size) or (kind == "DIV" and not b.all()):
        raise tx.unsupported(f"{kind} by a constant of {b.size} values (one, or one per element; DIV: not zero)")
    tx.emit("signal_arith", op, [name], _out(tx, op, x.size), n=x.size, code=ARITH[kind], b_size=b.size,
            b=np.ascontiguousarray(b))


def import_compare(tx, op):
    """EQUAL, NOT_EQUAL, LESS, ... of an int32 tensor and a constant (Keras' Embedding: LESS than 0, its
    negative token ids wrapped): bool bytes 0 / 1, as TFLite Micro's int32 comparisons write them."""
    kind = tx.op_name(op)
    name, x = _x(tx, op)
    if x.dtype != "int32" or op.InputsLength() != 2 or op.Inputs(1) in tx.values:
        raise tx.unsupported(f"{kind} of other than an int32 tensor and a constant")
    b = np.asarray(tx.const(op, 1)).reshape(-1)
    if b.size not in (1, x.size) or b.dtype != np.int32:
        raise tx.unsupported(f"{kind} with an int32 constant of {b.size} values (one, or one per element)")
    out = tx._tname(op.Outputs(0))
    tx.graph.tensors[out] = Tensor(name=out, shape=(x.size,), source=out, scale=1.0, zero_point=0, dtype="bool")
    tx.values[op.Outputs(0)] = out
    tx.emit("signal_compare", op, [name], out, n=x.size, code=COMPARE[kind], b_size=b.size,
            b=np.ascontiguousarray(b, np.int32))


def import_select(tx, op):
    """SELECT_V2 of a bool condition and two int32 tensors of one size, all computed (Keras' Embedding picks
    the wrapped or the given token id). TFLite Micro's SELECT_V2 takes no int32 (TF Lite's does): the copy of
    the chosen values, checked against TF Lite's interpreter."""
    ins = [tx.values.get(op.Inputs(k)) for k in range(op.InputsLength())]
    if len(ins) != 3 or None in ins:
        raise tx.unsupported("SELECT_V2 of int32 values with a constant input (edgec takes three computed ones)")
    t = [tx.graph.tensors[i] for i in ins]
    if t[0].dtype != "bool" or {t[1].dtype, t[2].dtype} != {"int32"} or len({v.size for v in t}) != 1:
        raise tx.unsupported("SELECT_V2 of other than a bool condition and two int32 tensors of one size")
    tx.emit("signal_select", op, ins, _out(tx, op, t[1].size), n=t[1].size)


IMPORTERS = {"RESHAPE": import_reshape, "CAST": import_cast, "STRIDED_SLICE": import_strided_slice,
             "CONCATENATION": import_concatenation, **{k: import_arith for k in ARITH},
             **{k: import_compare for k in COMPARE}, "SELECT_V2": import_select}
KINDS = {"signal_cast": ("edgec_signal_cast", run_cast, c_cast),
         "signal_slice": ("edgec_signal_slice_u32", run_slice, c_slice),
         "signal_concat": ("edgec_signal_concat_u32", run_concat, c_concat),
         "signal_arith": ("edgec_signal_arith_s32", run_arith, c_arith),
         "signal_compare": ("edgec_signal_compare_s32", run_compare, c_compare),
         "signal_select": ("edgec_signal_select_s32", run_select, c_select)}
