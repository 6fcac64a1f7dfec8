"""QDQ models: a user's own quantization, from QuantizeLinear/DequantizeLinear nodes, honoured.

ONNX Runtime's quantize_static (QuantFormat.QDQ) and PyTorch's quantized exports describe an INT8
model as a float graph with QuantizeLinear -> DequantizeLinear pairs on the activations and
DequantizeLinear (or QuantizeLinear -> DequantizeLinear) on constant weights and biases. `strip`
turns such a model back into the float model it describes, and remembers the quantization:

- a DequantizeLinear of a constant (weights, int32 biases) becomes the float constant it computes;
  int8 weights with zero point 0 keep their scales (per tensor, or per output channel), which the
  canonical weighted op then uses instead of its own (`weight_scale`);
- a QuantizeLinear -> DequantizeLinear pair on an activation x becomes Clip(x, lo, hi), where
  [lo, hi] is what the int8 grid represents (that is the float meaning of the pair: exporters drop a
  Relu whose work the quantization's saturation does); its scale and zero point are fixed for x and
  for the pair's output: quantize takes them instead of calibrated ranges. uint8 activations are the
  same grid shifted by 128 (zero point - 128, the same scale); int16 and uint16 (shifted by 32768) activations (ORT's
  A16W8) are listed in the metadata's "int16" and run on the 16x8 kernels (qdq16.py); other types are refused.
- a uint8 (or int8) graph input read by DequantizeLinear (tf2onnx's image input) becomes a float input with that
  quantization fixed; the device's input port stays uint8 (the sensor's bytes), converted to int8 by a `quantize`
  op (edgec/frontend/canonicalize.py); calibration and bench data are the float values the DequantizeLinear gives.
  Integers moved before their DequantizeLinear (tf2onnx's from_tflite: int8 input -> Unsqueeze -> Transpose -> DQ,
  Q -> Reshape -> DQ) are dequantized first, the data movement after the DequantizeLinear (`_dequantize_first`).
- an int8 / uint8 graph output of a per-tensor QuantizeLinear (tf2onnx's from_tflite) is a pair's Clip, its grid
  fixed: the device's output port (uint8: edgec/frontend/canonicalize.py) holds the file's integers.
- a Clip of constants is folded first: Brevitas's QCDQ export writes each weight as an int8 constant ->
  Clip (its bit width's narrow range, [-7, 7] for 4 bits) -> DequantizeLinear, and the clipped integers are the
  weights; its int32 biases are DequantizeLinear constants as ORT's.
- a per-axis activation QuantizeLinear (NNCF quantizes a depthwise conv's input per channel) with one zero point
  becomes one per-tensor grid with the widest channel's scale: exact where the per-channel factors can move into
  the neighbouring convs' weight scales (`_absorb_per_axis`), else widened (every channel's range fits; the
  narrower channels lose resolution against ONNX Runtime's execution); int16 ones: qdq16.py's `per_axis16`.
- Constant nodes (torch.onnx's scales and zero points) are taken as initializers first.

What edgec's scheme cannot take is an EdgecError naming every node in its way, in one line: asymmetric or uint8
weights (the kernels need symmetric int8 weights), per-axis int8 activation zero points that differ. Where the
scheme fixes a quantization itself (pooling, views and data movement keep their input's, softmax outputs 1/256), it
wins over the model's; ptq logs those tensors. The result is kept in the model's metadata (`edgec.qdq`, JSON).
"""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.errors import EdgecError
from edgec.frontend.qdq16 import per_axis16

META = "edgec.qdq"          # (a key in the ONNX metadata: keep it)
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
WEIGHT_USERS = {"Conv": 1, "ConvTranspose": 1, "Gemm": 1, "MatMul": 1}   # op -> index of its weight input
CONST_CHAIN = ("Clip",)     # of constants (Brevitas's weight integers): folded here (an Identity of a constant is
# not: ORT quantizes what it reads as an activation, asymmetric, and the canonical graph takes that pair as it is)
INT_RANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}
WIDE_RANGE = {np.dtype(np.int16): (-32768, 32767), np.dtype(np.uint16): (0, 65535)}   # A16W8: the 16x8 kernels
NIBBLE_RANGE = {"int4": (-8, 7), "uint4": (0, 15)}   # numpy_helper.to_array's (ml_dtypes) types of ONNX's INT4 / UINT4
# (packed two per byte in the file): a constant's QuantizeLinear saturates to them


def is_qdq(model: onnx.ModelProto) -> bool:
    return any(n.op_type in QDQ_OPS and n.domain in ("", "ai.onnx") for n in model.graph.node)


def info(model: onnx.ModelProto) -> dict:
    """{'activations': {value: [scale, zero point]}, 'weights': {value: {...}}, 'clips': [node names]}."""
    for p in model.metadata_props:
        if p.key == META:
            return json.loads(p.value)
    return {"activations": {}, "weights": {}, "clips": []}


def strip(model: onnx.ModelProto) -> onnx.ModelProto:
    """The float model a QDQ model describes, with its quantization in the metadata (see the module doc)."""
    if not is_qdq(model):
        return model
    g = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    outputs = {o.name for o in g.output}
    for n in list(g.node):      # Constant nodes (torch.onnx's scales, zero points, Clip bounds) as initializers
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value" and n.output[0] not in outputs:
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
            g.initializer.append(numpy_helper.from_array(consts[n.output[0]], n.output[0]))
            g.node.remove(n)
    _dequantize_first(g, consts)
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    acts, weights, clips, widened, wide16, int_outputs = {}, {}, [], [], [], {}
    nodes, inits, done = [], [], set()
    ports = _integer_inputs(g, consts, readers)
    absorbed = _absorb_per_axis(g, consts, readers)
    problems = []          # every node edgec cannot take, named in one error
    wide: dict[str, list[tuple[str, str]]] = {}     # activations quantized to a type edgec does not run (int32)
    for n in g.node:
        try:
            if n.op_type == "DequantizeLinear" and n.output[0] in done:
                continue
            if n.op_type in CONST_CHAIN and n.input and all(i in consts for i in n.input if i) and n.input[0]:
                consts[n.output[0]] = f = _fold(n, consts)     # Brevitas: int8 weights -> Clip (narrow range) -> DQ
                inits.append(numpy_helper.from_array(f, n.output[0]))
                continue
            if n.op_type == "DequantizeLinear" and n.input[0] in ports:      # an integer graph input (tf2onnx)
                scale, zp, _, _ = _activation_q(n, consts)
                acts[n.input[0]] = acts[n.output[0]] = [scale, zp]
                nodes.append(helper.make_node("Identity", [n.input[0]], [n.output[0]],
                                              name=n.name or f"{n.input[0]}__dq"))
                continue
            if n.op_type in QDQ_OPS and not all(i in consts for i in n.input[1:] if i):
                nodes.append(n)           # computed scales: not a QDQ model's quantization (the canonicalizer says so)
                continue
            if n.op_type == "DequantizeLinear" and n.input[0] in consts:
                f = _dequantize(n, consts)
                consts[n.output[0]] = f
                inits.append(numpy_helper.from_array(f, n.output[0]))
                weights[n.output[0]] = _weight_record(n, consts, readers)
                continue
            if n.op_type == "QuantizeLinear" and n.input[0] in consts:
                consts[n.output[0]] = _quantize(n, consts)
                continue
            if n.op_type == "QuantizeLinear":
                dqs = readers.get(n.output[0], [])
                if n.output[0] in outputs and not dqs and _integer_output(n, consts):     # an int8/uint8 output
                    scale, zp, lo, hi = _activation_q(n, consts)
                    acts[n.input[0]] = acts[n.output[0]] = [scale, zp]
                    b = [f"{n.output[0]}__qdq_lo", f"{n.output[0]}__qdq_hi"]
                    inits += [numpy_helper.from_array(np.array(v, np.float32), k) for v, k in zip((lo, hi), b)]
                    nodes.append(helper.make_node("Clip", [n.input[0], *b], [n.output[0]], name=n.name))
                    clips.append(n.name)
                    int_outputs[n.output[0]] = _integer_output(n, consts)
                    continue
                if n.output[0] in outputs or not dqs or any(r.op_type != "DequantizeLinear" or not _same_q(n, r, consts)
                                                            for r in dqs):
                    nodes.append(n)       # integer tensors in the graph: the canonicalizer says it cannot
                    continue
                x = n.input[0]
                scale, zp, lo, hi = _activation_q(n, consts)
                if np.asarray(consts[n.input[1]]).size > 1:
                    widened.append(n.name)
                first = dqs[0].output[0]
                for v in (x, *[r.output[0] for r in dqs]):
                    acts[v] = [scale, zp]
                    if _wide(n, consts):
                        wide16.append(v)
                bounds = [f"{first}__qdq_lo", f"{first}__qdq_hi"]
                inits += [numpy_helper.from_array(np.array(v, np.float32), b) for v, b in zip((lo, hi), bounds)]
                name = dqs[0].name or f"{first}__qdq"
                nodes.append(helper.make_node("Clip", [x, *bounds], [first], name=name))
                clips.append(name)
                nodes += [helper.make_node("Identity", [first], [r.output[0]], name=r.name) for r in dqs[1:]]
                done.update(r.output[0] for r in dqs)      # the pair's DequantizeLinear nodes: replaced
                continue
            nodes.append(n)
        except WideActivation as e:     # one entry per type, every activation of it named
            wide.setdefault(e.dtype, []).append(e.value)
            nodes.append(n)
        except EdgecError as e:    # named with the others
            problems.append(str(e))
            nodes.append(n)
    problems += [_wide_problem(dtype, values) for dtype, values in wide.items()]
    if problems:
        raise EdgecError("; ".join(problems))
    used = {i for n in nodes for i in n.input} | outputs
    keep = [i for i in g.initializer if i.name in used] + [i for i in inits if i.name in used]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(keep)
    names = {i.name for i in keep}
    kept_inputs = [i for i in g.input if i.name not in consts or i.name in names]
    del g.input[:]
    g.input.extend(kept_inputs)
    del g.value_info[:]
    for i in list(g.input) + list(g.output):
        if i.name in ports or i.name in int_outputs:
            i.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    meta = {"activations": acts, "weights": {k: v for k, v in weights.items() if k in used}, "clips": clips,
            "integer_inputs": ports, "per_axis_absorbed": absorbed,
            "per_axis_widened": widened, "int16": wide16, "integer_outputs": int_outputs}
    model.metadata_props.append(onnx.StringStringEntryProto(key=META, value=json.dumps(meta)))
    return model


def _absorb_per_axis(g, consts, readers) -> list[str]:
    """Per-channel activation scales s_c between a Conv (-> Relu / Clip) and depthwise Convs (NNCF's depthwise
    inputs), made exact on one per-tensor grid S = max s_c: with f_c = s_c / S the producer's weight and bias scales
    are divided by f_c (a BatchNormalization between: its mean and beta too) and the depthwise weights' scales
    multiplied by f_c (the integers stay the file's), so the
    int8 tensor holds the file's integers and every layer computes what the file says. Only where a Clip's upper
    bound stays above the grid's top; the QuantizeLinear nodes so rewritten are returned (others are widened)."""
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    done = []
    for q in [n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] not in consts]:
        if len(q.input) < 3 or q.input[1] not in inits or q.input[2] not in inits:
            continue
        s, zp = np.asarray(consts[q.input[1]], np.float32), np.asarray(consts[q.input[2]])
        if s.ndim != 1 or s.size < 2 or np.unique(zp).size != 1 or not np.all(s > 0) or zp.dtype not in INT_RANGE:
            continue
        dqs = readers.get(q.output[0], [])
        users = [u for d in dqs for u in readers.get(d.output[0], [])]
        big = float(s.max())
        top = (INT_RANGE[zp.dtype][1] - int(zp.reshape(-1)[0]) - 0.5) * big     # what rounds to the grid's top
        if _attr(q, "axis", 1) != 1 or not dqs or not users or any(
                d.op_type != "DequantizeLinear" or list(d.input[1:]) != list(q.input[1:]) for d in dqs):
            continue
        convs = [u for u in users if u.op_type == "Conv" and _attr(u, "group", 1) == s.size and u.input[0] in
                 {d.output[0] for d in dqs} and _const_dq(producer.get(u.input[1]), consts, producer)]
        x = q.input[0]
        chain = []
        while producer.get(x) is not None and producer[x].op_type in ("Relu", "Clip", "BatchNormalization") \
                and len(readers[x]) == 1 and all(i in consts for i in producer[x].input[1:] if i):
            chain.append(producer[x])
            x = producer[x].input[0]
        conv = producer.get(x)
        if (len(convs) != len(users) or conv is None or conv.op_type != "Conv" or len(readers[x]) != 1
                or not _const_dq(producer.get(conv.input[1]), consts, producer)
                or any(c.op_type == "Clip" and not _clip_above(c, consts, top) for c in chain)):
            continue
        bias = conv.input[2] if len(conv.input) > 2 else ""
        if bias and not (_const_dq(producer.get(bias), consts, producer) or bias in inits):
            continue
        f = s / np.float32(big)
        for bn in (c for c in chain if c.op_type == "BatchNormalization"):    # NNCF's torch export keeps them:
            for k in (2, 3):                                                  # beta and mean scale with x
                if bn.input[k] not in inits:
                    break
                _set(inits, consts, bn.input[k], (consts[bn.input[k]] / f).astype(np.float32))
        _rescale(producer[conv.input[1]], 1 / f, consts, inits, g)
        for u in convs:
            _rescale(producer[u.input[1]], f, consts, inits, g)
        if bias and _const_dq(producer.get(bias), consts, producer):
            _rescale(producer[bias], 1 / f, consts, inits, g)
        elif bias:
            _set(inits, consts, bias, (consts[bias] / f).astype(np.float32))
        _set(inits, consts, q.input[1], np.array(big, np.float32))
        _set(inits, consts, q.input[2], np.array(zp.reshape(-1)[0], zp.dtype))
        done.append(q.name)
    return done


def _const_dq(n, consts, producer=None) -> bool:
    """n dequantizes a constant: integers, or a QuantizeLinear of float weights (NNCF's torch export)."""
    q = (producer or {}).get(n.input[0]) if n is not None else None
    return n is not None and n.op_type == "DequantizeLinear" and n.input[1] in consts and (
        n.input[0] in consts or q is not None and q.op_type == "QuantizeLinear" and q.input[0] in consts)


def _clip_above(c, consts, top) -> bool:
    hi = c.input[2] if len(c.input) > 2 else ""
    value = consts.get(hi) if hi else _attr(c, "max")
    lo = c.input[1] if len(c.input) > 1 else ""
    low = consts.get(lo) if lo else _attr(c, "min")
    return value is not None and float(np.asarray(value)) >= top and (low is None or float(np.asarray(low)) <= 0)


def _rescale(dq, factor, consts, inits, g) -> None:
    """A constant DequantizeLinear's scales times `factor` (per output channel, axis 0), in a scale of its own."""
    s = np.asarray(consts[dq.input[1]], np.float32).reshape(-1)
    new = (np.broadcast_to(s, factor.shape) * factor).astype(np.float32)
    name = f"{dq.output[0]}__absorbed_scale"
    consts[name] = new
    g.initializer.append(numpy_helper.from_array(new, name))
    inits[name] = g.initializer[-1]
    zp = dq.input[2] if len(dq.input) > 2 else ""
    if zp and np.asarray(consts[zp]).size == 1:
        zname = f"{dq.output[0]}__absorbed_zp"
        consts[zname] = np.full(new.shape, np.asarray(consts[zp]).reshape(()), np.asarray(consts[zp]).dtype)
        g.initializer.append(numpy_helper.from_array(consts[zname], zname))
        dq.input[2] = zname
    dq.input[1] = name
    for a in list(dq.attribute):
        if a.name == "axis":
            dq.attribute.remove(a)
    dq.attribute.append(helper.make_attribute("axis", 0))


def _set(inits, consts, name, value) -> None:
    consts[name] = value
    inits[name].CopyFrom(numpy_helper.from_array(value, name))


MOVES = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose"}


def _dequantize_first(g, consts) -> None:
    """Integers moved before their DequantizeLinear (tf2onnx's from_tflite of an int8 file: int8 input -> Unsqueeze
    -> Transpose -> DequantizeLinear for a Conv1D's ExpandDims, QuantizeLinear -> Reshape -> DequantizeLinear for a
    Flatten): the DequantizeLinear moved up to read the integer graph input or the QuantizeLinear's output, the data
    movement after it (per-tensor quantization commutes with moving the integers). The input is then read by the
    DequantizeLinear alone (_integer_inputs), the QuantizeLinear followed by it (a QDQ pair)."""
    ints = (onnx.TensorProto.UINT8, onnx.TensorProto.INT8)
    outputs = {o.name for o in g.output}
    starts = [i.name for i in g.input if i.type.tensor_type.elem_type in ints]
    starts += [n.output[0] for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] not in consts]
    for start in starts:
        chain, value = [], start
        while True:
            users = [n for n in g.node if value in n.input]
            if len(users) != 1 or value in outputs:
                break
            n = users[0]
            if n.op_type in MOVES and n.input[0] == value and all(k in consts for k in n.input[1:] if k):
                chain.append(n)
                value = n.output[0]
                continue
            if (chain and n.op_type == "DequantizeLinear" and n.input[0] == value
                    and all(k in consts for k in n.input[1:] if k) and np.asarray(consts[n.input[1]]).size == 1):
                y = n.output[0]
                n.input[0], n.output[0] = start, f"{start}__dequantized"
                chain[0].input[0], chain[-1].output[0] = n.output[0], y
                nodes = [m for m in g.node if m is not n]
                nodes.insert(nodes.index(chain[0]), n)
                del g.node[:]
                g.node.extend(nodes)
            break


def _integer_inputs(g, consts, readers) -> dict[str, str]:
    """{graph input: 'uint8' or 'int8'} of the integer inputs read only by DequantizeLinear nodes with constant
    per-tensor quantization (tf2onnx's uint8 image input): the stripped model takes the float values they stand
    for, and the device takes the integers (a uint8 input port, edgec/frontend/canonicalize.py)."""
    types = {onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.INT8: "int8"}
    out = {}
    for i in g.input:
        users = readers.get(i.name, [])
        if i.type.tensor_type.elem_type in types and i.name not in consts and users and all(
                r.op_type == "DequantizeLinear" and r.input[0] == i.name and all(k in consts for k in r.input[1:] if k)
                and np.asarray(consts[r.input[1]]).size == 1 for r in users):
            out[i.name] = types[i.type.tensor_type.elem_type]
    return out


def _arr(consts, name, default=None):
    if not name:
        return default
    if name not in consts:
        raise EdgecError(f"'{name}': QuantizeLinear/DequantizeLinear scales and zero points must be constants")
    return consts[name]


def _axis_shape(n, x, s):
    if s.size == 1:
        return s.reshape(()), None
    axis = _attr(n, "axis", 1) % x.ndim
    if _attr(n, "block_size", 0):
        raise EdgecError(f"node '{n.name}' ({n.op_type}): blocked quantization is not supported")
    shape = [1] * x.ndim
    shape[axis] = -1
    return s.reshape(shape), axis


def _fold(n, consts) -> np.ndarray:
    """A Clip of constants, computed (it keeps its input's type: ONNX's semantics)."""
    x = np.asarray(consts[n.input[0]])
    bounds = [np.asarray(consts[i]).reshape(()) if len(n.input) > k and n.input[k] else None
              for k, i in ((1, n.input[1] if len(n.input) > 1 else ""), (2, n.input[2] if len(n.input) > 2 else ""))]
    lo = bounds[0] if bounds[0] is not None else _attr(n, "min")
    hi = bounds[1] if bounds[1] is not None else _attr(n, "max")
    return np.clip(x, lo, hi).astype(x.dtype)


def _dequantize(n, consts) -> np.ndarray:
    q = consts[n.input[0]]
    s = np.asarray(_arr(consts, n.input[1]), np.float32)
    zp = _arr(consts, n.input[2] if len(n.input) > 2 else "", np.zeros((), q.dtype))
    s, _ = _axis_shape(n, q, s)
    zp, _ = _axis_shape(n, q, np.asarray(zp))
    return ((q.astype(np.int64) - zp.astype(np.int64)).astype(np.float32) * s).astype(np.float32)


def _quantize(n, consts) -> np.ndarray:
    x = np.asarray(consts[n.input[0]], np.float32)
    s = np.asarray(_arr(consts, n.input[1]), np.float32)
    zp = np.asarray(_arr(consts, n.input[2] if len(n.input) > 2 else "", np.zeros((), np.uint8)))
    s, _ = _axis_shape(n, x, s)
    zpb, _ = _axis_shape(n, x, zp)
    lo, hi = {**INT_RANGE, **WIDE_RANGE}.get(zp.dtype, NIBBLE_RANGE.get(zp.dtype.name, (None, None)))
    if lo is None:     # (int16: a constant ORT's A16W8 quantizes like an activation, GELU's 0.5: folded to its value)
        raise EdgecError(f"node '{n.name}' (QuantizeLinear): {zp.dtype} quantization of a constant is not supported "
                         "(int8, uint8, int16, uint16, int4 and uint4 are)")
    return np.clip(np.rint(x / s) + zpb.astype(np.int64), lo, hi).astype(zp.dtype)


def _weight_record(n, consts, readers) -> dict:
    """Scales of a dequantized constant, or why they cannot be a weight's (only checked if it is one)."""
    q = consts[n.input[0]]
    s = np.asarray(_arr(consts, n.input[1]), np.float64)
    zp = np.asarray(_arr(consts, n.input[2] if len(n.input) > 2 else "", np.zeros((), q.dtype)))
    _, axis = _axis_shape(n, q, s)
    if q.dtype.name == "int4":               # ONNX's INT4: the same integers as int8 ones, 4 bits in flash
        q, zp = q.astype(np.int8), zp.astype(np.int8)
    rec = {"scale": s.reshape(-1).tolist(), "axis": axis, "node": n.name,
           "bits": 4 if q.dtype == np.int8 and q.size and np.all(zp == 0) and q.min() >= -8 and q.max() <= 7 else 8}
    problem = None
    if q.dtype != np.int8 and q.dtype != np.int32:
        problem = f"{q.dtype} weights (edgec's kernels take symmetric int8 weights: quantize with weight_type QInt8)"
    elif q.dtype == np.int8 and np.any(zp != 0):
        problem = "asymmetric int8 weights (zero point not 0; edgec's kernels take symmetric int8 weights: " \
                  "quantize with symmetric weights)"
    for r in readers.get(n.output[0], []):
        if WEIGHT_USERS.get(r.op_type) == list(r.input).index(n.output[0]) and problem:
            raise EdgecError(f"node '{n.name}' (DequantizeLinear): the weights of '{r.name}' ({r.op_type}) are "
                             f"{problem}; or give edgec the float model")
    return rec


class WideActivation(EdgecError):
    """An activation's QuantizeLinear to a type edgec does not run (int32, float8): gathered into one entry."""

    def __init__(self, dtype: str, node: str, op_type: str = "QuantizeLinear"):
        super().__init__(f"node '{node}' ({op_type}) quantizes an activation to {dtype}")
        self.dtype, self.value = dtype, (node, op_type)


def _wide_problem(dtype: str, nodes: list[tuple[str, str]]) -> str:
    rest = nodes[1:]
    shown = ", ".join(f"'{v}'" for v, _ in rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
    more = f", and so do {len(rest)} more QuantizeLinear node(s) ({shown})" if rest else ""
    return (f"node '{nodes[0][0]}' ({nodes[0][1]}): quantizes an activation to {dtype}{more}; edgec runs a QDQ file's "
            "activations in int8 or int16 (16x8): quantize with activation_type QInt8, QUInt8 or QInt16, or give edgec "
            "the float model")


def _activation_q(n, consts) -> tuple[float, int, float, float]:
    """(scale, int8 zero point, lo, hi) of an activation's QuantizeLinear."""
    s = np.asarray(_arr(consts, n.input[1]), np.float32)
    zp = np.asarray(_arr(consts, n.input[2] if len(n.input) > 2 else "", np.zeros((), np.uint8)))
    if s.size != 1 and zp.dtype in WIDE_RANGE and np.all(s > 0):    # int16 / uint16 per axis: one symmetric grid
        return per_axis16(s, zp.astype(np.int64) - (zp.dtype == np.uint16) * 32768)   # holding every channel
    if s.size != 1 and (zp.size != 1 and np.unique(zp).size != 1 or not np.all(s > 0)):
        raise EdgecError(f"node '{n.name}' (QuantizeLinear): activation '{n.input[0]}' has a scale per axis with "
                         "zero points that differ; edgec quantizes activations per tensor")
    if s.size != 1:      # NNCF's depthwise inputs: one grid, the widest channel's (its step covers every channel)
        s, zp = np.asarray(s.max(), np.float32), np.asarray(zp.reshape(-1)[0])
    if zp.dtype not in INT_RANGE and zp.dtype not in WIDE_RANGE:
        raise WideActivation(str(zp.dtype), n.name or n.input[0], n.op_type)
    qmin, qmax = {**INT_RANGE, **WIDE_RANGE}[zp.dtype]
    z = int(zp.reshape(()))
    scale = float(s.reshape(()))
    if not scale > 0:
        raise EdgecError(f"node '{n.name}' (QuantizeLinear): scale {scale} is not positive")
    lo, hi = float(np.float32((qmin - z) * np.float32(scale))), float(np.float32((qmax - z) * np.float32(scale)))
    return scale, z - {np.uint8: 128, np.uint16: 32768}.get(zp.dtype.type, 0), lo, hi


def _integer_output(n, consts) -> str | None:
    """'int8' or 'uint8': a per-tensor QuantizeLinear to that type (no zero point: uint8), else None."""
    t = np.asarray(consts[n.input[2]]).dtype if len(n.input) > 2 and n.input[2] else np.dtype(np.uint8)
    return str(t) if t in INT_RANGE and consts[n.input[1]].size == 1 else None


def _wide(n, consts) -> bool:
    """An activation's QuantizeLinear to int16 or uint16 (ONNX Runtime's A16W8)."""
    zp = n.input[2] if len(n.input) > 2 else ""
    return bool(zp) and np.asarray(consts[zp]).dtype in WIDE_RANGE


def _same_q(q, dq, consts) -> bool:
    a, b = q.input[1:], dq.input[1:]
    try:
        return all(np.array_equal(_arr(consts, x, np.zeros(())), _arr(consts, y, np.zeros(())))
                   for x, y in zip(list(a) + [""] * (2 - len(a)), list(b) + [""] * (2 - len(b)))) and \
            _attr(q, "axis", 1) == _attr(dq, "axis", 1)
    except EdgecError:
        return False


def _attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def weight_scale(qdq: dict, node: onnx.NodeProto, channel_axis: int, weights: np.ndarray) -> np.ndarray | None:
    """The model's own scales of a canonical weighted op's weights, one per output channel (or None:
    not a QDQ weight, or laid out so that its scales are not per output channel). channel_axis: the
    output-channel axis of the canonical weights."""
    name = node.input[1] if len(node.input) > 1 else ""
    rec = qdq["weights"].get(name)
    if rec is None:
        return None
    out_axis = {"Conv": 0, "MatMul": 1, "Gemm": 0 if _attr(node, "transB", 0) else 1}.get(node.op_type)
    if out_axis is None or float(_attr(node, "alpha", 1.0)) != 1.0:
        return None
    n_out = weights.shape[channel_axis]
    scale = np.asarray(rec["scale"], np.float64)
    if rec["axis"] is None:
        return np.full(n_out, scale[0])
    if rec["axis"] != out_axis or scale.size != n_out:
        return None
    return scale


def weight_bits(qdq: dict, node: onnx.NodeProto) -> int:
    """4 where a weighted node's weights are the file's integers within int4's [-8, 7] (ONNX INT4, Brevitas's Clip
    to [-7, 7], a QONNX Quant of 4 bits or fewer) with zero point 0, else 8."""
    rec = qdq["weights"].get(node.input[1] if len(node.input) > 1 else "")
    return 8 if rec is None else rec.get("bits", 8)
