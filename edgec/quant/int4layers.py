"""Which layers get int4 weights (`--weights int4`: every layer that can, `--int4 NODE,...`: the named ones).

A layer can if its kind has an int4-weight kernel (registry.INT4_KINDS: conv2d, depthwise_conv2d, fully_connected,
lstm, gru)
and it keeps int8 activations (a 16x8 layer, `--int16`, takes int8 weights). `mark` sets the float op's
attrs['weight_bits'] to 4 (in a new graph) before quantization; the quantizer does the rest
(edgec/fixedpoint/scheme.py). A QDQ file's 4-bit weights (attrs['file_weight_bits'] 4, edgec/frontend/qdq.py) are
int4 from the import on, named or not (`--optimize speed` runs them unpacked on the int8 speed kernels:
edgec/lower/lowering.py speed_weights).
"""
from __future__ import annotations

from dataclasses import replace

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.ops.registry import INT4_KINDS as KINDS

WEIGHTS = ("int8", "int4")


def candidates(graph: Graph, int16: tuple[str, ...] = ()) -> list[str]:
    """Node names whose weights can be int4, in graph order."""
    return list(dict.fromkeys(op.name for op in graph.ops if op.kind in KINDS and op.name not in int16))


def check_names(graph: Graph, names, int16: tuple[str, ...] = ()) -> list[str]:
    """The distinct names, or one EdgecError naming the bad ones and listing the valid ones."""
    names = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
    valid = candidates(graph, int16)
    bad = [n for n in names if n not in valid]
    if bad:
        known = {op.name: op.kind for op in graph.ops}

        def why(n):
            if n in int16:
                return f"'{n}' (also --int16: a 16x8 layer takes int8 weights)"
            return f"'{n}' ({known[n]}: no int4 kernel)" if n in known else f"'{n}' (no such node)"
        raise EdgecError(f"--int4 {', '.join(why(n) for n in bad)}; layers that can take int4 weights: "
                         f"{', '.join(valid) if valid else 'none in this model'}")
    return names


def chosen(graph: Graph, weights: str, names, int16: tuple[str, ...] = ()) -> list[str]:
    """The layers that get int4 weights: all candidates for weights 'int4', else the checked names."""
    if weights not in WEIGHTS:
        raise EdgecError(f"--weights {weights}: use one of {', '.join(WEIGHTS)}")
    listed = check_names(graph, names, int16)
    return candidates(graph, int16) if weights == "int4" else listed


def mark(graph: Graph, names) -> tuple[Graph, int]:
    """The graph with the named layers given int4 weights (attrs['weight_bits'] = 4), the others int8, and how
    many took int4."""
    names = set(names)
    n, ops = 0, []
    for op in graph.ops:
        if op.kind in KINDS:
            four = (op.name in names or op.attrs.get("file_weight_bits") == 4) and graph.tensors[op.output].dtype == "int8"
            op = replace(op, attrs={**op.attrs, "weight_bits": 4 if four else 8})
            n += four
        ops.append(op)
    return graph.replace_ops(ops), n
