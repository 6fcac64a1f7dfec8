"""Reused weights staged from flash into RAM, per layer: on a part whose constants sit in flash with wait states
(its profile's first [[cycle_model]]), a layer whose kernel re-reads its packed weights and requantization records
on every pass over the pixels (`Kernel.reads`, declared with the kernel's family) gets them copied into its own
scratch before the call, flash read once and in order, and the call reads the copy (edgec/codegen/cmodel.py writes
the copy and the pointer; the kernel's code does not change, so neither do its numbers). The copy lives in the
layer's scratch buffer (`Lowering.staged`, after the kernel's own scratch): the static arena plan places it, for
the layer's lifetime only, so the arena grows by at most the largest staged layer's arrays.

The decision (`staged_keys`), per array, with the part's miss cycles per flash byte m (miss cycles over line bytes:
every line of a layer's weights misses a data cache of a few hundred bytes) and COPY_BYTE_CYCLES c (the copy's own
cycles a byte at zero wait states: edgec_stage_copy's LDM/STM of 16 bytes):
    stage when (bytes read by the call - its size) x m  >  size x (m + c)
i.e. the re-reads' misses cost more than the copy reads once plus its stores. Not staged: a layer whose arrays
(those its kernel declares) fit the part's data cache together (the re-reads hit it), an emulated board (zero
wait states: its builds do not change), `--weights-in-ram` (already in RAM) and `--ram-budget` builds (never past
the budget); where the staged plan would not fit the board's RAM, the layers that copy the most give it up first,
until it fits (edgec/pipeline.py schedule_and_plan)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from edgec.ir import Graph
from edgec.ops.kernel import Lowering

# edgec_stage_copy (runtime_c/edgec_runtime.c) at zero wait states on the Cortex-M4: LDM and STM of 4 words (5 + 5
# cycles) and the loop's 3 a 16-byte step, rounded up
COPY_BYTE_CYCLES = 1.0
STAGE_ALIGN = 8            # each staged array's offset in the scratch (the kernels read it by LDRD and LDM)


@dataclass(frozen=True)
class Staging:
    """A part's flash timing as the staging decision weighs it."""

    byte_cycles: float                 # miss cycles per flash byte (miss cycles / line bytes)
    cache_bytes: int = 0               # the part's data cache over flash (0: none)
    copy_cycles: float = COPY_BYTE_CYCLES


def for_board(board) -> Staging | None:
    """The staging timing of a board's part (its first [[cycle_model]]: the memory the firmware runs with), or None:
    no flash timing (emulated boards, zero wait states) or no miss cost."""
    if board is None or board.emulated or not board.cycle_models:
        return None
    timing = board.cycle_models[0]
    if timing.miss_cycles <= 0 or timing.line_bytes <= 0:
        return None
    return Staging(timing.miss_cycles / timing.line_bytes, timing.dcache_bytes or 0)


def staged_keys(low: Lowering, staging: Staging) -> list[str]:
    """The arrays of a lowering worth copying into RAM before its call (the module's rule), in its kernel's
    declared order; [] where its kernel declares no re-reads."""
    if low.kernel.reads is None or low.staged:
        return []
    reads = low.kernel.reads(low)
    sizes = {k: int(low.arrays[k].nbytes) for k in reads}
    if sum(sizes.values()) <= staging.cache_bytes:
        return []
    m = staging.byte_cycles
    return [k for k, r in reads.items() if (r - sizes[k]) * m > sizes[k] * (m + staging.copy_cycles)]


def staged(low: Lowering, staging: Staging) -> Lowering:
    """The lowering with its staged arrays (`staged_keys`) after its kernel's own scratch, in `Lowering.staged`, and
    its scratch grown by them; `low` where none is worth it."""
    keys = staged_keys(low, staging)
    if not keys:
        return low
    offset, placed = -(-low.scratch_bytes // STAGE_ALIGN) * STAGE_ALIGN, []
    for k in keys:
        size = int(low.arrays[k].nbytes)
        placed.append((k, offset, size))
        offset += -(-size // STAGE_ALIGN) * STAGE_ALIGN
    return low.replace(staged=tuple(placed), scratch_bytes=offset)


def stage(graph: Graph, staging: Staging) -> Graph:
    """The lowered graph with every op whose arrays are worth staging (`staged`) staged."""
    return graph.replace_ops(op if op.lowering is None else dataclasses.replace(op, lowering=staged(op.lowering, staging))
                             for op in graph.ops)


def unstage_largest(graph: Graph, unstaged: Graph) -> Graph:
    """`graph` with its op that copies the most back on its lowering in `unstaged` (the same graph before `stage`):
    what gives up staging first where the arena would not fit the board's RAM."""
    sizes = [sum(n for _, _, n in op.lowering.staged) if op.lowering is not None else 0 for op in graph.ops]
    k = sizes.index(max(sizes))
    return graph.replace_ops(unstaged.ops[k] if i == k else op for i, op in enumerate(graph.ops))


def staged_bytes(graph: Graph) -> dict:
    """What staging costs and covers: the layers staged, the bytes they copy per inference, and the largest one
    layer copies (what the arena may grow by)."""
    per_op = [sum(n for _, _, n in op.lowering.staged) for op in graph.ops
              if op.lowering is not None and op.lowering.staged]
    return {"layers": len(per_op), "bytes": sum(per_op), "largest_bytes": max(per_op, default=0)}
