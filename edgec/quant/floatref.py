"""A float interpreter of the canonical graph (channels-last physical layouts, before quantization).

It runs exactly what edgec will compute (layouts, folded BatchNorms, fused activations, tables'
functions, index maps) in float64, from the float attributes canonicalize left (`op.attrs`), each op by its
registry entry's float run (edgec/ops/). Uses:
the conformance runner checks canonicalization against ONNX's own outputs; the sensitivity report
compares it tensor by tensor with the int8 reference; bias correction measures layers on float
inputs; and the ranges of edgec's own intermediate tensors (sources starting with "edgec:", made by
decomposed operators, which onnxruntime never sees) are calibrated with it.
"""
from __future__ import annotations

import numpy as np

from edgec import ports
from edgec.errors import EdgecError
from edgec.ir import Graph, Op
from edgec.ops.registry import FLOAT_KINDS, REGISTRY


def supported(graph: Graph) -> list[str]:
    """Op kinds of `graph` this interpreter cannot run (empty when it runs the whole graph)."""
    return sorted({op.kind for op in graph.ops if op.kind not in FLOAT_KINDS})


def run_op(op: Op, inputs: list[np.ndarray]) -> np.ndarray:
    """One op in float (its registry entry's float run)."""
    return REGISTRY[op.kind].run_float(op, inputs)


def run(graph: Graph, x: np.ndarray, override: dict | None = None, env: dict | None = None,
        start: int = 0) -> dict[str, np.ndarray]:
    """Every canonical tensor, in float, for one input sample (the model input's ONNX layout).

    `override` {op index: fn(op, inputs) -> output} replaces ops (e.g. by their int8 emulation): its NaNs and
    infinities flow on (a LOG of a quantized 0 is -inf, as in float: the caller judges the outputs); without it a
    NaN computed from inputs without one is an EdgecError naming the op and its tensor, never a number downstream.
    `env` + `start` reuse the tensors of an earlier run and recompute only ops[start:]."""
    env = dict(env) if env is not None else {}
    env.update(ports.feed(graph, x, np.float64))
    for i, op in enumerate(graph.ops[start:], start):
        ins = [env[t] for t in op.inputs]
        y = override[i](op, ins) if override and i in override else run_op(op, ins)
        env[op.output] = y = np.asarray(y, np.float64).reshape(graph.tensors[op.output].shape)
        if not override and np.isnan(y).any() and not any(np.isnan(v).any() for v in ins):
            raise _nan(graph, op)
    return env


def _nan(graph: Graph, op: Op) -> EdgecError:
    """The float reference of `op` computed NaN from inputs without one: a float twin that differs from the
    model's float semantics (or a model computing NaN on these samples), named."""
    src = graph.tensors[op.output].source
    return EdgecError(f"edgec's float reference computes NaN in op '{op.name}' ({op.kind}), tensor '{src}', from "
                      "inputs without NaN: its float twin differs from the model's float semantics (or the model "
                      "computes NaN on these samples); report it with the model")


def output(graph: Graph, x: np.ndarray) -> np.ndarray:
    """The float output for one input, in the model output's ONNX layout."""
    return ports.result(graph, run(graph, x))


def ranges(graph: Graph, xs: np.ndarray, sources) -> dict[str, tuple[float, float]]:
    """(min, max) of the tensors with the given sources over samples xs (edgec's own tensors)."""
    want = set(sources)
    out: dict[str, list[float]] = {}
    for x in xs:
        env = run(graph, x)
        for name, t in graph.tensors.items():
            if t.source in want:
                v = env[name]
                lo, hi = float(np.min(v)), float(np.max(v))
                cur = out.setdefault(t.source, [lo, hi])
                cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
    return {k: (v[0], v[1]) for k, v in out.items()}


def graph_ranges(model, graph: Graph, xs: np.ndarray) -> dict[str, tuple[float, float]]:
    """Ranges of every tensor of the graph from this interpreter (over samples xs)."""
    return ranges(graph, xs, {t.source for t in graph.tensors.values()})
