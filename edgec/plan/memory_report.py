"""The memory plan for people: a picture of the arena over time and a summary of where the bytes go.

`memory.svg` (rendered from templates/memory.svg.j2, no plotting library): one rectangle per buffer,
op index across, arena offset up, the peak marked; an arena in several RAM regions shows each region's piece. `summary()` names the peak op and the biggest tensors
and layers; the fit check quotes it when a model does not fit.
"""
from __future__ import annotations

from edgec.ir import Graph
from edgec.ops.registry import ALIAS_OPS
from edgec.templating import environment
from edgec.plan.planner import Plan

SVG = "memory.svg"
WIDTH, HEIGHT = 960, 460
LEFT, RIGHT, TOP, BOTTOM = 78, 24, 56, 120
COLORS = {"input": "#4e79a7", "output": "#59a14f", "tensor": "#f28e2b", "scratch": "#b07aa1"}


def _kib(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n / 1024:.1f} KiB"


def summary(graph: Graph, plan: Plan, top: int = 3) -> dict:
    """The peak (op, bytes live) and the biggest tensors and layers (bytes live while the layer runs)."""
    n = len(graph.ops)
    live = plan.live_bytes(n) if n else [0]
    peak_op = max(range(len(live)), key=lambda t: live[t])
    layers = sorted(((live[i], i) for i, op in enumerate(graph.ops) if op.kind not in ALIAS_OPS), reverse=True)
    tensors = sorted(((b.size, b.label) for b in plan.buffers), reverse=True)
    return {
        "peak_op": peak_op, "peak_bytes": live[peak_op],
        "peak_op_name": graph.ops[peak_op].name if n else "", "peak_op_kind": graph.ops[peak_op].kind if n else "",
        "biggest_tensors": [{"tensor": name, "bytes": size} for size, name in tensors[:top]],
        "biggest_layers": [{"op": i, "kind": graph.ops[i].kind, "name": graph.ops[i].name, "live_bytes": b}
                           for b, i in layers[:top]],
    }


def _ticks(limit: int, count: int = 5) -> list[int]:
    """Round tick values (bytes, or whole KiB for bigger arenas) from 0 to about `limit`."""
    unit = 1024 if limit >= 4096 else 1
    raw = max(limit / unit / count, 1)
    step = 1
    while step * 10 <= raw:
        step *= 10
    step = next(s * step for s in (1, 2, 5, 10) if s * step >= raw)
    return list(range(0, limit + 1, step * unit))


def render_svg(graph: Graph, plan: Plan, title: str = "") -> str:
    """The arena over time as a stand-alone SVG document."""
    n = len(graph.ops)
    cols = n + 2                                 # time -1 (the input, before the first op) .. n (the output)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    arena = max(plan.arena_bytes, 1)

    def x(t: float) -> float:
        return round(LEFT + (t + 1) * pw / cols, 2)

    def y(offset: float) -> float:
        return round(TOP + ph - offset * ph / arena, 2)

    rects = []
    for b in plan.buffers:
        kind = ("scratch" if b.scratch_op is not None else "input" if set(graph.inputs) & set(b.tensors)
                else "output" if set(graph.outputs) & set(b.tensors) else "tensor")
        names = ", ".join(b.tensors) if b.tensors else b.label
        rects.append({"x": x(b.first), "y": y(b.offset + b.size), "w": round(x(b.last + 1) - x(b.first), 2),
                      "h": round(max(y(b.offset) - y(b.offset + b.size), 0.5), 2), "color": COLORS[kind],
                      "tip": f"{names}: {b.size:,} bytes at offset {b.offset:,}, ops {b.first}..{b.last}"})
    info = summary(graph, plan)
    live = plan.live_bytes(n)
    ops = [{"x": round((x(i) + x(i + 1)) / 2, 2), "label": f"{i} {op.kind}", "tip": op.name,
            "live": live[i]} for i, op in enumerate(graph.ops)]
    every = max(1, (n + 39) // 40)               # at most ~40 op labels
    ctx = dict(width=WIDTH, height=HEIGHT, left=LEFT, top=TOP, pw=pw, ph=ph, bottom=TOP + ph,
               title=title or graph.name, rects=rects, ops=ops, every=every, colors=COLORS,
               arena_bytes=plan.arena_bytes, arena_label=_kib(plan.arena_bytes),
               bound_label=_kib(plan.lower_bound_bytes), method=plan.method, optimal=plan.optimal,
               yticks=[{"y": y(v), "label": _kib(v)} for v in _ticks(plan.arena_bytes)],
               regions=[{"y": y(p.base), "top": y(p.base + p.bytes), "label": f"{p.name}: {_kib(p.bytes)}"
                         f"{' (' + p.section + ')' if p.section else ''}"} for p in plan.pieces],
               peak={"x0": x(info["peak_op"]), "x1": x(info["peak_op"] + 1), "y": y(info["peak_bytes"]),
                     "op": info["peak_op"], "kind": info["peak_op_kind"], "bytes": info["peak_bytes"],
                     "label": _kib(info["peak_bytes"])} if n else None)
    return environment().get_template("memory.svg.j2").render(**ctx)
