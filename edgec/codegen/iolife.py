"""Where a model's inputs and outputs live in its arena and for how long, as the generated header states it.

Inputs and outputs are buffers of the memory plan like any activation: the planner may put an output on bytes
an input used (the input is dead by then), and may reuse an input's bytes for later layers. A firmware that
writes the next input while it still reads the previous output must know, so the header of every model says,
per input and output: its bytes in the arena, which outputs each input overlaps (writing that input destroys
those outputs) and whether invoke writes over the input. A model built with `--io-buffers caller`
(edgec/plan/caller_io.py) has them in the caller's buffers, and its header says that instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from edgec import ports
from edgec.ir import Graph
from edgec.plan.planner import Plan


@dataclass(frozen=True)
class Place:
    c: str          # the C name of its accessor: input, output, input_<port>, output_<port>
    start: int      # arena offset (logical: the arena may be in pieces)
    end: int

    def overlaps(self, other: "Place") -> bool:
        return self.start < other.end and other.start < self.end


def _places(graph: Graph, plan: Plan, kind: str, tensors: list[str], names: list[str]) -> list[Place]:
    return [Place(f"{kind}_{n}" if len(tensors) > 1 else kind, plan.offsets[t],
                  plan.offsets[t] + graph.tensors[t].nbytes) for t, n in zip(tensors, names)]


def _overwritten_by_invoke(plan: Plan, tensor: str, place: Place) -> bool:
    """Whether any kernel writes into the input's bytes: another buffer on them, or an in-place output in its
    own buffer (conservative: any tensor beside it in the buffer)."""
    for b in plan.buffers:
        mine = tensor in b.tensors
        if mine and len(b.tensors) > 1:
            return True
        if not mine and place.overlaps(Place("", b.offset, b.offset + b.size)):
            return True
    return False


def lifetime(graph: Graph, plan: Plan, name: str) -> list[str]:
    """The header's lines (without the comment's ' * ') on the inputs' and outputs' places and lifetimes."""
    if plan.caller_io:      # --io-buffers caller (edgec/plan/caller_io.py)
        return ["Inputs and outputs are in buffers the caller owns (--io-buffers caller), not in the arena: the",
                "kernels read the input buffers and never write them, and only invoke writes the output buffers;",
                "writing the next input leaves the previous output intact (see the context API below)."]
    multi = ports.multi(graph)
    ins = _places(graph, plan, "input", graph.inputs, [p.c_name for p in ports.inputs(graph)] if multi else [""])
    outs = _places(graph, plan, "output", graph.outputs, [p.c_name for p in ports.outputs(graph)] if multi else [""])
    lines = ["Inputs and outputs live in the arena (" + "; ".join(
        f"{name}_{p.c}(): bytes [{p.start}, {p.end})" for p in ins + outs) + "):"]
    for p, t in zip(ins, graph.inputs):
        hit = [o for o in outs if p.overlaps(o)]
        if hit:
            lines.append(f"- {name}_{p.c}() OVERLAPS " + ", ".join(f"{name}_{o.c}()" for o in hit) + ": writing the next "
                         "input destroys the previous output; read or copy the output first.")
        else:
            lines.append(f"- {name}_{p.c}() overlaps no output: an output stays valid while the next input is written, "
                         "until the next invoke.")
        lines.append(f"- invoke {'may overwrite' if _overwritten_by_invoke(plan, t, p) else 'does not write into'} "
                     f"{name}_{p.c}(): " + ("write the whole input again before every invoke."
                                            if _overwritten_by_invoke(plan, t, p) else "it keeps its values."))
    return lines
