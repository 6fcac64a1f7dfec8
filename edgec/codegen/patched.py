"""The C of a patch-based stage (edgec/plan/patching.py): its kernel calls band by band and its window
moves, unrolled, at the offsets edgec/plan/arena_run.py runs them at (the two share `stage_pointers`,
`move_offsets` and `stage_output_move`). Every band with the same shape shares one params struct."""
from __future__ import annotations

from edgec.ir import Graph
from edgec.ops.opdef import CallSite
from edgec.ops.select import lowering_of
from edgec.plan.arena_run import move_offsets, stage_output_move, stage_pointers
from edgec.plan.patching import Call, band_op
from edgec.plan.planner import Plan


def _memmove(dst: int, src: int, n: int) -> str:
    return f"memmove(arena.bytes + {dst}, arena.bytes + {src}, {n}u);"


def stage_block(graph: Graph, plan: Plan, stage, arrays: dict, bands: list) -> str:
    """The C statements of the stage; appends the band params structs it needs to `bands` (dicts with
    index, rows, struct, cname, params)."""
    known: dict = {}
    for b in bands:
        known[(b["index"], b["struct"], tuple(b["params"].items()))] = b["cname"]
    lines = [f"/* patched stage: ops {stage.first}-{stage.last}, {stage.rows} output row(s) a band, "
             f"{stage.calls()} calls */"]
    for j, step in enumerate(stage.steps):
        if not isinstance(step, Call):
            dst, src, n = move_offsets(graph, plan, step)
            lines.append(_memmove(dst, src, n) + f"   /* drop {step.drop} row(s) of a window */")
            continue
        i = step.op
        band = band_op(graph, graph.ops[i], *step.rows)
        low = lowering_of(graph, band)
        struct, params = low.struct, low.params
        key = (i, struct, tuple(params.items()))
        if key not in known:
            known[key] = f"op{i}_band{sum(b['index'] == i for b in bands)}_params"
            bands.append({"index": i, "rows": step.rows, "struct": struct, "cname": known[key], "params": params})
        ins, out = stage_pointers(graph, plan, stage, j, step)
        site = CallSite(prefix=f"op{i}", inputs=[f"arena.bytes + {o}" for o in ins], output=f"arena.bytes + {out}",
                        arrays=arrays[i], scratch=None if i not in plan.scratch else f"arena.bytes + {plan.scratch[i]}")
        call = low.kernel.call(band, low, site).replace(f"&op{i}_params", f"&{known[key]}")
        lines.append(call)
    move = stage_output_move(graph, plan, stage)
    if move:
        lines.append(_memmove(*move) + "   /* the stage's output to its own buffer */")
    return "\n    ".join(lines)
