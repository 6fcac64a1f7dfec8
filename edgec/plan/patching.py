"""Patch-based execution (MCUNetV2-style) of the early, high-resolution part of a network, in row bands.

A *stage* is a run of consecutive ops (in execution order) over channels-last images: convolutions,
depthwise convolutions and same-shape adds (residual branches inside the stage are fine). Instead of one
whole layer after another, the stage computes its output `rows` rows at a time; each op computes only the
rows the next band needs, and every tensor inside the stage lives in a *window*: a small buffer holding
the rows some later call still reads (the receptive-field overlap is cached, never recomputed). Before an
op writes new rows into a window, the rows no reader needs any more are dropped by moving the kept rows
to the window's start (a `Move`). So only a few rows of each intermediate tensor are ever alive, and the
stage's output is written row band by row band -- over the rows of the stage's input that nothing reads
any more when the input dies in the stage (`gap`: the output starts that many bytes before the input,
the smallest distance at which no write lands on a row still to be read).

Each kernel call is the op's own kernel (reference or fast) on a sub-tensor: the input pointer at the
first row it reads, `in_h`/`out_h`/`pad_top` of the band (`band_params`), so the image's own padding is
only applied at the image's real top and bottom. The integer kernels compute every output row from the
same inputs whatever the band, so patching never changes values; `edgec/plan/arena_run.py` runs the same
calls on a NumPy arena at the planned offsets, so the layout (windows, moves, the output written over the
input) is checked against the whole-layer reference bit for bit.

The cost: one kernel call per op and band instead of one per op, and the moves. `extra_cost` estimates it
in instructions (CALL_COST per extra call, a byte moved ~ one instruction).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from edgec.ir import Graph, Op
from edgec.ops.conv.depthwise3x3 import band_flags
from edgec.ops.kernel import REFERENCE
from edgec.ops.registry import ROW_BAND_OPS
from edgec.ops.select import lowering_of
CALL_COST = 600          # instructions of one more kernel call (setup, the first rows of a rolling window)
ALIGN = 16
SCRATCH_ALIGN = 16       # a kernel's scratch buffer: its bytes rounded up to this


def scratch_bytes(graph: Graph, op: Op) -> int:
    """The scratch buffer the planner reserves for an op's kernel: what its lowering asks for, rounded up to
    SCRATCH_ALIGN (0: none)."""
    low = lowering_of(graph, op)
    size = low.scratch_bytes if low is not None else 0
    return (size + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN


@dataclass
class Call:
    op: int                       # op index in the graph's (scheduled) order
    rows: tuple[int, int]         # output rows [o0, o1) it computes
    reads: list[tuple[int, int]]  # per input: rows [lo, hi) it reads


@dataclass
class Move:
    tensor: str                   # window whose rows [keep, end) move to the window's start
    drop: int                     # rows dropped from the front
    keep: int                     # rows moved


@dataclass
class Stage:
    first: int                    # op indices [first, last] in execution order
    last: int
    rows: int                     # stage-output rows per band
    steps: list = field(default_factory=list)          # Call and Move, in order
    windows: dict[str, int] = field(default_factory=dict)   # tensor inside the stage -> rows it holds
    bases: list = field(default_factory=list)          # per step: {window tensor: first row it holds}
    input: str | None = None      # the stage's dying input the output is written over (None: not shared)
    gap: int = 0                  # bytes between the output's start and that input's start
    scratch_bytes: int = 0        # one scratch buffer for every op of the stage
    report: dict = field(default_factory=dict)          # describe(): for plan.json

    @property
    def ops(self) -> range:
        return range(self.first, self.last + 1)

    def calls(self) -> int:
        return sum(isinstance(s, Call) for s in self.steps)

    def describe(self, graph: Graph) -> dict:
        return {"ops": [self.first, self.last], "rows_per_band": self.rows, "calls": self.calls(),
                "windows": {t: {"rows": r, "bytes": r * row_bytes(graph, t)} for t, r in self.windows.items()},
                "output_over_input": self.input, "gap_bytes": self.gap,
                "extra_instructions_estimate": extra_cost(graph, self)}


def row_bytes(graph: Graph, tensor: str) -> int:
    t = graph.tensors[tensor]
    return t.nbytes // t.shape[1]


def _image(graph: Graph, tensor: str) -> bool:
    t = graph.tensors[tensor]
    return len(t.shape) == 4 and t.dtype == "int8"


def eligible(graph: Graph, op: Op) -> bool:
    """Whether `op` can run in row bands: an int8 ROW_BAND_OPS kind over [1, H, W, C] images."""
    if op.kind not in ROW_BAND_OPS or not all(_image(graph, t) for t in (*op.inputs, op.output)):
        return False
    if _elementwise(op):
        return all(graph.tensors[t].shape == graph.tensors[op.output].shape for t in op.inputs)
    low = op.lowering
    if low is not None and low.kernel.role != REFERENCE and not any(k in low.params for k in ("k4", "rows", "len")):
        return False      # a fast kernel band_op cannot restrict to rows (the global average pool)
    return int(op.params.get("dil_h", 1)) == 1


def _elementwise(op: Op) -> bool:
    return ROW_BAND_OPS.get(op.kind) == "elementwise"


def input_rows(op: Op, o0: int, o1: int) -> list[tuple[int, int]]:
    """Rows [lo, hi) of each input that output rows [o0, o1) read (clipped to the image)."""
    if _elementwise(op):
        return [(o0, o1)] * len(op.inputs)
    p = op.params
    s, pt, kh, ih = int(p["stride_h"]), int(p["pad_top"]), int(p["k_h"]), int(p["in_h"])
    lo, hi = max(0, o0 * s - pt), min(ih, (o1 - 1) * s - pt + kh)
    return [(lo, max(lo, hi))]


def band_params(op: Op, o0: int, o1: int) -> dict:
    """A convolution's params for output rows [o0, o1), its input starting at the first row input_rows() gives."""
    p = dict(op.params)
    (lo, hi), = input_rows(op, o0, o1)
    p.update(in_h=hi - lo, out_h=o1 - o0, pad_top=int(op.params["pad_top"]) - o0 * int(op.params["stride_h"]) + lo)
    return p


def band_op(graph: Graph, op: Op, o0: int, o1: int) -> Op:
    """A copy of `op` computing output rows [o0, o1) only: its params and its lowering's params for the band (a
    new Lowering; a reference kernel's params are the op's)."""
    out = graph.tensors[op.output]
    low = op.lowering
    if _elementwise(op):
        n = (o1 - o0) * (out.size // out.shape[1])
        params = dict(op.params, n=n)
        lp = None if low is None else dict(low.params, n=n)
    else:
        params = band_params(op, o0, o1)
        lp = None if low is None else params if low.kernel.role == REFERENCE else \
            _fast_band(op, low.params, params, o0, o1)
    return dataclasses.replace(op, params=params, lowering=None if low is None else low.replace(params=lp))


def _fast_band(op: Op, fast: dict, params: dict, o0: int, o1: int) -> dict:
    """A fast window kernel's params for the band of output rows [o0, o1) whose convolution params are `params`
    (a depthwise 3x3 sweeping rows: which of the band's rows are the image's top and bottom, depthwise3x3.band_flags)."""
    lp = dict(fast)
    if "k4" in lp:                                           # the im2col conv
        lp.update(in_h=params["in_h"], out_h=params["out_h"], pad_top=params["pad_top"])
    elif "len" in lp:                                        # the 1-D depthwise
        if int(op.params["in_w"]) == 1 and int(op.params["k_w"]) == 1:      # along the rows: the band's
            lp.update(len=params["in_h"], out_len=params["out_h"], pad=params["pad_top"])
    elif lp["rows"] == int(op.params["in_h"]) and lp["out_rows"] == int(op.params["out_h"]) \
            and int(op.params["out_h"]) <= int(op.params["out_w"]):   # depthwise sweeping rows
        lp.update(rows=params["in_h"], out_rows=params["out_h"], pad_top=params["pad_top"],
                  band=band_flags(fast, o0, o1, input_rows(op, o0, o1)[0][0]))
    else:                                                    # depthwise sweeping the image's columns
        lp.update(cols=params["in_h"], out_cols=params["out_h"], pad_left=params["pad_top"])
    return lp


# ---------------------------------------------------------------- one stage's schedule

def can_stage(graph: Graph, first: int, last: int) -> bool:
    """Ops [first, last] form a stage: all eligible, every tensor they make except the last one's output
    read only inside the stage, and that output not read inside it."""
    ops = graph.ops[first:last + 1]
    if not ops or not all(eligible(graph, op) for op in ops):
        return False
    inside = {op.output for op in ops}
    final = ops[-1].output
    for k, op in enumerate(graph.ops):
        for t in op.inputs:
            if t in inside and t != final and not first <= k <= last:
                return False
            if t == final and first <= k <= last:
                return False
    return final not in graph.inputs and all(t not in graph.outputs for t in inside - {final})


def build_stage(graph: Graph, first: int, last: int, rows: int) -> Stage:
    """The calls and moves of ops [first, last] run `rows` stage-output rows at a time."""
    ops = graph.ops
    producer = {ops[k].output: k for k in range(first, last + 1)}
    final = ops[last].output
    done = {k: 0 for k in range(first, last + 1)}
    calls: list[Call] = []

    def ensure(k: int, upto: int) -> None:
        """Compute op k's rows up to `upto`, at most `rows` rows a call (each only when needed: the
        smallest windows)."""
        while done[k] < upto:
            o1 = min(upto, done[k] + rows)
            reads = input_rows(ops[k], done[k], o1)
            for t, (_, hi) in zip(ops[k].inputs, reads):
                if t in producer:
                    ensure(producer[t], hi)
            calls.append(Call(k, (done[k], o1), reads))
            done[k] = o1

    height = graph.tensors[final].shape[1]
    for end in range(rows, height + rows, rows):
        ensure(last, min(end, height))
    # windows: before each write, drop the rows no later call reads
    stage = Stage(first, last, rows)
    windows = [t for t in producer if t != final]
    base = {t: 0 for t in windows}
    held = {t: 0 for t in windows}       # rows [base, held) are in the window
    cap = {t: 0 for t in windows}
    for j, c in enumerate(calls):
        t = ops[c.op].output
        if t in base:
            later = [r[0] for cc in calls[j:] for name, r in zip(ops[cc.op].inputs, cc.reads) if name == t]
            keep_from = min(later + [c.rows[0]])
            if keep_from > base[t]:
                stage.steps.append(Move(t, keep_from - base[t], held[t] - keep_from))
                stage.bases.append(dict(base))
                base[t] = keep_from
            held[t] = c.rows[1]
            cap[t] = max(cap[t], c.rows[1] - base[t])
        stage.steps.append(c)
        stage.bases.append(dict(base))
    stage.windows = cap
    stage.scratch_bytes = max(scratch_bytes(graph, ops[k]) for k in stage.ops)
    _share_output_with_input(graph, stage, calls)
    stage.report = stage.describe(graph)
    return stage


def _share_output_with_input(graph: Graph, stage: Stage, calls: list[Call]) -> None:
    """Write the stage's output over the rows of its input that nothing reads any more, when that input
    is read by nobody after the stage (and is not a view of anything, nor the model output)."""
    ops = graph.ops
    final = ops[stage.last].output
    outside = [t for k in stage.ops for t in ops[k].inputs if t not in stage.windows]
    for x in dict.fromkeys(outside):
        if x in graph.outputs or any(x in op.inputs for op in ops[stage.last + 1:]):
            continue
        if any(op.output == x and op.kind not in ROW_BAND_OPS for op in ops) or \
                any(x in op.inputs and op.kind not in ROW_BAND_OPS for op in ops):
            continue                         # a view or a reader that is not a band kernel: keep it whole
        rx, ry = row_bytes(graph, x), row_bytes(graph, final)
        gap = 0
        for j, c in enumerate(calls):
            if c.op != stage.last:
                continue
            later = [r[0] for cc in calls[j:] for name, r in zip(ops[cc.op].inputs, cc.reads) if name == x]
            if later:
                gap = max(gap, c.rows[1] * ry - min(later) * rx)
        gap = (gap + ALIGN - 1) // ALIGN * ALIGN
        nx, ny = graph.tensors[x].nbytes, graph.tensors[final].nbytes
        if max(ny, gap + nx) < nx + ny:
            stage.input, stage.gap = x, gap
            return


def extra_cost(graph: Graph, stage: Stage) -> int:
    """Estimated instructions the stage adds over whole-layer execution: the extra kernel calls and the
    bytes moved."""
    moved = sum(s.keep * row_bytes(graph, s.tensor) for s in stage.steps if isinstance(s, Move))
    if stage.input is not None:        # the output's move to its own buffer, when placed elsewhere
        moved += graph.tensors[graph.ops[stage.last].output].nbytes // 2
    return CALL_COST * (stage.calls() - len(stage.ops)) + moved


def window_bytes(graph: Graph, stage: Stage, tensor: str) -> int:
    return stage.windows[tensor] * row_bytes(graph, tensor)
