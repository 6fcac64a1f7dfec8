"""QONNX models (Brevitas `export_qonnx`, FINN): `Quant` nodes rewritten into the QDQ form edgec/frontend/qdq.py takes.

QONNX's Quant(x, scale, zero_point, bitwidth; signed, narrow, rounding_mode) computes, in float,
    q = clip(round(x / scale + zero_point), qmin, qmax),   y = (q - zero_point) * scale
with qmin/qmax the bit width's integer range (signed: [-2^(b-1), 2^(b-1) - 1], narrow: +1 at the bottom; unsigned:
[0, 2^b - 1], narrow: -1 at the top) and round half to even (rounding_mode ROUND). `to_qdq` rewrites each Quant
(domain qonnx.custom_op.general, finn.custom_op.general, or the default domain as FINN writes it):

- on a constant (weights, biases): q computed here with exactly that formula (float32, as QONNX's executor); widths
  2..8 become an int8 (signed) or uint8 (unsigned) constant read by a DequantizeLinear with the file's scale (per
  tensor, or per channel: the one axis the scale varies along) and zero point, so qdq.py keeps the integers and
  scales of a weight as it does for a QDQ file's; wider constants (Brevitas's 32-bit biases) become the float
  constant y (a bias is rounded to int32 at input scale x weight scale later, which gives back the file's q);
- on an activation of width 8: QuantizeLinear -> DequantizeLinear with the file's scale and zero point (int8 when
  signed, uint8 when not); of width 2..7 (or narrow): the same int8/uint8 grid, then a Clip to the narrower range
  [(qmin - z) s, (qmax - z) s] (grid points, so the clamp is the integer clamp) and the grid again
  (QuantizeLinear -> DequantizeLinear), which edgec applies as the producing op's requantization clamp.

BipolarQuant(x, scale) = (x >= 0 ? 1 : -1) * scale on constant weights (Brevitas/FINN's binary weights, e.g. CNV
w1a2): int8 -1 / +1 read by a DequantizeLinear with the file's scale, as a Quant's weights; on an activation:
Where(x < 0, -scale, scale) on the int8 grid of step scale (an exact compare of x's integers, then a select).

Trunc (opset 2, Brevitas TruncAvgPool2d / TruncAdaptiveAvgPool2d) after an average pool whose window's area is the
truncation's step: the pool's output grid is the pooled input's, and its kernel rounds sum / area as the Trunc's
rounding_mode says (`_trunc`; edgec/ops/pool.py reads it from the metadata TRUNC_POOLS).

Refused, every node in one error: activations wider than 8 bits, widths below 2 (BipolarQuant's domain), scales,
zero points or widths computed in the graph, non-integer zero points or widths, rounding modes other than ROUND,
a per-channel activation scale with a narrower range, BipolarQuant of an activation with a scale per channel, a
Trunc elsewhere, and QONNX's other operators (MultiThreshold...). What differs from QONNX's float execution on
activations: edgec requantizes in TFLite's integer arithmetic (docs/models.md, *Reference semantics of a QDQ file*), not float round half to even of x/s + z.
"""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.errors import EdgecError
from edgec.ops.pool import TRUNC_POOLS

DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "", "ai.onnx")
QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general")
QUANT = "Quant"
BIPOLAR = "BipolarQuant"
TRUNC = "Trunc"
ROUNDINGS = {"ROUND": "even", "FLOOR": "floor", "CEIL": "ceil"}     # QONNX's rounding_mode -> edgec/ops/pool.py's
META = "edgec.qonnx"        # (a key in the ONNX metadata: {"activations": n, "constants": n} Quant nodes rewritten)


def int_range(bits: int, signed: bool, narrow: bool) -> tuple[int, int]:
    """QONNX's integer range of a Quant."""
    if signed:
        return -(1 << (bits - 1)) + int(narrow), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1 - int(narrow)


def quant(x, scale, zero_point, bits: int, signed: bool, narrow: bool) -> tuple[np.ndarray, np.ndarray]:
    """QONNX's Quant with rounding_mode ROUND, as its executor computes it: (q, y) (q float, integer-valued)."""
    lo, hi = int_range(bits, signed, narrow)
    q = np.round(np.clip(np.asarray(x, np.float32) / np.asarray(scale, np.float32)
                         + np.asarray(zero_point, np.float32), lo, hi))
    return q, ((q - zero_point) * scale).astype(np.float32)


def is_qonnx(model: onnx.ModelProto) -> bool:
    return any(n.domain in QONNX_DOMAINS or (n.op_type == QUANT and n.domain in DOMAINS) for n in model.graph.node)


def to_qdq(model: onnx.ModelProto, where="model") -> onnx.ModelProto:
    """The model with its Quant nodes as QuantizeLinear/DequantizeLinear (see the module doc); others unchanged."""
    if not is_qonnx(model):
        return model
    g = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    nodes, inits, problems = [], [], []
    counts = {"activations": 0, "constants": 0}
    producer = {o: n for n in g.node for o in n.output}
    readers: dict[str, int] = {}
    for n in g.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    pools: dict[str, str] = {}          # AveragePool node -> the rounding of the Trunc after it (edgec/ops/pool.py)
    for n in g.node:
        if n.op_type in (BIPOLAR, TRUNC) and n.domain in DOMAINS:
            try:
                if n.op_type == TRUNC:
                    new_nodes, new_inits = _trunc(n, consts, producer, readers, pools)
                else:
                    new_nodes, new_inits = _bipolar(n, consts)
            except EdgecError as e:
                problems.append(str(e))
                continue
            nodes += new_nodes
            inits += new_inits
            counts["constants" if n.input[0] in consts else "activations"] += 1
            continue
        if n.domain in QONNX_DOMAINS and n.op_type != QUANT:
            problems.append(f"node '{n.name}' ({n.op_type}, QONNX): not supported (edgec takes QONNX's Quant, "
                            "BipolarQuant and Trunc after an average pool)")
            continue
        if n.op_type != QUANT or n.domain not in DOMAINS:
            nodes.append(n)
            continue
        try:
            new_nodes, new_inits = _rewrite(n, consts)
        except EdgecError as e:
            problems.append(str(e))
            continue
        nodes += new_nodes
        inits += new_inits
        counts["constants" if n.input[0] in consts else "activations"] += 1
    if problems:
        raise EdgecError(f"{where}: " + "; ".join(problems))
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(inits)
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    kept_inputs = [i for i in g.input if i.name not in consts or i.name in used]
    del g.input[:]
    g.input.extend(kept_inputs)
    opsets = [o for o in model.opset_import if o.domain not in QONNX_DOMAINS]
    del model.opset_import[:]
    model.opset_import.extend(opsets)
    per_axis = any(a.name == "axis" for n in nodes if n.op_type in ("QuantizeLinear", "DequantizeLinear")
                   for a in n.attribute)
    if per_axis and not any(o.domain in ("", "ai.onnx") and o.version >= 13 for o in opsets):
        raise EdgecError(f"{where}: per-channel Quant scales in a model of ONNX opset below 13 (ONNX's "
                         "per-axis DequantizeLinear); export it with opset 13 or newer")
    model.metadata_props.append(onnx.StringStringEntryProto(key=META, value=json.dumps(counts)))
    if pools:
        model.metadata_props.append(onnx.StringStringEntryProto(key=TRUNC_POOLS, value=json.dumps(pools)))
    return model


def info(model: onnx.ModelProto) -> dict | None:
    """{"activations": n, "constants": n}: the Quant nodes `to_qdq` rewrote (None: not a QONNX model)."""
    return next((json.loads(p.value) for p in model.metadata_props if p.key == META), None)


def _attr(n, name, default):
    for a in n.attribute:
        if a.name == name:
            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def _params(n, consts):
    """(scale, zero point, bits, signed, narrow) of a Quant node, or an EdgecError saying why not."""
    what = f"node '{n.name}' (Quant)"
    if len(n.input) != 4 or not all(n.input[1:]):
        raise EdgecError(f"{what}: takes 4 inputs (x, scale, zero_point, bitwidth)")
    missing = [i for i in n.input[1:] if i not in consts]
    if missing:
        raise EdgecError(f"{what}: its scale, zero point and bit width must be constants ('{missing[0]}' is "
                         "computed in the graph)")
    mode = str(_attr(n, "rounding_mode", "ROUND")).upper()
    if mode != "ROUND":
        raise EdgecError(f"{what}: rounding_mode {mode} is not supported (ROUND, half to even, is)")
    s = np.asarray(consts[n.input[1]], np.float32)
    z = np.asarray(consts[n.input[2]], np.float32)
    b = np.asarray(consts[n.input[3]], np.float64)
    if b.size != 1 or b.reshape(()) != np.round(b.reshape(())):
        raise EdgecError(f"{what}: bit width {b.reshape(-1).tolist()} is not one integer")
    bits = int(b.reshape(()))
    if bits < 2:
        raise EdgecError(f"{what}: {bits}-bit quantization is not supported (2 to 8 bits are)")
    if not np.all(s > 0) or not np.all(np.isfinite(s)):
        raise EdgecError(f"{what}: its scales must be positive")
    if not np.array_equal(z, np.round(z)):
        raise EdgecError(f"{what}: zero point {z.reshape(-1)[:4].tolist()} is not an integer")
    return s, z, bits, bool(_attr(n, "signed", 1)), bool(_attr(n, "narrow", 0))


def _axis(n, s: np.ndarray, z: np.ndarray, rank: int | None) -> tuple[np.ndarray, np.ndarray, int | None]:
    """The scale and zero point as DequantizeLinear takes them: scalars, or 1-D along the one axis they vary on."""
    if s.size == 1 and z.size == 1:
        return s.reshape(()), z.reshape(()), None
    shape = np.broadcast_shapes(s.shape, z.shape)
    axes = [k for k, d in enumerate(shape) if d > 1]
    if len(axes) != 1 or rank is None:
        raise EdgecError(f"node '{n.name}' (Quant): a scale of shape {list(shape)} varies along more than one axis; "
                         "edgec takes per-tensor or per-channel (one axis) scales")
    k = axes[0]
    flat = lambda a: np.broadcast_to(a, shape).reshape(-1)     # noqa: E731
    return flat(s), flat(z), rank - len(shape) + k


def _rewrite(n, consts) -> tuple[list, list]:
    s, z, bits, signed, narrow = _params(n, consts)
    x, y = n.input[0], n.output[0]
    lo, hi = int_range(bits, signed, narrow)
    if x in consts:                                  # a weight or bias: the file's integers
        q, f = quant(consts[x], s, z, bits, signed, narrow)
        if bits > 8:
            return [], [numpy_helper.from_array(f, y)]
        dtype = np.int8 if signed else np.uint8
        s1, z1, axis = _axis(n, s, z, np.asarray(consts[x]).ndim)
        names = [f"{y}__q", f"{y}__scale", f"{y}__zero_point"]
        inits = [numpy_helper.from_array(q.astype(dtype), names[0]), numpy_helper.from_array(s1, names[1]),
                 numpy_helper.from_array(z1.astype(dtype), names[2])]
        kw = {} if axis is None else {"axis": axis}
        return [helper.make_node("DequantizeLinear", names, [y], name=n.name or y, **kw)], inits
    if bits > 8:
        raise EdgecError(f"node '{n.name}' (Quant): activation '{x}' is quantized to {bits} bits; edgec runs "
                         "activations of 8 bits or fewer")
    return _grid(n, x, y, s, z, bits, signed, narrow)


def _grid(n, x, y, s, z, bits, signed, narrow) -> tuple[list, list]:
    """An activation x on the grid (s, z) of `bits` (signed, narrow) as y: QuantizeLinear -> DequantizeLinear, and a
    Clip to a narrower range (then the grid again)."""
    lo, hi = int_range(bits, signed, narrow)
    dtype = np.int8 if signed else np.uint8
    full = (-128, 127) if signed else (0, 255)
    if np.any(z < full[0]) or np.any(z > full[1]):
        raise EdgecError(f"node '{n.name}' ({n.op_type}): zero point {z.reshape(-1)[:4].tolist()} lies outside "
                         f"the {'int8' if signed else 'uint8'} range")
    s1, z1, axis = _axis(n, s, z, None if s.size == 1 and z.size == 1 else _rank_hint(s, z))
    kw = {} if axis is None else {"axis": axis}
    base = n.name or y
    sname, zname = f"{base}__scale", f"{base}__zero_point"
    inits = [numpy_helper.from_array(s1, sname), numpy_helper.from_array(z1.astype(dtype), zname)]
    narrower = (lo, hi) != full
    mid = f"{base}__grid" if narrower else y
    nodes = [helper.make_node("QuantizeLinear", [x, sname, zname], [f"{base}__q"], name=f"{base}__quantize", **kw),
             helper.make_node("DequantizeLinear", [f"{base}__q", sname, zname], [mid], name=f"{base}__dequantize",
                              **kw)]
    if narrower:
        if axis is not None:
            raise EdgecError(f"node '{n.name}' ({n.op_type}): activation '{x}' has a scale per channel and a "
                             f"{bits}-bit "
                             f"{'narrow ' if narrow else ''}range; edgec takes narrower activation ranges per tensor")
        bounds = [f"{base}__lo", f"{base}__hi"]
        zf = np.float32(z1)
        inits += [numpy_helper.from_array(np.array((np.float32(v) - zf) * s1, np.float32), b)
                  for v, b in zip((lo, hi), bounds)]
        nodes += [helper.make_node("Clip", [mid, *bounds], [f"{base}__clipped"], name=f"{base}__range"),
                  helper.make_node("QuantizeLinear", [f"{base}__clipped", sname, zname], [f"{base}__q2"],
                                   name=f"{base}__requantize"),
                  helper.make_node("DequantizeLinear", [f"{base}__q2", sname, zname], [y], name=f"{base}__regrid")]
    return nodes, inits


def _bipolar(n, consts) -> tuple[list, list]:
    """BipolarQuant(x, scale) = (x >= 0 ? 1 : -1) * scale (QONNX's binary_quant) of constant weights: int8 -1 / +1
    read by a DequantizeLinear with the file's scale (per tensor or per channel), as a Quant's weights."""
    what = f"node '{n.name}' (BipolarQuant)"
    if len(n.input) != 2 or n.input[1] not in consts:
        raise EdgecError(f"{what}: takes 2 inputs (x, scale), its scale a constant")
    x = n.input[0]
    s = np.asarray(consts[n.input[1]], np.float32)
    if not np.all(s > 0) or not np.all(np.isfinite(s)):
        raise EdgecError(f"{what}: its scales must be positive")
    if x not in consts:
        return _bipolar_activation(n, s)
    w = np.asarray(consts[x], np.float32)
    s1, z1, axis = _axis(n, s, np.zeros_like(s), w.ndim)
    y = n.output[0]
    names = [f"{y}__q", f"{y}__scale", f"{y}__zero_point"]
    inits = [numpy_helper.from_array(np.where(w >= 0, 1, -1).astype(np.int8), names[0]),
             numpy_helper.from_array(s1, names[1]), numpy_helper.from_array(z1.astype(np.int8), names[2])]
    kw = {} if axis is None else {"axis": axis}
    return [helper.make_node("DequantizeLinear", names, [y], name=n.name or y, **kw)], inits


def _bipolar_activation(n, s: np.ndarray) -> tuple[list, list]:
    """BipolarQuant of an activation (Brevitas's binary activations, FINN's BNNs): Where(x < 0, -s, s) on the int8
    grid of step s (its levels -1 and +1): a compare of x's integers with its zero point and a select, exact."""
    if s.size != 1:
        raise EdgecError(f"node '{n.name}' (BipolarQuant): activation '{n.input[0]}' has a scale per channel; edgec "
                         "takes binary activations with one scale")
    x, y, base = n.input[0], n.output[0], n.name or n.output[0]
    s1 = s.reshape(())
    inits = [numpy_helper.from_array(np.float32(0), f"{base}__zero"),
             numpy_helper.from_array(-s1, f"{base}__minus"), numpy_helper.from_array(s1, f"{base}__plus")]
    nodes = [helper.make_node("Less", [x, f"{base}__zero"], [f"{base}__negative"], name=f"{base}__negative"),
             helper.make_node("Where", [f"{base}__negative", f"{base}__minus", f"{base}__plus"], [f"{base}__sign"],
                              name=f"{base}__sign")]
    grid_nodes, grid_inits = _grid(n, f"{base}__sign", y, s1, np.float32(0), 8, True, False)
    return nodes + grid_nodes, inits + grid_inits


def _trunc(n, consts, producer, readers, pools) -> tuple[list, list]:
    """QONNX's Trunc (opset 2, Brevitas TruncAvgPool2d) of an average pool's output: the pool's sum q (on the grid
    `scale` = the pooled Quant's scale / the window's area) divided by 2^k = out_scale / scale, rounded by its
    rounding_mode, clamped to out_bitwidth (signed, narrow). edgec takes it where 2^k is the window's area (the
    output grid is the pooled input's, as Brevitas exports a power-of-two window): the pool records the rounding
    (metadata TRUNC_POOLS, read by edgec/ops/pool.py's importer: its kernel rounds sum / area that way, exactly),
    the output its grid and narrower range as a Quant's."""
    what = f"node '{n.name}' (Trunc)"
    if len(n.input) != 6 or not all(n.input[1:]):
        raise EdgecError(f"{what}: takes 6 inputs (QONNX's Trunc opset 2: x, scale, zero_point, in_bitwidth, "
                         "out_scale, out_bitwidth); export it again with Brevitas 0.10 or newer")
    missing = [i for k, i in enumerate(n.input) if k in (1, 2, 4, 5) and i not in consts]   # (in_bitwidth: unused)
    if missing:
        raise EdgecError(f"{what}: its scales, zero point and output bit width must be constants ('{missing[0]}' is "
                         "computed in the graph)")
    s, z, s_out, b_out = (np.asarray(consts[n.input[k]], np.float64) for k in (1, 2, 4, 5))
    mode = str(_attr(n, "rounding_mode", "FLOOR")).upper()
    if mode not in ROUNDINGS:
        raise EdgecError(f"{what}: rounding_mode {mode} is not supported (ROUND, FLOOR and CEIL are)")
    if s.size != 1 or s_out.size != 1 or z.size != 1 or b_out.size != 1:
        raise EdgecError(f"{what}: edgec takes a Trunc with one scale, zero point and bit width (per tensor)")
    s, z, s_out, bits = float(s.reshape(())), float(z.reshape(())), float(s_out.reshape(())), b_out.reshape(())
    if z != 0 or bits != np.round(bits) or not 2 <= bits <= 8 or not (s > 0 and s_out > 0):
        raise EdgecError(f"{what}: edgec takes a Trunc to 2..8 bits with zero point 0 and positive scales (zero point "
                         f"{z}, {float(bits)} bits)")
    x, y = n.input[0], n.output[0]
    pool = producer.get(x)
    if pool is None or pool.op_type not in ("AveragePool", "GlobalAveragePool") or readers.get(x, 0) != 1:
        raise EdgecError(f"{what}: truncates '{x}', which is not the output of an average pool read by the Trunc "
                         "alone; edgec takes Trunc after AveragePool / GlobalAveragePool (Brevitas TruncAvgPool2d)")
    grid = producer.get(pool.input[0])
    s_in = None
    if grid is not None and grid.op_type == QUANT and grid.domain in DOMAINS and grid.input[1] in consts \
            and np.asarray(consts[grid.input[1]]).size == 1:
        s_in = float(np.asarray(consts[grid.input[1]]).reshape(()))
    if s_in is None:
        raise EdgecError(f"{what}: the pool's input '{pool.input[0]}' is not the output of a per-tensor Quant; edgec "
                         "takes Trunc of the pooled sum of a quantized activation")
    area = int(round(s_in / s))
    step = 2.0 ** round(np.log2(s_out / s))
    if area < 1 or abs(area * s / s_in - 1) > 1e-4 or step != area:
        raise EdgecError(f"{what}: divides the pool's sum by {step:g} where its window holds {s_in / s:g} taps; "
                         "edgec takes a Trunc back to the pooled input's grid (a power-of-two window)")
    if pool.op_type == "AveragePool":
        pads = [int(v) for v in _attr(pool, "pads", [])]
        auto = str(_attr(pool, "auto_pad", "NOTSET"))
        if (any(pads) or auto not in ("NOTSET", "VALID")) and not _attr(pool, "count_include_pad", 0):
            raise EdgecError(f"{what}: its pool '{pool.name}' pads without counting the padding (its sum is not "
                             "Brevitas's); export the pool without padding or with count_include_pad=1")
    if not pool.name:
        pool.name = pool.output[0]
    pools[pool.name] = {"rounding": ROUNDINGS[mode], "area": area}
    return _grid(n, x, y, np.float32(s_out), np.float32(0), int(bits), bool(_attr(n, "signed", 1)),
                 bool(_attr(n, "narrow", 0)))


def _rank_hint(s: np.ndarray, z: np.ndarray) -> int | None:
    """An activation's rank as its scale's shape says (QONNX broadcasts the scale against x: per-channel scales
    are written with x's rank, e.g. (1, C, 1, 1)); a 1-D one (x's last axis, whatever x's rank): None."""
    rank = max(s.ndim, z.ndim)
    return rank if rank >= 2 else None
