"""The NumPy reference run the way the generated C runs: every kernel call of the plan, in order, reading
and writing one int8 arena at the planned offsets (patch-based stages band by band, with their window
moves). Each call is the op's integer twin (edgec/ops/), so a plan whose buffers clobber each other, whose
windows drop a row still needed or whose stage output lands on input rows still to be read gives a
different output than the whole-layer reference (edgec/quant/reference.py). The generated C makes the same
calls on the same offsets (edgec/codegen/cmodel.py), and each C kernel matches its twin bit for bit.
"""
from __future__ import annotations

import numpy as np

from edgec import ports
from edgec.ir import DTYPES, Graph
from edgec.ops.registry import ALIAS_OPS
from edgec.plan.patching import Call, Move, band_op, row_bytes
from edgec.plan.planner import Plan
from edgec.quant.reference import run_op


class Arena:
    def __init__(self, size: int, seed: int = 0):
        # garbage, not zeros: a read of bytes nobody wrote shows up
        self.bytes = np.random.default_rng(seed).integers(-128, 128, size, dtype=np.int8)

    def read(self, offset: int, shape, dtype: str = "int8") -> np.ndarray:
        n = int(np.prod(shape)) * np.dtype(DTYPES[dtype]).itemsize
        return self.bytes[offset:offset + n].copy().view(DTYPES[dtype]).reshape(shape)

    def write(self, offset: int, value: np.ndarray) -> None:
        raw = np.ascontiguousarray(value).reshape(-1).view(np.int8)
        self.bytes[offset:offset + raw.size] = raw


def stage_pointers(graph: Graph, plan: Plan, stage, j: int, call: Call) -> tuple[list[int], int]:
    """Arena offsets of call `j`'s inputs (at the first row it reads) and output (at its first row)."""
    ops, base = graph.ops, stage.bases[j]
    op = ops[call.op]

    final = ops[stage.last].output

    def at(tensor: str, row: int) -> int:
        start = plan.stage_outputs.get(stage.first, plan.offsets[final]) if tensor == final else plan.offsets[tensor]
        return start + (row - base.get(tensor, 0)) * row_bytes(graph, tensor)
    return [at(t, lo) for t, (lo, _) in zip(op.inputs, call.reads)], at(op.output, call.rows[0])


def move_offsets(graph: Graph, plan: Plan, move: Move) -> tuple[int, int, int]:
    """(destination, source, bytes) of a window move."""
    rb = row_bytes(graph, move.tensor)
    start = plan.offsets[move.tensor]
    return start, start + move.drop * rb, move.keep * rb


def run(graph: Graph, plan: Plan, x_q: np.ndarray) -> np.ndarray:
    """One int8 input (the model input's ONNX layout; several: packed) through the plan's calls; returns the
    output (several: packed)."""
    arena = Arena(plan.arena_bytes)
    for t, x in ports.feed(graph, x_q, np.int8).items():
        arena.write(plan.offsets[t], x)
    starts = {st.first: st for st in plan.stages}
    skip = {k for st in plan.stages for k in st.ops}
    for i, op in enumerate(graph.ops):
        if i in starts:
            _run_stage(graph, plan, starts[i], arena)
        if i in skip or op.kind in ALIAS_OPS:
            continue
        ins = [arena.read(plan.offsets[t], graph.tensors[t].shape, graph.tensors[t].dtype) for t in op.inputs]
        out = graph.tensors[op.output]
        arena.write(plan.offsets[op.output], run_op(op, ins, out.shape, out.dtype))
    return ports.result(graph, {t: arena.read(plan.offsets[t], graph.tensors[t].shape, graph.tensors[t].dtype)
                                for t in graph.outputs})


def stage_output_move(graph: Graph, plan: Plan, stage) -> tuple[int, int, int] | None:
    """(destination, source, bytes) of the move of a stage's output to its own buffer, or None."""
    final = graph.ops[stage.last].output
    src = plan.stage_outputs.get(stage.first)
    if src is None or src == plan.offsets[final]:
        return None
    return plan.offsets[final], src, graph.tensors[final].nbytes


def _run_stage(graph: Graph, plan: Plan, stage, arena: Arena) -> None:
    _run_bands(graph, plan, stage, arena)
    move = stage_output_move(graph, plan, stage)
    if move:
        dst, src, n = move
        arena.bytes[dst:dst + n] = arena.bytes[src:src + n].copy()


def _run_bands(graph: Graph, plan: Plan, stage, arena: Arena) -> None:
    for j, step in enumerate(stage.steps):
        if isinstance(step, Move):
            dst, src, n = move_offsets(graph, plan, step)
            arena.bytes[dst:dst + n] = arena.bytes[src:src + n].copy()
            continue
        op = graph.ops[step.op]
        ins_at, out_at = stage_pointers(graph, plan, stage, j, step)
        ins = []
        for t, (lo, hi), at in zip(op.inputs, step.reads, ins_at):
            _, _, w, c = graph.tensors[t].shape
            ins.append(arena.read(at, (1, hi - lo, w, c)))
        _, _, w, c = graph.tensors[op.output].shape
        o0, o1 = step.rows
        arena.write(out_at, run_op(band_op(graph, op, o0, o1), ins, (1, o1 - o0, w, c)))
