"""The lower stage, an explicit step after quantization and before planning: every op of the quantized graph put
on the kernel that will run it (edgec/ops/select.py decides: the reference, 16x8 or int4-weight kernel, the fast
kernel where one takes the op, its speed variant or Helium kernel), as a new graph whose ops carry their
`Lowering` (edgec/ops/kernel.py: the kernel, its params and packed constant arrays, its scratch; what the
generated code will contain and the planner reserves). The speed variants' summary and code estimate are read
back from those lowerings.

Only `edgec build` lowers onto the Helium kernels (it compiles with the board's flags); `edgec export` keeps the
DSP/portable kernels, as an exported library may be compiled without Helium flags (the _mve kernels would then
be missing).

A QDQ/QONNX file's own 4-bit weights (attrs['file_weight_bits'] 4: quantized packed two per byte, `weights4`) run
on the int8 kernels under `--optimize speed` (`speed_weights`): the file's integers in [-8, 7] are int8 weights with
the same scales, so the numbers and the reference do not change, and the speed variants run as on any int8 layer
(the `_s4` kernels have none). Under "size" they stay packed; a speed build whose weights do not fit the board's
flash falls back to "size" (edgec/pipeline.py plan_to_fit), packed again. `--weights int4` layers stay packed.
"""
from __future__ import annotations

import dataclasses

from edgec.fixedpoint.scheme import unpack_int4
from edgec.ir import Graph, Op
from edgec.ops.conv import dead_channels
from edgec.ops import select
from edgec.ops.kernel import VARIANT, constant_bytes

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
    graph = dead_channels.prune(graph)    # the same integers out, without the MACs of all-zero channels
    return graph.replace_ops(_lowered(op, options, select.dtypes(graph, op)) for op in graph.ops)


def speed_weights(op: Op) -> Op:
    """A layer with a file's 4-bit weights packed (`weights4`, attrs['file_weight_bits'] 4) as the same integers in
    int8 `weights` (the array scheme.weighted made before packing: the float weights' shape); any other op as it
    is."""
    if op.attrs.get("file_weight_bits") != 4 or "weights4" not in op.arrays:
        return op
    shape = op.attrs["weights"].shape
    arrays = {k: v for k, v in op.arrays.items() if k != "weights4"}
    weights = unpack_int4(op.arrays["weights4"], int(op.attrs["weights"].size)).reshape(shape)
    return dataclasses.replace(op, arrays={**arrays, "weights": weights}, lowering=None)


def _lowered(op: Op, options: select.Options, dtypes) -> Op:
    """The op with its lowering; under "speed" a file's packed 4-bit weights as int8 where the int8 kernels run
    faster (a fast kernel takes the unpacked layer), the flash they add over the packed build counted in its
    `extra_bytes` (the build log's constants of the speed kernels)."""
    wide = speed_weights(op) if options.optimize == "speed" else op
    generic = select.fast(wide, dtypes) if wide is not op else None
    if generic is None:
        return dataclasses.replace(op, lowering=select.select(op, options, dtypes))
    low = select.select(wide, options, dtypes)
    packed = select.select(op, dataclasses.replace(options, optimize="size"), dtypes)
    return dataclasses.replace(wide, lowering=low.replace(
        extra_bytes=low.extra_bytes + constant_bytes(generic) - constant_bytes(packed)))


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
    """The code the speed variants the ops run on add, each variant counted once, with the entries its calls name
    beyond those its code_bytes holds (Kernel.entry_code; the fit check)."""
    lowered = [op.lowering for op in ops if op.lowering is not None and op.lowering.kernel.role == VARIANT]
    kernels = {low.kernel for low in lowered}
    shared = sum(k.shares_code[1] for k in kernels if k.shares_code is not None and k.shares_code[0] in kernels)
    entries = {(low.kernel, low.kernel.entry_code[0](low)) for low in lowered if low.kernel.entry_code is not None}
    more = sum(k.entry_code[2] * max(0, sum(1 for kk, _ in entries if kk is k) - k.entry_code[1]) for k in kernels
               if k.entry_code is not None)
    return sum(k.code_bytes or 0 for k in kernels) - shared + more

