"""TFLite resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE): the state a Keras
stateful or streaming model keeps in a `tf.Variable` updated at every call, as TFLiteConverter emits it (the
converter flag `experimental_enable_resource_variables`). Kernels: runtime_c/edgec_variables.c.

A variable is state (edgec/ops/state.py) of its `variable_read` op: a persistent arena buffer of int8 values,
what READ_VARIABLE gives (after the QUANTIZE that follows it when the variable is float32); `variable_assign`
writes the new value into that buffer (the op's `state_of`: the read's name), through a table of 256 int8 values
when the variable is float32 (TFLite Micro's DEQUANTIZE of the value, then the read's QUANTIZE, in float32 as
its kernels compute them; the identity when the two quantizations agree). CALL_ONCE's init subgraph is folded at
build time: the values it assigns are the state after reset (the generated `NAME_reset()`), as TFLite Micro runs
it once after its reset. Taken: one READ_VARIABLE of each variable before its ASSIGN_VARIABLE, in the main
subgraph; an init value that is one number (tf.zeros, tf.fill). The assignment runs after the read (it takes the
read's output as a second input: the order TFLite Micro runs them in).
"""
from __future__ import annotations

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Op, Tensor
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.state import Field, c_field

READ_KIND, ASSIGN_KIND = "variable_read", "variable_assign"
FLOAT32, INT8 = 0, 9            # tflite.TensorType


def _p(op: Op) -> dict:
    return op.params or op.attrs        # (a saved graph keeps the params: the importer gives both)


def state_read(op: Op) -> tuple:
    return (Field("value", "int8", (_p(op)["size"],), _p(op)["init"]),)


def _quantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """Nothing to derive: the importer gives every integer."""


def run_read(op: Op, inputs: list, state: dict | None = None) -> np.ndarray:
    return (state["value"] if state is not None else np.full(_p(op)["size"], _p(op)["init"], np.int8)).copy()


def run_assign(op: Op, inputs: list, state: dict | None = None) -> np.ndarray:
    if state is not None:
        table = op.arrays.get("table")
        v = np.asarray(inputs[0], np.int8).reshape(-1)
        state["value"][...] = v if table is None else np.asarray(table, np.int8)[v.astype(np.int64) + 128]
    return np.zeros(1, np.int8)


def c_read(op: Op, low, s: CallSite) -> str:
    return f"edgec_variable_read_s8({_p(op)['size']}, {c_field(s.state, state_read(op), 'value')}, {s.output});"


def c_assign(op: Op, low, s: CallSite) -> str:
    table = s.arrays.get("table", "(const int8_t *)0")
    return f"edgec_variable_assign_s8({_p(op)['size']}, {s.inputs[0]}, {table}, (int8_t *)({s.state}));"


OPS = [OpDef(READ_KIND, "variables", _quantize, None, sensitivity=False, state=state_read),
       OpDef(ASSIGN_KIND, "variables", _quantize, None, sensitivity=False)]
KERNELS = [Kernel("edgec_variable_read_s8", (READ_KIND,), REFERENCE, c_read, run=run_read, code_bytes=40),
           Kernel("edgec_variable_assign_s8", (ASSIGN_KIND,), REFERENCE, c_assign, run=run_assign, code_bytes=60)]
ONNX: dict = {}


def state_owner(op: Op) -> str | None:
    """The name of the op whose state an op writes (a variable's assignment: its read), or None."""
    return _p(op).get("state_of")


# ---- TFLite import
# operators edgec refuses by design, and why: the importer names each one it meets (docs/tflite-operators.md)
REFUSED = {
    "IF": "control flow (runs other subgraphs): export it with the branch fixed, or both and a SELECT_V2",
    "WHILE": "control flow (loops over subgraphs): unroll the loop before converting",
    "CUSTOM ethos-u": "a Vela-compiled Ethos-U NPU command stream: give edgec the .tflite from before Vela",
}


def check_subgraphs(model, path) -> None:
    """One subgraph, or the main one and the init subgraphs its CALL_ONCE operators run (folded at import); with
    an IF or WHILE the import goes on, to name each (REFUSED) with whatever else is in the way."""
    from tflite.utils import BUILTIN_OPCODE2NAME

    sg, init = model.Subgraphs(0), set()
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        if BUILTIN_OPCODE2NAME.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) == "CALL_ONCE":
            init.add(_options(op, "CallOnceOptions").InitSubgraphIndex())
    names = {BUILTIN_OPCODE2NAME.get(max(c.BuiltinCode(), c.DeprecatedBuiltinCode()))
             for c in (model.OperatorCodes(sg.Operators(i).OpcodeIndex()) for i in range(sg.OperatorsLength()))}
    if set(range(1, model.SubgraphsLength())) - init and not names & {"IF", "WHILE"}:   # (else each is named)
        raise EdgecError(f"{path}: {model.SubgraphsLength()} subgraphs (control flow: IF, WHILE); edgec imports "
                         "models with one subgraph and the init subgraphs of CALL_ONCE")


def _options(op, name: str):
    import tflite

    o = getattr(tflite, name)()
    t = op.BuiltinOptions()
    o.Init(t.Bytes, t.Pos)
    return o


def _vars(tx) -> dict:
    if not hasattr(tx, "variables"):
        tx.variables = {"handles": {}, "init": {}, "read": {}}
    return tx.variables


def _key(o) -> str:
    return f"{(o.Container() or b'').decode()}/{(o.SharedName() or b'').decode()}"


def import_call_once(tx, op):
    """The init subgraph's assignments of constants: each variable's value after reset."""
    model = tx.model
    sg = model.Subgraphs(_options(op, "CallOnceOptions").InitSubgraphIndex())
    handles, init = {}, _vars(tx)["init"]
    for i in range(sg.OperatorsLength()):
        o = sg.Operators(i)
        name = tx.names.get(max(model.OperatorCodes(o.OpcodeIndex()).BuiltinCode(),
                                model.OperatorCodes(o.OpcodeIndex()).DeprecatedBuiltinCode()))
        if name == "VAR_HANDLE":
            handles[o.Outputs(0)] = _key(_options(o, "VarHandleOptions"))
        elif name == "ASSIGN_VARIABLE" and o.Inputs(0) in handles:
            t = sg.Tensors(o.Inputs(1))
            data = model.Buffers(t.Buffer()).DataAsNumpy() if t.Buffer() > 0 else 0
            if isinstance(data, int) or t.Type() not in (FLOAT32, INT8):
                raise tx.unsupported("the init subgraph assigns a computed or non-numeric value (edgec folds "
                                     "assignments of float32 or int8 constants)")
            init[handles[o.Inputs(0)]] = data.view(np.float32 if t.Type() == FLOAT32 else np.int8)
        elif name != "VAR_HANDLE":
            raise tx.unsupported(f"the init subgraph runs {name} (edgec folds VAR_HANDLE and ASSIGN_VARIABLE of "
                                 "constants)")


def import_var_handle(tx, op):
    _vars(tx)["handles"][op.Outputs(0)] = _key(_options(op, "VarHandleOptions"))


def _consumers(tx, index: int) -> list:
    return [tx.sg.Operators(i) for i in range(tx.sg.OperatorsLength())
            if index in tx.sg.Operators(i).InputsAsNumpy()]


def _quantize_value(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """TFLite Micro's AffineQuantize of float32 to int8: round half away from zero of x / scale in float32."""
    q = np.float32(x) / np.float32(scale)
    return np.clip(np.sign(q) * np.floor(np.abs(q) + np.float32(0.5)) + zp, -128, 127).astype(np.int8)


def import_read_variable(tx, op):
    v = _vars(tx)
    key = v["handles"].get(op.Inputs(0))
    if key is None or key not in v["init"]:
        raise tx.unsupported("a variable no CALL_ONCE init subgraph assigns (TFLite Micro fails to read it)")
    if key in v["read"]:
        raise tx.unsupported(f"variable '{key}' read twice (edgec takes one READ_VARIABLE before its ASSIGN)")
    y = op.Outputs(0)
    t = tx.sg.Tensors(y)
    if t.Type() == FLOAT32:     # the read's QUANTIZE gives the int8 values the state holds
        users = _consumers(tx, y)
        if len(users) != 1 or tx.op_name(users[0]) != "QUANTIZE":
            raise tx.unsupported("a float32 variable read by anything but one QUANTIZE to int8")
        y = users[0].Outputs(0)
    out = tx._activation(y)
    tx.values[op.Outputs(0)] = out            # (the QUANTIZE after it: int8 to int8 of one quantization, a copy)
    scale, zp = tx.tensor(out).scale, tx.tensor(out).zero_point
    init = v["init"][key]
    q = _quantize_value(init, scale, zp) if init.dtype == np.float32 else init.astype(np.int8)
    if q.size != tx.tensor(out).size or len(np.unique(q)) != 1:
        raise tx.unsupported(f"variable '{key}' starts from values that differ (edgec takes one initial value)")
    p = dict(size=int(q.size), init=int(q[0]))
    e = tx.emit(READ_KIND, op, [], out, None, p, **p)
    v["read"][key] = (e.name, out, t.Type())


def import_dequantize_to_variable(tx, op):
    """A DEQUANTIZE whose float32 value only an ASSIGN_VARIABLE takes: the int8 values, as they are (the
    assignment applies the float round trip)."""
    tx.values[op.Outputs(0)] = tx.input(op, 0)


def into_variable(tx, op) -> bool:
    users = _consumers(tx, op.Outputs(0))
    return bool(users) and all(tx.op_name(u) == "ASSIGN_VARIABLE" for u in users)


def import_assign_variable(tx, op):
    v = _vars(tx)
    key = v["handles"].get(op.Inputs(0))
    if key not in v["read"]:
        raise tx.unsupported("an assignment to a variable not read before it (edgec takes one READ_VARIABLE, "
                             "then its ASSIGN_VARIABLE)")
    read, read_out, vtype = v["read"][key]
    x = tx.input(op, 1)
    xt, rt = tx.tensor(x), tx.tensor(read_out)
    if xt.size != rt.size:
        raise tx.unsupported(f"assigns {xt.size} values to variable '{key}' of {rt.size}")
    arrays = {}
    if vtype == FLOAT32:          # DEQUANTIZE (float32(scale * (q - zp))), then the read's QUANTIZE
        q = np.arange(-128, 128)
        f = (np.float64(np.float32(xt.scale)) * (q - xt.zero_point)).astype(np.float32)
        table = _quantize_value(f, rt.scale, rt.zero_point)
        if not np.array_equal(table, q.astype(np.int8)):
            arrays["table"] = table
    elif (xt.scale, xt.zero_point) != (rt.scale, rt.zero_point):
        raise tx.unsupported("an int8 variable assigned a value of another quantization (TFLite Micro copies "
                             "the bytes)")
    out = tx.intermediate(x, (1,), "_assigned")
    p = dict(size=int(xt.size), state_of=read)
    tx.emit(ASSIGN_KIND, op, [x, read_out], out, arrays, p, **p)
    tx.graph.effects.append(out)          # kept for its effect (nothing reads it)


TFLITE = {"CALL_ONCE": import_call_once, "VAR_HANDLE": import_var_handle, "READ_VARIABLE": import_read_variable,
          "ASSIGN_VARIABLE": import_assign_variable}
