"""The lower stage, an explicit step after quantization and before planning: every op of the quantized graph put
on the kernel that will run it (edgec/ops/select.py decides: the reference, 16x8 or int4-weight kernel, the fast
kernel where one takes the op, its speed variant or Helium kernel), as a new graph whose ops carry their
`Lowering` (edgec/ops/kernel.py: the kernel, its params and packed constant arrays, its scratch; what the
generated code will contain and the planner reserves). The speed variants' summary and code estimate are read
back from those lowerings.

Only `edgec build` lowers onto the Helium kernels (it compiles with the board's flags); `edgec export` keeps the
DSP/portable kernels, as an exported library may be compiled without Helium flags (the _mve kernels would then
be missing).
"""
from __future__ import annotations

import dataclasses

from edgec.ir import Graph
from edgec.ops import select
from edgec.ops.kernel import VARIANT

Chooser = select.Chooser
MVE_FPU = "fp+mve"


def has_mve(board) -> bool:
    """Does the board's core run Helium (its profile's cpu/fpu fields)?"""
    return board is not None and board.fpu == MVE_FPU


def has_arm_dsp(board) -> bool:
    """Does the board's core have the Arm DSP extension, the fast kernels' DSP path (its profile's dsp field on an
    Arm core: other cores' SIMD extensions run the portable path)?"""
    return board is not None and board.dsp and board.arch == "arm"


def flash_byte_cycles(board) -> float:
    """Cycles one byte of constants read from flash costs on the board's part beyond a zero-wait-state read: its
    first memory timing's ([[cycle_model]]) miss cycles per flash line over the line's bytes (a layer's weights
    stream through data caches of a few hundred bytes: every line misses). 0 where the profile gives none (the
    emulated boards: zero-wait-state memory) or the core is not a Cortex-M4 with the Arm DSP extension, the core
    the kernels' cost estimates were fitted on (select.memory_chooser)."""
    if board is None or board.cpu != "cortex-m4" or not has_arm_dsp(board) or not board.cycle_models:
        return 0.0
    timing = board.cycle_models[0]
    return timing.miss_cycles / timing.line_bytes


def lower_graph(graph: Graph, optimize: str = "speed", choose: Chooser | None = None, mve: bool = False,
                dsp: bool = False) -> Graph:
    """The graph with every op on the kernel it will run (`op.lowering`, None for views): optimize "speed" puts
    each op on its fastest variant (`choose(op, generic lowering)`: the variant's name, e.g. from a tuning log, or
    None for the default), "size" keeps the generic fast kernels; mve (the board's core has Helium): the Helium
    kernel where there is one; dsp (it has the Arm DSP extension): the speed variants that need it too."""
    options = select.Options(optimize=optimize, helium=mve, dsp=dsp, choose=choose)
    return graph.replace_ops(dataclasses.replace(op, lowering=select.select(op, options, select.dtypes(graph, op)))
                             for op in graph.ops)


def summary(ops) -> dict:
    """What the speed variants cost: how many ops run on each variant and the flash their repacked constants
    add over the generic kernels' (the `--optimize size` build)."""
    ops = list(ops)
    chosen = [op.lowering for op in ops if op.lowering is not None and op.lowering.variant is not None]
    counts: dict[str, int] = {}
    for low in chosen:
        counts[low.variant] = counts.get(low.variant, 0) + 1
    return {"variants": counts, "extra_constant_bytes": sum(low.extra_bytes for low in chosen),
            "layers": {op.name: {"variant": op.lowering.variant, "variants": list(op.lowering.variants),
                                 "signature": op.lowering.signature}
                       for op in ops if op.lowering is not None and len(op.lowering.variants) > 1}}


def variant_code_bytes(ops) -> int:
    """The code the speed variants the ops run on add, each variant counted once (the fit check)."""
    kernels = {op.lowering.kernel for op in ops if op.lowering is not None and op.lowering.kernel.role == VARIANT}
    shared = sum(k.shares_code[1] for k in kernels if k.shares_code is not None and k.shares_code[0] in kernels)
    return sum(k.code_bytes or 0 for k in kernels) - shared

