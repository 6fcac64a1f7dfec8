"""What the generated model keeps in flash as constant data, by kind: the weight tensors (packed int4, int8,
or a fast kernel's own packing of them), the biases and requantization constants (int32 bias, Q31
multipliers and shifts, a fast kernel's per-channel records), the lookup tables (activation tables, an
Add's per-input rescaling tables, softmax's exp/log tables, a recurrent op's sigmoid/tanh), and the rest
(a constant operand, index and offset tables, initial states). The sum is every constant array the C
file declares (edgec/codegen/cmodel.py takes the same arrays), so `weights` means the weight tensors alone.
"""
from __future__ import annotations

import re

from edgec.ir import Graph, Op
from edgec.ops.registry import REGISTRY
from edgec.ops.select import lowering_of

KINDS = ("weights", "biases_requantization", "lookup_tables", "other")
LABELS = {"weights": "weights", "biases_requantization": "biases and requantization",
          "lookup_tables": "lookup tables", "other": "other constants"}
WEIGHTS = {"weights", "weights4", "fw", "w_x", "w_h", "w_x4", "w_h4"}
BIASES = {"bias", "mult", "shift", "rq", "bias_x", "mult_x", "shift_x", "mult_h", "shift_h", "wb", "rb", "rq_x", "rq_h",
          "rq_any", "rq16", "fbias", "tbias"}
TABLES = re.compile(r"^(table\d*|lut\d+|exp_table|log_table|sigmoid|tanh)$")
# what `--weights-in-ram` copies into RAM: the weights and the per-channel biases / requantization records the
# kernels read with them (a 1x1 kernel reads its channels' records once per block of outputs: left in flash they
# miss a flash accelerator's small data cache on every block, docs/performance.md "h44-vww")
RAM_KINDS = ("weights", "biases_requantization")


def kind_of(key: str) -> str:
    """The kind of constant an op's array key holds (an unknown key counts as `other`, never dropped)."""
    if key in WEIGHTS:
        return "weights"
    if key in BIASES:
        return "biases_requantization"
    return "lookup_tables" if TABLES.match(key) else "other"


def in_ram(breakdown: dict) -> int:
    """Bytes of the constants `--weights-in-ram` copies into RAM (RAM_KINDS) of a breakdown()."""
    return sum(breakdown[k] for k in RAM_KINDS)


def op_arrays(graph: Graph, op: Op) -> dict:
    """The constant arrays the C call of op declares (its lowering's: a fast kernel's own packing, or the op's)."""
    low = lowering_of(graph, op)
    if low is None:             # (a survey's placeholders for unsupported nodes)
        return op.arrays
    return {**low.arrays, **(low.kernel.c_arrays(op) if low.kernel.c_arrays else {})}


def breakdown(graph: Graph) -> dict:
    """Bytes of constants in flash by kind, and their total."""
    out = dict.fromkeys(KINDS, 0)
    for op in graph.ops:
        if REGISTRY.get(op.kind) is not None and REGISTRY[op.kind].alias:
            continue
        for key, a in op_arrays(graph, op).items():
            out[kind_of(key)] += int(a.nbytes)
    out["total"] = sum(out[k] for k in KINDS)
    return out


def describe(b: dict) -> str:
    """'constants 12,345 bytes: weights 9,000, biases and requantization 2,000, lookup tables 1,345'."""
    parts = [f"{LABELS[k]} {b[k]:,}" for k in KINDS if b[k] or k == "weights"]
    return f"constants {b['total']:,} bytes in flash: " + ", ".join(parts)
