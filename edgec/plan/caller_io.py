"""`--io-buffers caller`: the model's inputs and outputs in buffers the caller owns, not in the arena.

By default the inputs and outputs are buffers of the arena like any activation, so an output may sit on bytes an
input used (edgec/codegen/iolife.py says where, per model). With caller-owned buffers (ST Edge AI's
--no-inputs-allocation / --no-outputs-allocation), the planner places only the intermediate tensors and the
kernels' scratch: the arena shrinks by what the inputs and outputs took there, the kernels read the caller's
input and write the caller's output, and writing the next input cannot touch the last output.

`replan(graph, plan)` re-plans a scheduled, lowered graph so: every input and output (with its views:
reshapes of it share its bytes) becomes a slot, inputs first then outputs in the model's order
(`Plan.caller_io`: tensor -> slot). No kernel writes into an input's slot: an op that would run in place over
an input (or over an output another op still reads) is planned out of place. The slots get offsets past the end
of the arena, in the plan's logical address space only (they are never arena bytes; the generated C points
their tensors at the caller's pointers), so every check on offsets holds as it does for the arena's buffers.
"""
from __future__ import annotations

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.plan import planner

MODES = ("arena", "caller")


def slots(graph: Graph) -> list[str]:
    """The ports in slot order: inputs, then outputs, in the model's order."""
    return list(graph.inputs) + list(graph.outputs)


def replan(graph: Graph, plan: planner.Plan, exact: bool = True) -> planner.Plan:
    """The plan of `graph` (as scheduled and lowered for `plan`) with its inputs and outputs outside the arena."""
    if plan.stages or plan.pieces or plan.guard_bytes:
        what = ("patch-based stages (--ram-budget)" if plan.stages else
                "an arena over several RAM regions" if plan.pieces else "the arena guard (--arena-guard)")
        raise EdgecError(f"--io-buffers caller does not go with {what}: the inputs and outputs must be whole "
                         "buffers of one arena there; build with --io-buffers arena")
    groups = planner.alias_groups(graph)
    root_slot: dict[str, int] = {}
    for k, t in enumerate(slots(graph)):
        root = groups.find(t)
        if root in root_slot:
            other = slots(graph)[root_slot[root]]
            raise EdgecError(f"--io-buffers caller: '{t}' and '{other}' are one tensor (a view of the other); "
                             "the caller's buffers must be separate: build with --io-buffers arena")
        root_slot[root] = k
    best = None
    for in_place in (True, False):
        bufs = planner.buffers(graph, in_place)
        io = [b for b in bufs if any(groups.find(t) in root_slot for t in b.tensors)]
        if in_place and any(len({groups.find(t) for t in b.tensors}) > 1 for b in io):
            continue        # a kernel would write over an input (or an output) in place: plan it out of place
        rest = [b for b in bufs if b not in io]
        arena, method, optimal = planner.place(rest, exact)
        arena = max(arena, planner.ALIGN)     # C has no empty array: a model with nothing between its ports
        best = (bufs, io, rest, arena, method + ("" if in_place else ", no in-place"), optimal)
        break
    bufs, io, rest, arena, method, optimal = best
    offsets = {name: b.offset + b.inner.get(name, 0) for b in rest for name in b.tensors}
    caller = {}
    end = arena
    for b in sorted(io, key=lambda b: min(root_slot[groups.find(t)] for t in b.tensors)):
        b.offset = end          # past the arena: the logical address of the caller's buffer, never arena bytes
        end += planner._align(b.size)
        for name in b.tensors:
            offsets[name], caller[name] = b.offset, root_slot[groups.find(name)]
    scratch = {b.scratch_op: b.offset for b in rest if b.scratch_op is not None}
    return planner.Plan(arena_bytes=arena, offsets=offsets, buffers=sorted(rest, key=lambda b: (b.first, b.offset)),
                        scratch=scratch, state={b.state_op: b.offset for b in rest if b.state_op is not None},
                        lower_bound_bytes=planner.peak_live_bytes(rest), method=method,
                        optimal=optimal, planning_s=plan.planning_s, ram_choice=plan.ram_choice, caller_io=caller)
