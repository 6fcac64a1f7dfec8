"""A float .tflite's WHILE whose trip count is known at build time, written out once per iteration.

TFLiteConverter writes a Keras LSTM / GRU built without `unroll=True` (a fixed batch) as a WHILE: its condition
subgraph compares counters that start as constants with a constant (the number of frames), its body subgraph is one
cell step (the counters plus one, x_t = GATHER(sequence, counter), the gates) and carries the state, the sequence
and the converter's list of outputs. `while_loop` translates it as edgec/frontend/unroll.py treats an ONNX Loop:
the condition is evaluated at build time on the carried values that are constants (tflite_float_movement.fold),
and while it holds the body's operators are translated once more (tflite_float_ops / tflite_float_movement), its
inputs the values the previous iteration left; the counters fold to constants, so GATHER picks one constant
frame. The WHILE's outputs are the values the last iteration left. A weight is one initializer however many
iterations read it.

Named in the one line instead: a condition that reads a value computed at run time ("a trip count not known at
build time"), more than MAX_TRIPS iterations, an operator of the body this translation cannot take (its own
reason).
"""
from __future__ import annotations

import hashlib

import numpy as np

from edgec.frontend import tflite_float_movement
from edgec.frontend.tflite_float_ops import Untranslatable

MAX_TRIPS = 512


def while_loop(tx, op) -> None:
    o = tx.options(op, "WhileOptions")
    cond_sg, body_sg = tx.model.Subgraphs(o.CondSubgraphIndex()), tx.model.Subgraphs(o.BodySubgraphIndex())
    n = op.InputsLength()
    if not (cond_sg.OutputsLength() == 1 and cond_sg.InputsLength() == body_sg.InputsLength() == n
            and body_sg.OutputsLength() == n == op.OutputsLength()):
        raise Untranslatable("its condition and body do not take and give its values")
    state = [_outer(tx, int(k)) for k in op.InputsAsNumpy()]
    cache: dict = {}
    for it in range(MAX_TRIPS + 1):
        cond = _Step(tx, cond_sg, state, cache)
        cond.walk()
        flag = int(cond_sg.OutputsAsNumpy()[0])
        if flag not in cond.folded:
            raise Untranslatable("a trip count not known at build time (its condition reads run-time values)")
        if not bool(np.asarray(cond.folded[flag]).reshape(-1)[0]):
            break
        if it == MAX_TRIPS:
            raise Untranslatable(f"more than {MAX_TRIPS} iterations")
        body = _Step(tx, body_sg, state, cache)
        body.walk()
        state = [body.state(int(k)) for k in body_sg.OutputsAsNumpy()]
    for k, (kind, v, shape) in zip((int(k) for k in op.OutputsAsNumpy()), state):
        if kind == "const":
            tx.folded[k] = v
            tx.shapes[k] = tuple(v.shape)
        else:
            tx.set(k, v, "nhwc", shape=shape)


def _outer(tx, k: int):
    """("const", value, shape) of a constant (folded or stored), else ("value", its ONNX name in the file's order,
    shape)."""
    if k not in tx.values and tx.is_const(k):
        try:
            v = np.asarray(tx.const(k))
        except Untranslatable:            # an int8 without a scale (a plain integer)
            v = np.asarray(tx.raw(k))
        return "const", v, tuple(v.shape)
    return "value", tx.value(k, "nhwc"), tx.shape(k)


def _Step(tx, sg, state, cache):
    """A Translator (tx's class) of one subgraph (the condition or the body) writing into tx's ONNX graph, its inputs the
    carried values."""
    class Step(type(tx)):
        def initializer(self, value, base):         # one initializer per weight, however many iterations
            v = np.asarray(value)
            key = (base, v.dtype.str, v.shape, hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest())
            if key not in cache:
                cache[key] = tx.initializer(v, base)
            return cache[key]

        def walk(self) -> None:
            for i in self.needed():
                op = self.sg.Operators(i)
                kind = self.op_name(op)
                if tflite_float_movement.fold(self, op):
                    continue
                if kind not in self.ops or kind == "WHILE":
                    raise Untranslatable(f"its body's {kind}")
                try:
                    self.ops[kind](self, op)
                except Untranslatable as exc:
                    raise Untranslatable(f"its body's {kind}{': ' + str(exc) if str(exc) else ''}") from None

        def state(self, k: int):
            return _outer(self, k)

    step = Step(tx.model, sg, tx.path)
    step.nodes, step.inits, step.used, step.ops = tx.nodes, tx.inits, tx.used, tx.ops
    for k, (kind, v, shape) in zip((int(k) for k in sg.InputsAsNumpy()), state):
        step.shapes[k] = tuple(shape)
        if kind == "const":
            step.folded[k] = v
        else:
            step.values[k] = (v, "nhwc")
    return step
