"""`matmul`: the product of two activations ([batch][m][k] x [batch][k][n], one multiplier), attention's scores
(Q x K^T) and context (P x V). Every operand and the output is read/written through strides (element units:
batch, row, column), so the Transposes and head Reshapes of multi-head attention around it are views, not
copies: the importer takes its operands in whatever layout they are, and writes its output in the layout its
single Transpose reader wants. Reference kernel runtime_c/edgec_matmul.c; the DSP one,
runtime_c/fast/edgec_matmul_fast.c: B widened to int16 and transposed into scratch once per batch (column pairs
interleaved), A read in place with its zero point folded into column-sum corrections, SMLAD 2x2 blocks, one
requantization pass per row pair. The 16x8 one, runtime_c/fast/edgec_matmul_fast_s16.c: no scratch (a copy of
an operand would raise the arena where the product is its peak, as in attention), int64 sums by SMLALD of int16
pairs read where they lie (lower_matmul16 picks the loop by the strides), TFLite's 64-bit requantization.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from edgec.errors import node_error
from edgec.ir import NO_ACT, Op, Tensor
from edgec.ops import cemit, fast, lut, movement
from edgec.ops.kernel import FAST, INT16, REFERENCE, Kernel
from edgec.ops.opdef import CallSite, Int16, OpDef, always
from edgec.ops.tflite16 import ACTIVATIONS, check_zero_points
from edgec.errors import EdgecError
from edgec.fixedpoint.scheme import MAX_SHIFT16, act_range, act_range16, finish16, quantize_multiplier, requantize

STRIDES = ("a_batch_stride", "a_row_stride", "a_col_stride", "b_batch_stride", "b_row_stride", "b_col_stride",
           "out_batch_stride", "out_row_stride", "out_col_stride")


# ---- quantize ---------------------------------------------------------------------------------
def quantize_matmul(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    mult, shift = quantize_multiplier(a.get("alpha", 1.0) * ins[0].scale * ins[1].scale / out.scale)
    op.params.update(batch=a["batch"], m=a["m"], k=a["k"], n=a["n"], **{s: a[s] for s in STRIDES},
                     a_offset=a.get("a_offset", 0), b_offset=a.get("b_offset", 0),
                     a_zp=ins[0].zero_point, b_zp=ins[1].zero_point,
                     mult=mult, shift=shift, output_zp=out.zero_point, **act_range(op, out))


def quantize_matmul16(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """16x8 (a QDQ file's MatMul of two int16 activations, edgec/frontend/qdq16.py): TFLite's BatchMatMul<int16_t,
    int64_t> on the int8 quantizer's multiplier, zero points 0, the int16 clamp."""
    if int(op.params["shift"]) > MAX_SHIFT16:
        raise EdgecError(f"node '{op.name}': its int16 output range is too narrow for its inputs (requantization "
                         f"shift {int(op.params['shift'])} > {MAX_SHIFT16}); run it in int8")
    op.params.update(a_zp=0, b_zp=0, output_zp=0, **act_range16(op, out))


# ---- strided views ----------------------------------------------------------------------------
def _gather(flat, batch, rows, cols, bs, rs, cs):
    idx = (np.arange(batch)[:, None, None] * bs + np.arange(rows)[None, :, None] * rs
           + np.arange(cols)[None, None, :] * cs)
    return flat[idx]


def _operands(p: dict, a, b):
    bt, m, k, n = (int(p[f]) for f in ("batch", "m", "k", "n"))
    am = _gather(np.asarray(a).reshape(-1)[int(p.get("a_offset", 0)):], bt, m, k, *(int(p[s]) for s in STRIDES[0:3]))
    bm = _gather(np.asarray(b).reshape(-1)[int(p.get("b_offset", 0)):], bt, k, n, *(int(p[s]) for s in STRIDES[3:6]))
    return am, bm


def _scatter(p: dict, y: np.ndarray) -> np.ndarray:
    bt, m, n = y.shape
    idx = _gather(np.arange(y.size), bt, m, n, *(int(p[s]) for s in STRIDES[6:9]))
    out = np.empty(y.size, y.dtype)
    out[idx.reshape(-1)] = y.reshape(-1)
    return out


# ---- NumPy integer twin -------------------------------------------------------------------------
def matmul_s8(p: dict, a, b) -> np.ndarray:
    """[batch][m][k] x [batch][k][n] through the strides (a batch stride of 0 broadcasts), one multiplier."""
    am, bm = _operands(p, np.asarray(a, np.int8), np.asarray(b, np.int8))
    acc = np.matmul(am.astype(np.int64) - int(p["a_zp"]), bm.astype(np.int64) - int(p["b_zp"])).astype(np.int32)
    y = requantize(acc, p["mult"], p["shift"]).astype(np.int64) + int(p["output_zp"])
    return _scatter(p, np.clip(y, int(p["act_min"]), int(p["act_max"])).astype(np.int8))


def run_matmul(op: Op, inputs: list) -> np.ndarray:
    return matmul_s8(op.params, inputs[0], inputs[1])


def matmul_s16(p: dict, a, b) -> np.ndarray:
    """TFLite's BatchMatMul<int16_t, int64_t> (16x8): an int64 sum, the 64-bit MultiplyByQuantizedMultiplier, the
    int16 clamp; zero points 0."""
    am, bm = _operands(p, np.asarray(a, np.int16), np.asarray(b, np.int16))
    acc = np.matmul(am.astype(np.int64) - int(p["a_zp"]), bm.astype(np.int64) - int(p["b_zp"]))
    return _scatter(p, finish16(acc, p["mult"], p["shift"], p))


def run_matmul16(op: Op, inputs: list) -> np.ndarray:
    return matmul_s16(op.params, inputs[0], inputs[1])


def float_matmul(op: Op, inputs: list):
    am, bm = _operands(op.attrs, np.asarray(inputs[0], np.float64), np.asarray(inputs[1], np.float64))
    lo, hi = op.attrs.get("act", (-np.inf, np.inf))
    return _scatter(op.attrs, np.clip(np.matmul(am, bm) * op.attrs.get("alpha", 1.0), lo, hi))


def macs(op: Op, out: Tensor) -> int:
    a = op.attrs if "batch" in op.attrs else op.params     # a build folder's graph keeps only params
    return int(a["batch"] * a["m"] * a["k"] * a["n"])


# ---- C ------------------------------------------------------------------------------------------
def _operand(pointer: str, offset) -> str:
    return f"{pointer} + {int(offset)}" if int(offset) else pointer


def c_matmul(op: Op, low, site: CallSite) -> str:
    a = _operand(site.inputs[0], op.params.get("a_offset", 0))
    b = _operand(site.inputs[1], op.params.get("b_offset", 0))
    call = f"{low.kernel.name}(&p, {a}, {b}, {site.output});"
    return cemit.with_params("edgec_matmul_params", op.params, call, only_fields=True)


def c_matmul16(op: Op, low, site: CallSite) -> str:
    a = _operand(cemit.i16(site.inputs[0], const=True), op.params.get("a_offset", 0))
    b = _operand(cemit.i16(site.inputs[1], const=True), op.params.get("b_offset", 0))
    call = f"{low.kernel.name}(&p, {a}, {b}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_matmul_params", op.params, call, only_fields=True)


def c_matmul_fast(op: Op, low, site: CallSite) -> str:
    a = _operand(site.inputs[0], op.params.get("a_offset", 0))
    b = _operand(site.inputs[1], op.params.get("b_offset", 0))
    call = f"{low.kernel.name}(&p, {a}, {b}, {site.scratch}, {site.output});"
    return cemit.with_params("edgec_matmul_fast_params", low.params, call)


def lower_matmul(op: Op):
    """The DSP kernel: operands minus their zero points fit int16, |acc| < 2^30 for k below 16,000; the
    requantization is the fast kernels' one record (declined for a multiplier above 1)."""
    p = op.params
    if int(p["k"]) * 255 * 255 >= fast.ACC_LIMIT:
        return None
    rq = fast.rq_records(np.zeros(1), np.array([p["mult"]]), np.array([p["shift"]]), int(p["output_zp"]))
    if rq is None:
        return None
    keep = ("batch", "m", "k", "n", *STRIDES, "a_zp", "b_zp", "act_min", "act_max")
    params = {f: int(p[f]) for f in keep}
    params.update(rq_mult=int(rq[0, 1]), rq_khi=int(rq[0, 2]), rq_neg=int(rq[0, 3]), rq_shift=int(rq[0, 4]))
    return params, {}


MATMUL = Kernel("edgec_matmul_s8", ("matmul",), REFERENCE, c_matmul, run=run_matmul,
                code_bytes=1800)          # the fast kernel: 1.6-1.9 KB on M3/M4
MATMUL_FAST = Kernel("edgec_matmul_fast_s8", ("matmul",), FAST, c_matmul_fast, lower=lower_matmul)
MATMUL16 = Kernel("edgec_matmul_s16", ("matmul",), REFERENCE, c_matmul16, precision=INT16, run=run_matmul16)

# the fast 16x8 product (runtime_c/fast/edgec_matmul_fast_s16.c): its modes, as edgec_nn.h numbers them
MM16_ANY, MM16_KK, MM16_KN = 0, 1, 2
MM16_MAX_K = 1 << 17          # |sum| <= k 2^30 and the Q15 multiplier: the product acc * R stays inside int64
MM16_ENTRIES = {MM16_ANY: "edgec_matmul_fast_any_s16", MM16_KK: "edgec_matmul_fast_kk_s16",
                MM16_KN: "edgec_matmul_fast_kn_s16"}
FAST16_FIELDS = ("batch", "m", "k", "n", *STRIDES, "mode", "rq_mult", "rq_round_lo", "rq_round_hi", "rq_shift",
                 "act_min", "act_max")


def _transposed(p: dict) -> dict:
    """The same product as out^T = B^T A^T: operands swapped, rows and columns of each exchanged."""
    q = dict(p, m=p["n"], n=p["m"], swapped=1 - p.get("swapped", 0))
    for x, y in ((("a", "batch"), ("b", "batch")), (("a", "row"), ("b", "col")), (("a", "col"), ("b", "row"))):
        q[f"{x[0]}_{x[1]}_stride"], q[f"{y[0]}_{y[1]}_stride"] = p[f"{y[0]}_{y[1]}_stride"], p[f"{x[0]}_{x[1]}_stride"]
    q["out_row_stride"], q["out_col_stride"] = p["out_col_stride"], p["out_row_stride"]
    return q


def mm16_mode(p: dict) -> int:
    """Which loop of the fast 16x8 kernel reads these strides: kk (A's rows and B's columns contiguous along k),
    kn (A's rows along k, B's rows along n) or any (a stride of a size-1 axis counts as contiguous)."""
    a_k = p["a_col_stride"] == 1 or p["k"] == 1
    b_k = p["b_row_stride"] == 1 or p["k"] == 1
    b_n = p["b_col_stride"] == 1 or p["n"] == 1
    return MM16_KK if a_k and b_k else MM16_KN if a_k and b_n else MM16_ANY


def _int32(v: int) -> int:
    """A 32-bit word as the int32 its struct field holds."""
    return v - (1 << 32) if v >= 1 << 31 else v


def rq16_words(mult: int, shift: int) -> dict | None:
    """TFLite's 16x8 MultiplyByQuantizedMultiplier(int64, mult, shift) (edgec_requantize64: R the multiplier
    reduced to Q15, T = 15 - shift, the int32 result bits T..T+31 of acc * R + 2^(T-1)) as the fast kernel's one
    UMLAL: the high word of acc * M + round, shifted right by rq_shift. T <= 32: M = R * 2^(32-T) (then
    acc * M + 2^31 is that sum times 2^(32-T): its high word is those bits even where it wraps), round 2^31, no
    shift; T > 32: M = R, round 2^(T-1), shift T - 32. None where M would not fit 32 bits (T < 15)."""
    reduced = (mult + (1 << 15)) >> 16 if mult < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    big, rnd = (reduced << (32 - total), 1 << 31) if total <= 32 else (reduced, 1 << (total - 1))
    if mult < 0 or total < 1 or total > 62 or big >= 1 << 32:
        return None
    return dict(rq_mult=_int32(big), rq_round_lo=_int32(rnd & 0xFFFFFFFF), rq_round_hi=_int32(rnd >> 32),
                rq_shift=max(total - 32, 0))


def lower_matmul16(op: Op):
    """The fast 16x8 product: no scratch; oriented (out^T = B^T A^T where that reads more of the operands as
    words), the loop it runs on (mm16_mode), the requantization's words (rq16_words). Declined for a zero point
    (TFLite's 16x8 has none) or a multiplier rq16_words cannot take."""
    p = {f: int(v) for f, v in op.params.items() if isinstance(v, (int, np.integer))}
    rq = rq16_words(p["mult"], p["shift"])
    if p.get("a_zp", 0) or p.get("b_zp", 0) or p.get("output_zp", 0) or p["k"] >= MM16_MAX_K or rq is None:
        return None
    p.update(rq, swapped=0)
    flipped = _transposed(p)
    if mm16_mode(flipped) > mm16_mode(p):
        p = flipped
    p["mode"] = mm16_mode(p)
    return {f: p[f] for f in (*FAST16_FIELDS, "swapped")}, {}


def c_matmul_fast16(op: Op, low, site: CallSite) -> str:
    a = _operand(cemit.i16(site.inputs[0], const=True), op.params.get("a_offset", 0))
    b = _operand(cemit.i16(site.inputs[1], const=True), op.params.get("b_offset", 0))
    first, second = (b, a) if low.params["swapped"] else (a, b)
    call = f"{MM16_ENTRIES[low.params['mode']]}(&p, {first}, {second}, {cemit.i16(site.output)});"
    return cemit.with_params("edgec_matmul_fast_s16_params", low.params, call, only_fields=True)


MATMUL_FAST16 = Kernel("edgec_matmul_fast_s16", ("matmul",), FAST, c_matmul_fast16, precision=INT16,
                       lower=lower_matmul16, entries=tuple(MM16_ENTRIES.values()))
KERNELS = [MATMUL, MATMUL_FAST, MATMUL16, MATMUL_FAST16]

OPS = [OpDef("matmul", "matmul", quantize_matmul, float_matmul, fuses_activation=True, macs=macs,
             int16=Int16(quantize_matmul16, qdq=always, rows=always))]


# ---- after the graph is built: operands read where their bytes already are
def read_through_views(g, scalars: bool = True) -> None:
    """Each operand of a product that is a slice/reshape/permutation of another tensor (a Split of the fused
    in_proj, a head Reshape) or that tensor times one positive constant (q / sqrt(d)) is read in place through
    an offset and strides, the constant going into the product's multiplier; ops left without readers go
    (g: the canonicalizer's ir.GraphBuilder). scalars=False (a quantized file's graph, edgec/frontend/tflite.py):
    only whole tensors moved on the same grid (`_same_bytes`), no constant (its product rounds where the file's
    does), and only into 16x8 products (their kernel takes no scratch)."""
    for op in [o for o in g.ops if o.kind == "matmul"]:
        if not scalars and g.tensors[op.output].dtype != "int16":
            continue     # int8: keras_kws_transformer's arena rose 1 KB (the planner's order without the copies)
        for i, (first, size) in enumerate(((0, (op.attrs["m"], op.attrs["k"])), (3, (op.attrs["k"], op.attrs["n"])))):
            op = _read_through(g, op, i, first, size, scalars)
    g.prune()


def _same_bytes(g, source: str, view: str) -> bool:
    """Whether `view` is all of `source`, moved, on its grid: reading the source in place keeps no more bytes
    alive than the copy did (a slice would keep the whole source alive until the product: more arena)."""
    a, b = g.tensors[source], g.tensors[view]
    return (a.dtype, a.scale, a.zero_point, a.size) == (b.dtype, b.scale, b.zero_point, b.size)


def _read_through(g, op: Op, i: int, first: int, size: tuple, scalars: bool = True) -> Op:
    """The product reading operand i through its views (the op in the builder now), or op as it was."""
    a, side = op.attrs, "ab"[i]
    strides = [int(a[s]) for s in STRIDES[first:first + 3]]
    idx = int(a.get(f"{side}_offset", 0)) + _gather(np.arange(g.tensors[op.inputs[i]].size), int(a["batch"]),
                                                   int(size[0]), int(size[1]), *strides)
    tensor, alpha = op.inputs[i], 1.0
    while tensor not in g.inputs and tensor not in g.outputs:
        prod = g.producer(tensor)
        if prod is None:
            break
        factor = lut.scalar_factor(prod) if scalars else None
        moved = None if factor is not None else movement.source_index(prod, g.tensors[tensor].size)
        if factor is None and moved is None or not scalars and not _same_bytes(g, prod.inputs[0], tensor):
            break
        idx = idx if moved is None else moved[idx]
        alpha *= 1.0 if factor is None else factor
        tensor = prod.inputs[0]
    if tensor == op.inputs[i]:
        return op
    fit = _affine(idx)
    if fit is None:
        return op
    op = g.replace_op(op, dataclasses.replace(op, inputs=op.inputs[:i] + (tensor,) + op.inputs[i + 1:]))
    a[f"{side}_offset"] = fit[0]
    for name, st in zip(STRIDES[first:first + 3], fit[1:]):
        a[name] = st
    a["alpha"] = a.get("alpha", 1.0) * alpha
    return op


def _affine(idx: np.ndarray):
    """(offset, batch, row, column strides) with idx[b, r, c] = offset + b*bs + r*rs + c*cs, or None."""
    base = int(idx[0, 0, 0])
    st = [int(idx[tuple(int(ax == d) for d in range(3))]) - base if idx.shape[ax] > 1 else 0 for ax in range(3)]
    grid = np.indices(idx.shape)
    if not np.array_equal(idx, base + sum(s * g for s, g in zip(st, grid))):
        return None
    return base, *st


# ---- ONNX import (a MatMul of two activations; edgec/ops/dense.py takes constant weights)
def _matrix_strides(cx, value, node, shape, batch):
    """(tensor, batch stride, row stride, column stride) reading ONNX value `value` of `shape` ([.., rows, cols])
    where it lies, or None if its batch axes are not one arithmetic sequence of offsets."""
    tensor, _, strides = movement.axis_strides(cx, value, node)
    if len(cx.shape(value, node)) == 1:                 # a vector: one row (a) or one column (b)
        return (tensor, 0, 0, 1) if shape[0] == 1 else (tensor, 0, 1, 0)
    live = [a for a in range(len(shape) - 2) if shape[a] != 1]
    for x, y in zip(live, live[1:]):
        if strides[x] != strides[y] * shape[y]:
            return None
    nb = int(np.prod([shape[a] for a in live], dtype=np.int64))
    bstride = strides[live[-1]] if live and nb == batch else 0
    return tensor, bstride, strides[-2] if shape[-2] != 1 else 0, strides[-1] if shape[-1] != 1 else 0


def _output_layout(cx, y, rank):
    """The layout to write y in: the one its single Transpose reader makes an identity (so the Transpose and
    the Reshape after it are views), else y's own."""
    readers = cx.readers.get(y, [])
    if rank >= 3 and len(readers) == 1 and readers[0].op_type == "Transpose" and cx.single_use(y):
        t = [int(i) for i in cx.attr(readers[0], "perm", list(range(rank))[::-1])]
        if sorted(t) == list(range(rank)) and t[-1] == rank - 1:
            return tuple(t)
    return movement.identity(rank)


def _output_strides(cx, y, oshape, vector, batch, m, n):
    """(layout of y, its (batch, row, column) strides): the layout its Transpose reader wants if its batch axes
    stay one arithmetic sequence there, else contiguous [batch][m][n]."""
    rank = len(oshape)
    if not vector and rank >= 2:
        want = _output_layout(cx, y, rank)
        ostr = movement.contiguous_strides([oshape[i] for i in want])
        axis = {ax: ostr[pos] for pos, ax in enumerate(want)}
        live = [ax for ax in range(rank - 2) if oshape[ax] != 1]
        if all(axis[x] == axis[z] * oshape[z] for x, z in zip(live, live[1:])):
            return want, (axis[live[-1]] if live else 0, axis[rank - 2], axis[rank - 1])
    return movement.identity(rank), (m * n if batch > 1 else 0, n, 1)


def import_activation_matmul(cx, node):
    """Two activations: [.., m, k] x [.., k, n], read in place through strides."""
    a, b, y = node.input[0], node.input[1], node.output[0]
    sa0, sb0, sy = cx.shape(a, node), cx.shape(b, node), cx.shape(y, node)
    sa = (1,) + tuple(sa0) if len(sa0) == 1 else tuple(sa0)       # a vector is a 1-row / 1-column matrix
    sb = tuple(sb0) + (1,) if len(sb0) == 1 else tuple(sb0)
    ba, bb = int(np.prod(sa[:-2], dtype=np.int64)), int(np.prod(sb[:-2], dtype=np.int64))
    batch = max(ba, bb)
    if (ba != batch and ba != 1) or (bb != batch and bb != 1) or \
            (ba == batch and bb == batch and tuple(sa[:-2]) != tuple(sb[:-2]) and len(sa) == len(sb)):
        raise node_error(node, f"MatMul batch broadcasting {list(sa)} x {list(sb)} is not supported")
    m, k, n = sa[-2], sa[-1], sb[-1]
    va = _matrix_strides(cx, a, node, sa, batch)
    if va is None:
        va = (cx.as_layout(a, movement.identity(len(sa0)), node), m * k if ba > 1 else 0, k, 1)
    vb = _matrix_strides(cx, b, node, sb, batch)
    if vb is None:
        vb = (cx.as_layout(b, movement.identity(len(sb0)), node), k * n if bb > 1 else 0, n, 1)
    oshape = tuple(sy) or (1,)
    want, ostrides = _output_strides(cx, y, oshape, len(sa0) == 1 or len(sb0) == 1, batch, m, n)
    out = cx.new_tensor(y, tuple(oshape[i] for i in want), y)
    cx.emit("matmul", node, [va[0], vb[0]], out, batch=batch, m=m, k=k, n=n,
            a_batch_stride=va[1], a_row_stride=va[2], a_col_stride=va[3],
            b_batch_stride=vb[1], b_row_stride=vb[2], b_col_stride=vb[3],
            out_batch_stride=ostrides[0], out_row_stride=ostrides[1], out_col_stride=ostrides[2], act=NO_ACT)
    cx.values[y] = (out, want if sy else ())          # a 1-D x 1-D product is a scalar


def _einsum_indices(node, eq: str):
    """(batch, row, column, summed) index letters of a two-operand Einsum that is a batched matrix product."""
    eq = eq.decode() if isinstance(eq, bytes) else str(eq)
    eq = eq.replace(" ", "")
    terms = eq.split("->")[0].split(",") if "->" in eq else []
    if len(node.input) != 2 or len(terms) != 2 or "." in eq:
        raise node_error(node, f"Einsum '{eq}': only two operands with an explicit output ('ab,bc->ac') are "
                               "supported, no ellipsis")
    (ta, tb), to = terms, eq.split("->")[1]
    batch = [c for c in to if c in ta and c in tb]
    rows, cols = [c for c in ta if c not in tb], [c for c in tb if c not in ta]
    summed = [c for c in ta if c in tb and c not in to]
    if any(len(set(t)) != len(t) for t in (ta, tb, to)) or len(rows) != 1 or len(cols) != 1 \
            or len(summed) != 1 or sorted(to) != sorted(batch + rows + cols):
        raise node_error(node, f"Einsum '{eq}' is not a (batched) matrix product (one summed index, one index of "
                               "each operand's own, the rest in both and in the output); write it as MatMul")
    return ta, tb, to, batch, rows[0], cols[0], summed[0]


def _letter_strides(node, letters: str, shape, strides, batch: list[str]):
    """{letter: stride} of one Einsum term and its batch stride (its live batch axes one arithmetic sequence)."""
    by = dict(zip(letters, strides))
    live = [c for c in batch if shape[letters.index(c)] != 1]
    size = {c: shape[letters.index(c)] for c in letters}
    if any(by[x] != by[y] * size[y] for x, y in zip(live, live[1:])):
        raise node_error(node, f"Einsum term '{letters}': its batch axes are not read in one order; write it as MatMul")
    return by, (by[live[-1]] if live else 0)


def import_einsum(cx, node):
    """ONNX Einsum of two activations that is a batched matrix product ('ntd,nsd->nts', 'bhij,bhjd->bhid', ...):
    the `matmul` op, each operand read in place through the strides of its letters, the output written in the
    output term's order."""
    ta, tb, to, batch, r, c, k = _einsum_indices(node, cx.attr(node, "equation", ""))
    (a, b), y = node.input, node.output[0]
    if a in cx.consts or b in cx.consts:
        raise node_error(node, "Einsum with a constant operand is not supported; write it as MatMul or Gemm")
    sa, sb, sy = cx.shape(a, node), cx.shape(b, node), cx.shape(y, node)
    if len(sa) != len(ta) or len(sb) != len(tb) or len(sy) != len(to):
        raise node_error(node, f"Einsum terms '{ta},{tb}->{to}' do not match the ranks of its operands")
    size = {**dict(zip(tb, sb)), **dict(zip(ta, sa))}
    if any(sa[ta.index(x)] != sb[tb.index(x)] for x in batch + [k]):
        raise node_error(node, f"Einsum '{ta},{tb}->{to}': broadcasting shapes {list(sa)} and {list(sb)} "
                               "is not supported")
    tensor_a, _, stride_a = movement.axis_strides(cx, a, node)
    tensor_b, _, stride_b = movement.axis_strides(cx, b, node)
    ya, bsa = _letter_strides(node, ta, sa, stride_a, batch)
    yb, bsb = _letter_strides(node, tb, sb, stride_b, batch)
    yo, bso = _letter_strides(node, to, sy, movement.contiguous_strides(sy), batch)
    nb = int(np.prod([size[x] for x in batch], dtype=np.int64))
    out = cx.new_tensor(y, tuple(sy) or (1,), y)
    cx.emit("matmul", node, [tensor_a, tensor_b], out, batch=nb, m=size[r], k=size[k], n=size[c],
            a_batch_stride=bsa, a_row_stride=ya[r], a_col_stride=ya[k],
            b_batch_stride=bsb, b_row_stride=yb[k], b_col_stride=yb[c],
            out_batch_stride=bso, out_row_stride=yo[r], out_col_stride=yo[c], act=NO_ACT)
    cx.values[y] = (out, movement.identity(len(sy)))


# ONNX MatMul is imported by edgec/ops/dense.py, which hands two activations to import_activation_matmul
ONNX = {"Einsum": import_einsum}


# ---- TFLite import (edgec/frontend/tflite.py)
def import_tflite_batch_matmul(tx, op):
    """BATCH_MATMUL of two int8 (16x8: int16) activations (adj_x / adj_y read as strides; batch dimensions equal, or all 1 on one
    side: broadcast): TFLite Micro's arithmetic, the multiplier from the float32 product of the input scales
    (GetQuantizedConvolutionMultipler)."""
    o = tx.options(op)
    a = tx.input(op, 0, ACTIVATIONS)
    b = tx.input(op, 1, (tx.tensor(a).dtype,))
    out = tx.output(op, dtypes=(tx.tensor(a).dtype,))
    wide = tx.tensor(a).dtype == "int16"        # 16x8: BatchMatMul<int16_t, int64_t>, zero points 0
    if wide:
        check_zero_points(tx, op, [a, b, out])
    sa, sb = tx.tensor(a).shape, tx.tensor(b).shape
    if not (2 <= len(sa) <= 5 and 2 <= len(sb) <= 5):
        raise tx.unsupported("operands of rank 2 to 5")
    adj_x, adj_y = (bool(o.AdjX()), bool(o.AdjY())) if o is not None else (False, False)
    m, k = (sa[-1], sa[-2]) if adj_x else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if adj_y else (sb[-2], sb[-1])
    ba, bb = int(np.prod(sa[:-2], dtype=np.int64)), int(np.prod(sb[:-2], dtype=np.int64))
    r = max(len(sa), len(sb))
    pa, pb = (1,) * (r - len(sa)) + tuple(sa[:-2]), (1,) * (r - len(sb)) + tuple(sb[:-2])
    if k != k2 or not (pa == pb or ba == 1 or bb == 1):
        raise tx.unsupported(f"shapes {list(sa)} and {list(sb)} (batch dimensions equal, or all 1 on one side)")
    batch = max(ba, bb)
    if tx.tensor(out).size != batch * m * n:
        raise tx.unsupported(f"output shape {list(tx.tensor(out).shape)} is not [{batch}, {m}, {n}]")
    ta, tb, to = tx.tensor(a), tx.tensor(b), tx.tensor(out)
    real = float(np.float32(np.float32(ta.scale) * np.float32(tb.scale))) / float(to.scale)
    try:
        mult, shift = quantize_multiplier(real)
    except ValueError as exc:
        raise tx.unsupported(str(exc)) from None
    if wide and shift > MAX_SHIFT16:
        raise tx.unsupported(f"a 16x8 requantization shift of {shift} (TFLite's 64-bit one takes up to {MAX_SHIFT16})")
    strides = dict(a_batch_stride=m * k if ba > 1 else 0, a_row_stride=1 if adj_x else k,
                   a_col_stride=m if adj_x else 1, b_batch_stride=k * n if bb > 1 else 0,
                   b_row_stride=1 if adj_y else n, b_col_stride=k if adj_y else 1,
                   out_batch_stride=m * n, out_row_stride=n, out_col_stride=1)
    clamp = {"act_min": -32768, "act_max": 32767, "a_zp": 0, "b_zp": 0, "output_zp": 0} if wide else {}
    tx.emit("matmul", op, [a, b], out, None, {"mult": mult, "shift": shift, **clamp}, batch=batch, m=m, k=k, n=n,
            **strides)


TFLITE = {"BATCH_MATMUL": import_tflite_batch_matmul}
