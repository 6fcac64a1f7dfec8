"""The escape hatch: chosen layers run with int16 activations (TFLite's 16x8 scheme) in an INT8 model.

A layer named with `--int16 NODE` (an ONNX node name, as the sensitivity table shows it) reads and
writes int16 activations: symmetric (zero point 0, scale = max|range| / 32767), int8 symmetric
per-channel weights as everywhere, an int64 bias (kept within +-2^40 so the int64 accumulator stays
inside what the 64-bit requantization takes), and the kinds' 16x8 quantizers (`OpDef.int16`) and kernels (the
records of precision int16 in their families, edgec/ops/kernel.py). The model's input and output stay int8 at the API
(but an int16 tail's output port, `tail_default`).

`mark(graph, names)` rewrites the float canonical graph before quantization (into a new graph):
- the chosen ops' input and output tensors get int16 twins (`<name>:s16`, dtype "int16");
- an int8 tensor an int16 layer reads is converted by a `requantize` op (int8 -> int16) placed after
  its producer; an int16 output that an int8 op (or the model output) reads is converted back
  (int16 -> int8) right after the int16 layer. Chained int16 layers read each other's int16 tensors
  directly, and a view (reshape/flatten), a pool (max, average), an add or a concat (their int16 kernels) between
  two int16 layers stays int16 (an add's or concat's int8 operand is converted up), so a chain has conversions
  only at its ends.
Everything downstream dispatches on the tensors' dtype: quantize (int16 ranges and parameters),
reference (the 16x8 kernels), the planner (bytes, not elements) and codegen (the s16 calls). The fast
kernels take no int16 op but a recurrence (edgec_recurrent_fast_s16).
"""
from __future__ import annotations

from dataclasses import replace

from edgec.errors import EdgecError
from edgec.ir import Graph, Op, Tensor
from edgec.ops.convert import KIND as CONVERT            # the int8 <-> int16 conversion op
from edgec.ops.recurrent import KINDS as RECURRENT_KINDS  # ONNX LSTM / GRU (edgec_recurrent_s16)
from edgec.ops.recurrent import takes_int16_recurrence
from edgec.ops.registry import INT16_KINDS as KINDS      # op kinds with a 16x8 kernel
from edgec.ops.registry import REGISTRY, fixed_qparams
from edgec.ops.registry import INT16_NAMEABLE            # and those --int16 may name besides (softmax)
from edgec.ops.registry import int16_through            # views, pools, adds and concats an int16 chain passes through

SUFFIX = ":s16"


def candidates(graph: Graph, kinds=KINDS) -> list[str]:
    """Node names of 16x8 layers (the accuracy budget's choice), in graph order; with kinds=INT16_NAMEABLE,
    every node --int16 may name (a softmax too)."""
    return list(dict.fromkeys(op.name for op in graph.ops if op.kind in kinds))


def check_names(graph: Graph, names, kinds=INT16_NAMEABLE) -> list[str]:
    """The distinct names, or one EdgecError naming the bad ones and listing the valid ones."""
    names = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
    valid = candidates(graph, kinds)
    bad = [n for n in names if n not in valid]
    if bad:
        known = {op.name: op.kind for op in graph.ops}
        what = ", ".join(f"'{n}' ({known[n]}: no int16 kernel)" if n in known else f"'{n}' (no such node)"
                         for n in bad)
        raise EdgecError(f"--int16 {what}; layers that can run with int16 activations: "
                         f"{', '.join(valid) if valid else 'none in this model'}")
    return names


def mark(graph: Graph, names, outputs16=(), kinds=INT16_NAMEABLE) -> tuple[Graph, int]:
    """`graph` (float, canonical, before quantize) rewritten so the named layers run with int16 activations,
    and the number of conversion ops inserted. A graph output in `outputs16` (an int16 tail, tail_default) that a
    named layer writes and nothing reads stays int16: an int16 output port under its own name. kinds: those a name
    may have (a transformer's row layers too: attention_default)."""
    names = set(check_names(graph, names, kinds))
    if not names:
        return graph, 0
    chosen = {id(op) for op in graph.ops if op.name in names and op.kind in kinds}
    readers: dict[str, list[Op]] = {}
    for op in graph.ops:
        for t in op.inputs:
            readers.setdefault(t, []).append(op)
    # the views, pools, adds and concats between int16 layers: an int16 input (an add's or concat's other inputs
    # are converted up), every reader int16 (a layer or another of them)
    views = {id(op) for op in graph.ops if int16_through(op) and id(op) not in chosen
             and ((op.output not in graph.outputs and readers.get(op.output)) or op.output in outputs16)}
    while True:
        native16: set[str] = set()      # tensors written in int16
        dropped = False
        for op in graph.ops:
            if id(op) in chosen:
                native16.add(op.output)
            elif id(op) in views:
                if set(op.inputs) & native16 and all(id(r) in chosen or id(r) in views for r in readers.get(op.output, ())):
                    native16.add(op.output)
                else:
                    views.discard(id(op))
                    dropped = True
        if not dropped:
            break
    wide = native16 | {t for op in graph.ops if id(op) in chosen or id(op) in views for t in op.inputs}

    def needs_int8(t: str) -> bool:
        return t in graph.outputs or any(id(r) not in chosen and id(r) not in views for r in readers.get(t, []))

    port16 = {t for t in outputs16 if t in graph.outputs and t in native16 and not readers.get(t)}
    tensors = dict(graph.tensors)
    for t in [t for t in graph.tensors if t in wide]:      # graph order: the same model every run
        src = graph.tensors[t]
        if t in port16:
            tensors[t] = replace(src, dtype="int16")
        else:
            tensors[t + SUFFIX] = Tensor(name=t + SUFFIX, shape=src.shape, source=src.source, dtype="int16")
    converters = 0

    def to16(t: str) -> Op:
        nonlocal converters
        converters += 1
        return Op(kind=CONVERT, name=f"{t} to int16", inputs=(t,), output=t + SUFFIX)

    ops = [to16(t) for t in graph.inputs if t in wide]
    for op in graph.ops:
        out = op.output
        if id(op) in chosen or id(op) in views:
            d16 = REGISTRY[op.kind].int16
            if id(op) in chosen and d16.as16 is not None and REGISTRY[op.kind].weight_axis is None:
                op = d16.as16(op)       # an unweighted kind's int16 form (an ONNX table: its 513-entry int16 one)
            op = replace(op, inputs=tuple(t + SUFFIX for t in op.inputs),
                         output=out if out in port16 else out + SUFFIX)
        ops.append(op)
        if out in port16:
            pass
        elif out in native16:
            if needs_int8(out):
                converters += 1
                # a graph output of a kind whose int8 output has its own grid (a Softmax's 1/256) keeps the int8
                # model's port; an inner one (attention's, read by a MatMul) its calibrated range, finer
                grid = fixed_qparams(op) if out in graph.outputs else None
                ops.append(Op(kind=CONVERT, name=f"{out} to int8", inputs=(out + SUFFIX,), output=out,
                              attrs={} if grid is None else {"grid": tuple(grid)}))
            else:
                del tensors[out]
        elif out in wide:
            ops.append(to16(out))
    return graph.replace_ops(ops, tensors), converters



def recurrent_default(graph: Graph) -> list[str]:
    """What a float model's LSTMs and GRUs run with under --int16-recurrence (QuantOptions.recurrent_int16; by
    default where it gains, ptq.recurrence_choice): int16 input and output (edgec_recurrent_s16), with
    the int16-capable layers reading its sequence (directly or through views, remaps, concats, a mean), so the state
    leaves the recurrence on an int16 grid and is read as int16; only a recurrence with such a reader (another
    recurrence, a fully connected...): one whose output an int8 layer reads would be converted back at once."""
    readers = candidates(graph) + list(RECURRENT_KINDS) + [op.name for op in graph.ops if op.kind in ROW_LAYERS]
    names: list[str] = []
    for op in graph.ops:
        if takes_int16_recurrence(op) and op.name not in names:
            found = layers_reading(graph, op.name, readers)
            if found:
                names += [op.name, *found]
    return list(dict.fromkeys(names + tables_between(graph, names)))


# the 16x8 weighted kinds the accuracy budget leaves out but an int16 recurrence's chain takes (a MatMul over rows)
ROW_LAYERS = tuple(k for k in INT16_NAMEABLE if REGISTRY[k].weight_axis is not None and k not in KINDS)


def tables_between(graph: Graph, names) -> list[str]:
    """The smooth tables (Int16.tail: their int16 variant as exact as the layers' around them; a Tanh between an
    autoencoder's code Gemm and its decoder LSTM) that read a layer of `names` (directly or through views) and are
    read by one: the chain goes on in int16 through them instead of an int8 grid and back."""
    chain = set(names)
    writer = {op.output: op for op in graph.ops}
    found = []
    for op in graph.ops:
        d = REGISTRY[op.kind].int16
        if d is None or d.tail is None or not d.tail(op) or op.name in chain \
                or op.name not in candidates(graph, INT16_NAMEABLE):
            continue
        src = writer.get(op.inputs[0])
        while src is not None and src.name not in chain and int16_through(src):
            src = writer.get(src.inputs[0])
        if src is not None and src.name in chain and layers_reading(graph, op.name, chain):
            found.append(op.name)
    return found


def tail_default(graph: Graph) -> tuple[list[str], list[str]]:
    """An int16 tail of a float model (QuantOptions.tail_int16; by default where it gains, ptq.tail_choice): each
    graph output written by a kind whose int16 variant may end a model (Int16.tail: an L2 normalization, whose
    values an int8 port puts on a grid coarser than the layer computes) runs int16 and leaves as an int16 port,
    with the 16x8 layer feeding it when that layer feeds it alone. (names, graph outputs)."""
    writer = {op.output: op for op in graph.ops}
    readers: dict[str, int] = {}
    for op in graph.ops:
        for t in op.inputs:
            readers[t] = readers.get(t, 0) + 1
    names, outs = [], []
    for t in graph.outputs:
        op = writer.get(t)
        while op is not None and int16_through(op) and readers.get(op.inputs[0]) == 1 and op.inputs[0] in writer:
            op = writer[op.inputs[0]]       # a transpose or view after it (an NCHW output) passes int16 on
        d = REGISTRY[op.kind].int16 if op is not None else None
        if d is None or not tail_kind(op) or readers.get(t) or readers.get(op.output, 0) > (op.output != t) \
                or op.name not in candidates(graph, INT16_NAMEABLE):
            continue
        names.append(op.name)
        outs.append(t)
        feed = writer.get(op.inputs[0])
        if feed is not None and feed.kind in KINDS and readers.get(feed.output) == 1 and feed.output not in graph.outputs:
            names.insert(-1, feed.name)
        elif feed is not None and len(feed.inputs) > 1 and int16_through(feed):
            names[-1:-1] = difference_head(graph, feed)     # a tail reading a difference (Sub, then Pow 2)
    return list(dict.fromkeys(names)), outs


def tail_kind(op: Op) -> bool:
    """Whether op's kind may end an int16 tail (Int16.tail: an int16 port; Int16.tail8: its own int8 grid)."""
    d = REGISTRY[op.kind].int16
    return d is not None and any(f is not None and f(op) for f in (d.tail, d.tail8))


def tail_ports(graph: Graph) -> list[str]:
    """The graph outputs an int16 tail leaves as int16 ports (tail_default's, but those of an Int16.tail8 kind, a
    Softmax: computed int16, rounded once to the kind's fixed int8 grid, so the port is the int8 model's)."""
    writer = {op.output: op for op in graph.ops}
    ports = []
    for t in tail_default(graph)[1]:
        op = writer[t]
        while not tail_kind(op):        # back through the views an int16 tail passes (an NCHW output's transpose)
            op = writer[op.inputs[0]]
        d = REGISTRY[op.kind].int16
        if d.tail is not None and d.tail(op):
            ports.append(t)
    return ports


# a transformer's kinds with a 16x8 kernel that quantizes from float ranges as from a QDQ file's int16 grids (the
# row-wise FullyConnected, LayerNorm, MatMul of two activations and Add / Sub / Mul of h46-t16 and h45-ort: Int16.rows)
ATTENTION_KINDS = INT16_NAMEABLE + tuple(k for k, d in REGISTRY.items() if d.int16 is not None
                                         and d.int16.rows is not None and k not in INT16_NAMEABLE)


def attention_default(graph: Graph) -> list[str]:
    """A float transformer's layers that run int16 under QuantOptions.attention_int16 (by default where it gains,
    ptq.attention_choice): in a model with a LayerNorm (a normalization with int16 rows) and a Softmax, every op of
    ATTENTION_KINDS its kind's Int16.rows takes (a binary one: Add, Sub, Mul; none with a bool operand), so the
    residual stream, the normalized rows, the attention's scores and probabilities and the MLP's rows are int16
    (ONNX Runtime's INT8 leaves the LayerNorms, the GELUs and the attention's scaling in float: edgec's int8 rounds
    each); what has no 16x8 kernel (a GELU table) stays int8, converted at its ends. [] for any other model."""
    def rows(op) -> bool:
        d = REGISTRY[op.kind].int16
        return d is not None and d.rows is not None and d.rows(op)
    if not any(REGISTRY[op.kind].family == "norm" and rows(op) for op in graph.ops) or not any(
            REGISTRY[op.kind].distribution and op.kind in INT16_NAMEABLE for op in graph.ops):   # (a Softmax)
        return []
    return list(dict.fromkeys(
        op.name for op in graph.ops if op.kind in ATTENTION_KINDS
        and (op.kind in INT16_NAMEABLE or rows(op))
        and not any(graph.tensors[t].dtype == "bool" for t in op.inputs)))

def difference_head(graph: Graph, diff: Op) -> list[str]:
    """The layers an int16 tail reading a difference of two values (a Sub: Int16.between) takes with it: back from it
    through the 16x8 layers whose input holds no more values than the difference (the head, not the convolutions
    before it), smooth tables (Int16.tail) and what an int16 chain passes (views, a mean over time): a reconstruction
    and its target both on int16 grids (the TCN autoencoder's bottleneck: its mean feature, the Gemm -> Tanh -> Gemm
    decoder), not int8 ones subtracted."""
    writer = {op.output: op for op in graph.ops}
    nameable = set(candidates(graph, INT16_NAMEABLE))
    size = graph.tensors[diff.output].size
    found, todo, seen = [], list(diff.inputs), set()
    while todo:
        src = writer.get(todo.pop())
        if src is None or id(src) in seen:
            continue
        seen.add(id(src))
        d = REGISTRY[src.kind].int16
        layer = graph.tensors[src.inputs[0]].size <= size if src.kind in KINDS else \
            d is not None and d.tail is not None and d.tail(src)
        if layer and src.name in nameable:
            found.append(src.name)
        elif not int16_through(src):
            continue
        todo.extend(src.inputs)
    return list(reversed(found))


TAIL_HEADROOM = 2.0     # an int16 tail's output grid spans this times its calibrated range: a sample beyond what
                        # the calibration set reached is not clipped, for 6 dB of int16's ~90


def tail_ranges(graph: Graph, ranges: dict) -> dict:
    """`ranges` with the calibrated range of each int16 tail's output (tail_default; the tail layer's own and the
    port's, through views) widened TAIL_HEADROOM times: an int8 port clips a log-probability below the calibration
    set's least (ONNX Runtime's float tail does not); an int16 one has the bits to spare."""
    names, outs = tail_default(graph)
    tails = [op.output for op in graph.ops if op.name in names and REGISTRY[op.kind].int16 is not None
             and REGISTRY[op.kind].int16.tail is not None]
    wide = dict(ranges)
    for src in {graph.tensors[t].source for t in [*tails, *outs]}:
        if src in wide:
            wide[src] = tuple(TAIL_HEADROOM * float(v) for v in wide[src])
    return wide


def layers_reading(graph: Graph, name: str, kinds=None) -> list[str]:
    """The int16-capable layers reading layer `name`'s output, directly or through views, pools, adds and concats
    (what mark keeps int16 along with it), in graph order (kinds: names and kinds that count as such layers)."""
    ok = set(candidates(graph)) if kinds is None else {op.name for op in graph.ops
                                                       if op.name in kinds or op.kind in kinds}
    outs = {op.output for op in graph.ops if op.name == name}
    found = []
    for op in graph.ops:                   # graph order: a view or pool comes after what it reads
        if not set(op.inputs) & outs:
            continue
        if op.name in ok and not (kinds is not None and op.name == name):
            found.append(op.name)
        elif int16_through(op):     # (a bidirectional recurrence's concat has the recurrence's name)
            outs.add(op.output)
    return list(dict.fromkeys(found))
