"""Data movement: reshape (a view: no code), transpose (rank <= 4), remap (any separable index map over up
to 6 dimensions: slice, pad, gather, tile, depth/space, nearest resize, layout changes...) and concat;
kernels in runtime_c/edgec_movement.c. They keep their input's quantization (concat requantizes the inputs
that differ from its output by a table)."""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Op, Tensor
from edgec.ops import cemit, elementwise
from edgec.ops.opdef import CallSite, Int16, OpDef

RANK = 6                  # remap / binary work on up to 6 dimensions (EDGEC_RANK)
INVALID = -(1 << 27)      # remap offset marking "padding": any sum containing it stays negative


def offsets(dims, strides):
    """Flat offsets of every element of an array of shape dims walked with the given strides."""
    off = np.zeros(dims, np.int64)
    for k, (d, s) in enumerate(zip(dims, strides)):
        shape = [1] * len(dims)
        shape[k] = d
        off = off + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return off.reshape(-1)


# ---- quantize ---------------------------------------------------------------------------------
def _nothing(op: Op, ins: list[Tensor], out: Tensor) -> None:
    pass


def quantize_transpose(op: Op, ins: list[Tensor], out: Tensor) -> None:
    dims = list(ins[0].shape)
    perm = list(op.attrs["perm"])
    if len(dims) > 4:
        squeezed = [i for i, d in enumerate(dims) if d != 1]
        if len(squeezed) > 4:
            raise EdgecError(f"node '{op.name}': a transpose of more than 4 non-unit dimensions is not supported")
        keep = [p for p in perm if dims[p] != 1]
        perm = [squeezed.index(p) for p in keep]
        dims = [dims[i] for i in squeezed]
    lead = 4 - len(dims)
    op.params = dict(dims=[1] * lead + dims, perm=list(range(lead)) + [p + lead for p in perm])


def quantize_remap(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a, x = op.attrs, ins[0]
    dims = [1] * (RANK - len(a["dims"])) + [int(d) for d in a["dims"]]
    tables = [np.zeros(1, np.int64)] * (RANK - len(a["tables"])) + list(a["tables"])
    start = np.cumsum([0] + [len(t) for t in tables[:-1]]).tolist()
    pad = int(np.clip(round(a["pad"] / x.scale) + x.zero_point, -128, 127))
    op.params = dict(dims=dims, start=[int(s) for s in start], pad_value=pad)
    op.arrays["offsets"] = np.concatenate(tables).astype(np.int32)


def quantize_concat(op: Op, ins: list[Tensor], out: Tensor) -> None:
    a = op.attrs
    total = sum(a["chunks"])
    parts, off = [], 0
    for i, (t, chunk) in enumerate(zip(ins, a["chunks"])):
        same = (t.scale, t.zero_point) == (out.scale, out.zero_point)
        if not same:
            op.arrays[f"table{i}"] = elementwise.table("identity", {}, None, t.scale, t.zero_point,
                                                       out.scale, out.zero_point)
        parts.append(dict(outer=a["outer"], chunk=chunk, out_stride=total, out_offset=off))
        off += chunk
    op.params = dict(parts=parts)


# ---- NumPy integer twins ------------------------------------------------------------------------
def transpose_s8(x, perm) -> np.ndarray:
    """TFLite reference_ops::Transpose (== numpy.transpose) for rank <= 4."""
    return np.ascontiguousarray(np.transpose(np.asarray(x, np.int8), [int(i) for i in perm]))


def remap_s8(p: dict, offsets, x) -> np.ndarray:
    """out[i0..i5] = x[sum_k offsets[start[k] + i_k]], or pad_value if any term is INVALID."""
    dims = [int(d) for d in p["dims"]]
    offsets = np.asarray(offsets, np.int64)
    total = np.zeros(dims, np.int64)
    for k, d in enumerate(dims):
        shape = [1] * RANK
        shape[k] = d
        total = total + offsets[int(p["start"][k]):int(p["start"][k]) + d].reshape(shape)
    total = total.reshape(-1)
    x = np.asarray(x, np.int8).reshape(-1)
    return np.where(total >= 0, x[np.maximum(total, 0)], np.int8(p["pad_value"])).astype(np.int8)


def concat_part_s8(p: dict, table, x, out: np.ndarray) -> None:
    """Write input x [outer][chunk] into out at [o * out_stride + out_offset + j] (through table if any)."""
    x = np.asarray(x, np.int8).reshape(int(p["outer"]), int(p["chunk"]))
    if table is not None:
        x = np.asarray(table, np.int8)[x.astype(np.int64) + 128]
    view = out.reshape(int(p["outer"]), int(p["out_stride"]))
    view[:, int(p["out_offset"]):int(p["out_offset"]) + int(p["chunk"])] = x


def run_transpose(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    return transpose_s8(inputs[0].reshape(p["dims"]), p["perm"])


def run_concat(op: Op, inputs: list) -> np.ndarray:
    p = op.params
    out = np.zeros(p["parts"][0]["outer"] * p["parts"][0]["out_stride"], np.int8)
    for i, (part, t) in enumerate(zip(p["parts"], inputs)):
        concat_part_s8(part, op.arrays.get(f"table{i}"), t, out)
    return out


# ---- float --------------------------------------------------------------------------------------
def float_remap(op: Op, inputs: list):
    dims = list(op.attrs["dims"])
    total = np.zeros(dims, np.int64)
    for k, t in enumerate(op.attrs["tables"]):
        shape = [1] * len(dims)
        shape[k] = dims[k]
        total = total + np.asarray(t, np.int64).reshape(shape)
    total = total.reshape(-1)
    return np.where(total >= 0, inputs[0].reshape(-1)[np.maximum(total, 0)], op.attrs["pad"])


def float_concat(op: Op, inputs: list):
    outer = op.attrs["outer"]
    return np.concatenate([i.reshape(outer, -1) for i in inputs], axis=1)


# ---- C ------------------------------------------------------------------------------------------
def c_transpose(op: Op, site: CallSite) -> str:
    n = site.arrays
    return f"edgec_transpose_s8({n['dims']}, {n['perm']}, {site.inputs[0]}, {site.output});"


def transpose_arrays(op: Op) -> dict:
    return {k: np.array(op.params[k], np.int32) for k in ("dims", "perm")}


def c_remap(op: Op, site: CallSite) -> str:
    call = f"edgec_remap_s8(&p, {site.arrays['offsets']}, {site.inputs[0]}, {site.output});"
    return cemit.with_params("edgec_remap_params", op.params, call)


def c_concat(op: Op, site: CallSite) -> str:
    lines = []
    for i, (part, t) in enumerate(zip(op.params["parts"], site.inputs)):
        table = site.arrays.get(f"table{i}", "0")
        lines.append(f"{{ static const edgec_concat_params p = {cemit.struct_init(part)}; "
                     f"edgec_concat_part_s8(&p, {table}, {t}, {site.output}); }}")
    return "\n    ".join(lines)


_VIEW16 = Int16(_nothing, lambda op, inputs: np.asarray(inputs[0], np.int16), None)

OPS = [
    OpDef("reshape", "movement", _nothing, lambda op, inputs: inputs[0], lambda op, inputs: inputs[0], None,
          alias=True, qparams="input", int16=_VIEW16, sensitivity=False),
    OpDef("transpose", "movement", quantize_transpose, run_transpose,
          lambda op, inputs: np.transpose(inputs[0], op.attrs["perm"]), c_transpose, c_arrays=transpose_arrays,
          qparams="input", sensitivity=False, code_bytes=400),
    OpDef("remap", "movement", quantize_remap, lambda op, inputs: remap_s8(op.params, op.arrays["offsets"], inputs[0]),
          float_remap, c_remap, qparams="input"),
    OpDef("concat", "movement", quantize_concat, run_concat, float_concat, c_concat),
]
