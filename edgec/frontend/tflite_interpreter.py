"""TFLite Micro's interpreter run on a .tflite file edgec imported: the oracle `edgec bench` compares a .tflite
build's reference with (and the tests use), fed edgec's integer inputs and returning outputs packed as edgec's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgec.frontend.tflite import load
from edgec.ir import DTYPES
from edgec.ops.registry import keeps_state


def interpreter_outputs(path: str | Path, xq: np.ndarray, reset_each: bool = False) -> np.ndarray | None:
    """TFLite Micro's outputs (its Python interpreter, package `tflite-micro`) for edgec's integer inputs xq [n, ...]
    (several: packed, edgec/ports.py), several outputs packed the same way (float32 ones as they are); a float
    input gets xq dequantized, a float output is quantized back; a model's state (an LSTM's, an SVDF's, a signal
    front end's) carried from sample to sample as TFLite Micro carries it between Invoke calls, or reset before
    each with reset_each (the device likewise). None: not installed, or the interpreter cannot run the file (an
    operator or version TFLite Micro's Python package lacks: TILE v3...; an Invoke that fails)."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return None
    graph = load(path, "interpreter")
    try:
        interp = runtime.Interpreter.from_file(str(path))
    except RuntimeError:                 # it printed what it lacks; edgec's own reference stands alone
        return None
    carry = keeps_state(graph) and not reset_each
    ins = [(interp.get_input_details(k), graph.tensors[t]) for k, t in enumerate(graph.inputs)]
    sizes = [int(np.prod(d["shape"])) for d, _ in ins]
    outs = []
    for x in np.asarray(xq).reshape(len(xq), -1):
        for k, ((d, t), part) in enumerate(zip(ins, np.split(x, np.cumsum(sizes)[:-1]))):
            if d["dtype"] == np.float32:
                part = (part.astype(np.float32) - np.float32(t.zero_point)) * np.float32(t.scale)
            interp.set_input(np.asarray(part).astype(d["dtype"]).reshape(d["shape"]), k)
        if not carry:
            interp.reset()
        try:
            interp.invoke()
        except RuntimeError:             # an operator on a type its kernel lacks (SELECT_V2 of int32 token ids),
            return None                  # a GATHER index outside its table: no oracle (it printed why)
        row, k = [], 0
        for t in graph.outputs:
            tt, y, k = graph.tensors[t], np.asarray(interp.get_output(k)).reshape(-1), k + 1
            while tt.dtype == "float32" and y.size < tt.size:      # all the outputs packed in the tensor
                y, k = np.concatenate([y, np.asarray(interp.get_output(k)).reshape(-1)]), k + 1
            if tt.dtype != "float32" and y.dtype == np.float32:
                kind = np.iinfo(DTYPES[tt.dtype])                   # int8, or int16 (a 16x8 model's)
                y = np.clip(np.rint(y / np.float32(tt.scale)) + tt.zero_point, kind.min, kind.max).astype(kind.dtype)
            row.append(y)
        outs.append(np.concatenate(row))
    return np.stack(outs)
