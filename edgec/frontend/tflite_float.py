"""A float .tflite (TFLiteConverter without a representative dataset) -> the equivalent float ONNX model, which
edgec then calibrates and quantizes exactly as any float ONNX model (per-channel int8 weights, int8 activations;
onnxruntime runs it for calibration and for the float side of every accuracy report).

Three kinds of such files: float32 throughout; float16 weights (each a float16 constant read through a
DEQUANTIZE); dynamic-range (int8 weights with their scales, read through a DEQUANTIZE or straight by a float
layer: TFLite's hybrid kernels). Every weight becomes the float32 value the file means (q x scale, or the float16
value), so the ONNX model computes what TF Lite's float interpreter computes.

Layout: the ONNX model takes and returns the file's own (channels-last) tensors. A convolution or pool reads its
input channels-first (a Transpose where a value is still channels-last) and its output stays channels-first until
an operator needs the file's order (RESHAPE, FULLY_CONNECTED, a graph output); elementwise operators, MEAN over
the spatial axes, CONCATENATION and PAD work in whichever order their input is. edgec's canonicalizer then turns
the whole model channels-last again.

Operators computing only a RESHAPE's shape (Keras' SHAPE -> STRIDED_SLICE -> PACK of a batch of None) are not
translated: a RESHAPE takes the output shape the file records. Other integer operators of constants (and SHAPE) are
computed at build time (tflite_float_movement.fold). The operators translated are the keys of OPS
(tflite_float_ops.py's and tflite_float_movement.py's); all the others a file holds are named at once in one line.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgec.errors import EdgecError
from edgec.frontend import tflite_file
from edgec.frontend import tflite_float_movement, tflite_float_ops, tflite_float_while
from edgec.frontend.tflite_float_ops import TO_NCHW, TO_NHWC, Untranslatable

OPS = {**tflite_float_ops.OPS, **tflite_float_movement.OPS, "WHILE": tflite_float_while.while_loop}
UNTRANSLATED = {     # why, where the operator says it (named with it)
    "IF": "control flow"}

OPSET = 13
FLOAT32, FLOAT16, INT32, UINT8, INT64, INT8 = 0, 1, 2, 3, 4, 9          # tflite.TensorType
DTYPES = {FLOAT32: np.float32, FLOAT16: np.float16, INT32: np.int32, UINT8: np.uint8, INT64: np.int64,
          INT8: np.int8}


def _open(path: Path):
    import tflite

    buf = tflite_file.read(path)
    model = tflite.Model.GetRootAsModel(buf, 0)
    return model, model.Subgraphs(0)


def is_float(path: str | Path) -> bool:
    """True for a float, float16-weights or dynamic-range .tflite (tflite_file.is_float_model)."""
    path = Path(path)
    try:
        model, sg = _open(path)
        return tflite_file.is_float_model(model, sg)
    except EdgecError:
        raise
    except Exception:        # a damaged file: the quantized importer names what is wrong with it
        return False


def to_onnx(path: str | Path) -> onnx.ModelProto:
    """The float ONNX model of a float .tflite file (see the module doc); one EdgecError naming every operator
    it cannot translate."""
    from edgec.ops import variables

    path = Path(path)
    model, sg = _open(path)
    try:
        variables.check_subgraphs(model, path)
        tflite_file.check_tensors(model, sg, path, float_ok=True)
        tx = Translator(model, sg, path)
        return tx.run(OPS)
    except EdgecError:
        raise
    except (IndexError, ValueError, TypeError, AttributeError, KeyError, UnicodeDecodeError, OverflowError,
            MemoryError, struct.error) as exc:
        raise EdgecError(f"{path}: damaged TFLite flatbuffer ({type(exc).__name__}: {str(exc)[:100]}); "
                         "export the model again") from None


class Translator:
    """One translation: the file's tensors, the ONNX nodes and initializers made so far, and each activation's
    ONNX name with the order of its axes ("nhwc": the file's, "nchw": a 4-D value channels-first)."""

    def __init__(self, model, sg, path: Path):
        from tflite.utils import BUILTIN_OPCODE2NAME

        self.model, self.sg, self.path, self.names = model, sg, path, BUILTIN_OPCODE2NAME
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.values: dict[int, tuple[str, str]] = {}      # tensor index -> (ONNX name, "nhwc" | "nchw")
        self.views: dict[tuple[str, str], str] = {}       # (ONNX name, wanted order) -> its Transpose's output
        self.folded: dict[int, np.ndarray] = {}           # a DEQUANTIZE of a constant: its float32 value; an
        #                                                   integer computed at build time (tflite_float_movement.fold)
        self.shapes: dict[int, tuple[int, ...]] = {}      # the real shape where the file holds a placeholder
        self.used: set[str] = set()
        self.ops: dict = {}                               # the translations (run sets them)

    # ---- the file --------------------------------------------------------------------------------
    def op_name(self, op) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        c = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        return self.names.get(c, f"builtin #{c}") if c != 32 else f"CUSTOM {code.CustomCode().decode()}"

    def options(self, op, cls: str):
        import tflite

        o = getattr(tflite, cls)()
        table = op.BuiltinOptions()
        if table is None:
            return None
        o.Init(table.Bytes, table.Pos)
        return o

    def shape(self, index: int) -> tuple[int, ...]:
        """A tensor's shape: the one computed here where the file's is a placeholder (out_shape), else the file's."""
        if index in self.shapes:
            return self.shapes[index]
        t = self.sg.Tensors(index)
        return tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()

    def out_shape(self, index: int, elements: int) -> tuple[int, ...]:
        """The static shape of an operator's output holding `elements` values: the file's, or, where the converter
        left a placeholder (a shape computed at run time: shape signature with -1), the signature with its one -1
        resolved."""
        shape = self.shape(index)
        if int(np.prod(shape)) == elements:
            return shape
        t = self.sg.Tensors(index)
        sig = [int(d) for d in t.ShapeSignatureAsNumpy()] if t.ShapeSignatureLength() else []
        if sig.count(-1) > 1 and sig[0] == -1:
            sig[0] = 1                              # the batch
        known = int(np.prod([d for d in sig if d != -1]))
        if sig.count(-1) == 1 and known and elements % known == 0:
            return tuple(elements // known if d == -1 else d for d in sig)
        if sig.count(-1) == 0 and known == elements:
            return tuple(sig)
        raise Untranslatable(f"output '{self.tname(index)}' has shape {list(shape)} for {elements} values (a shape "
                             "computed at run time)")

    def is_const(self, index: int) -> bool:
        b = self.sg.Tensors(index).Buffer()
        return index in self.folded or (b > 0 and self.model.Buffers(b).DataLength() > 0)

    def raw(self, index: int) -> np.ndarray:
        """A constant tensor's stored values (its own type), or the value computed at build time (folded)."""
        if index in self.folded:
            return self.folded[index]
        t = self.sg.Tensors(index)
        dtype = DTYPES.get(t.Type())
        if dtype is None:
            raise Untranslatable(f"constant '{self.tname(index)}' has TFLite type {t.Type()}")
        data = self.model.Buffers(t.Buffer()).DataAsNumpy()
        return np.frombuffer(data.tobytes(), dtype).reshape(self.shape(index))

    def const(self, index: int) -> np.ndarray:
        """A constant's float32 value (int8 weights: (q - zero point) x scale, per channel where the file says)."""
        if index in self.folded:
            return self.folded[index]
        q = self.raw(index)
        if q.dtype in (np.int8, np.uint8):
            quant = self.sg.Tensors(index).Quantization()
            if quant is None or quant.ScaleLength() == 0:
                raise Untranslatable(f"constant '{self.tname(index)}' is integer without a scale")
            scale = np.asarray(quant.ScaleAsNumpy(), np.float32)
            zp = np.asarray(quant.ZeroPointAsNumpy(), np.float32) if quant.ZeroPointLength() else np.float32(0)
            if scale.size > 1:
                bshape = [1] * q.ndim
                bshape[int(quant.QuantizedDimension())] = scale.size
                scale, zp = scale.reshape(bshape), np.reshape(zp, bshape) if np.ndim(zp) else zp
            return ((q.astype(np.float32) - zp) * scale).astype(np.float32)
        return q.astype(np.float32) if q.dtype == np.float16 else q

    def tname(self, index: int) -> str:
        n = self.sg.Tensors(index).Name()
        return n.decode(errors="replace") if n else f"#{index}"

    # ---- the ONNX graph being made -------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def node(self, op_type: str, inputs: list[str], base: str, **attrs) -> str:
        out = self.fresh(base)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.fresh(f"{op_type}_{base}"), **attrs))
        return out

    def initializer(self, value: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def layout(self, index: int) -> str:
        return self.values[index][1] if index in self.values else "nhwc"

    def value(self, index: int, order: str = "nhwc") -> str:
        """The ONNX name holding tensor `index` in `order` (a constant: an initializer; an activation in the other
        order: a Transpose, made once)."""
        if index not in self.values:
            if not self.is_const(index):
                raise Untranslatable(f"tensor '{self.tname(index)}' is computed by no operator this translation takes")
            v = self.const(index)
            return self.initializer(v.transpose(TO_NCHW) if order == "nchw" and v.ndim == 4 else v,
                                    self.tname(index))
        name, have = self.values[index]
        if have == order or len(self.shape(index)) != 4:
            return name
        if (name, order) not in self.views:
            self.views[(name, order)] = self.node("Transpose", [name], f"{name}_{order}",
                                                  perm=list(TO_NCHW if order == "nchw" else TO_NHWC))
        return self.views[(name, order)]

    def set(self, index: int, name: str, order: str = "nhwc", shape: tuple[int, ...] | None = None) -> None:
        """Tensor `index` is ONNX value `name`, its axes in `order`; `shape`: its real shape where the file records
        a placeholder."""
        if shape is not None and tuple(shape) != self.shape(index):
            self.shapes[index] = tuple(int(d) for d in shape)
        self.values[index] = (name, order if len(self.shape(index)) == 4 else "nhwc")

    def operand(self, index: int, order: str, rank: int) -> str:
        """A binary operator's operand in `order`: an activation as value(); a constant broadcast to `rank` axes
        first (numpy's rules, in the file's order), then put in `order`."""
        if index in self.values or not self.is_const(index):
            return self.value(index, order)
        v = self.const(index)
        if order == "nchw" and rank == 4:
            v = v.reshape((1,) * (4 - v.ndim) + v.shape).transpose(TO_NCHW)
        return self.initializer(v, self.tname(index))

    def _rename(self, old: str, new: str) -> None:
        for n in self.nodes:
            n.input[:] = [new if v == old else v for v in n.input]
            n.output[:] = [new if v == old else v for v in n.output]

    # ---- the walk ---------------------------------------------------------------------------------------
    def needed(self) -> list[int]:
        """The operators the graph outputs depend on, a RESHAPE's or TRANSPOSE_CONV's shape operand not followed."""
        sg = self.sg
        producer = {int(o): i for i in range(sg.OperatorsLength()) for o in sg.Operators(i).OutputsAsNumpy()}
        keep, todo = set(), [int(o) for o in sg.OutputsAsNumpy()]
        while todo:
            i = producer.get(todo.pop())
            if i is None or i in keep:
                continue
            keep.add(i)
            op = sg.Operators(i)
            ins = [int(k) for k in op.InputsAsNumpy() if k >= 0]
            if self.op_name(op) in ("RESHAPE", "EXPAND_DIMS", "SQUEEZE"):
                ins = ins[:1]
            elif self.op_name(op) == "TRANSPOSE_CONV":     # its output shape operand: the file's shape is read
                ins = ins[1:]
            todo += ins
        return sorted(keep)

    def run(self, ops: dict) -> onnx.ModelProto:
        sg, graph_inputs = self.sg, []
        self.ops = ops                # (a WHILE's body is translated with them too: tflite_float_while.py)
        for k in sg.InputsAsNumpy():
            k = int(k)
            t = sg.Tensors(k)
            if t.Type() != FLOAT32:
                raise EdgecError(f"{self.path}: a float .tflite whose input '{self.tname(k)}' is not float32 "
                                 f"(TFLite type {t.Type()}); edgec quantizes float models with float inputs")
            name = self.fresh(self.tname(k))
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(self.shape(k))))
            self.values[k] = (name, "nhwc")
        problems: dict[str, list[str]] = {}
        lost: set[int] = set()        # outputs of an operator not translated: what reads them is not named
        for i in self.needed():
            op = sg.Operators(i)
            kind = self.op_name(op)
            if kind in ops and lost & {int(k) for k in op.InputsAsNumpy()}:
                lost |= {int(k) for k in op.OutputsAsNumpy()}
                continue
            try:
                if tflite_float_movement.fold(self, op):
                    continue
                if kind not in ops:
                    raise Untranslatable(UNTRANSLATED.get(kind, ""))
                ops[kind](self, op)
            except Untranslatable as exc:
                problems.setdefault(kind, []).append(f"#{i}{': ' + str(exc) if str(exc) else ''}")
                lost |= {int(k) for k in op.OutputsAsNumpy()}
        if problems:
            named = "; ".join(f"{k} (operator {_listed(v)})" for k, v in problems.items())
            raise EdgecError(f"{self.path}: a float .tflite with {sum(map(len, problems.values()))} operator(s) "
                             f"edgec cannot translate to quantize it: {named}; export the float model as ONNX "
                             "(tf2onnx) or quantize it fully with TFLiteConverter"[:900])
        outputs = []
        for k in sg.OutputsAsNumpy():
            k = int(k)
            y, name = self.value(k, "nhwc"), self.tname(k)
            if y != name:       # the output takes the file's name; a value inside that held it is renamed
                if name in self.used and name not in {i.name for i in graph_inputs}:
                    self._rename(name, self.fresh(f"{name}_inner"))
                name = name if name not in {i.name for i in graph_inputs} else self.fresh(name)
                self.used.add(name)
                self.nodes.append(helper.make_node("Identity", [y], [name], name=self.fresh(f"Identity_{name}")))
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(self.shape(k))))
        graph = helper.make_graph(self.nodes, self.path.stem, graph_inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="edgec tflite_float")
        model.ir_version = 8
        return model


def _listed(found: list[str]) -> str:
    """'#1, #4, #9 and 2 more' (each with its reason; one reason shared by all: said once, at the end)."""
    why = {f.partition(": ")[2] for f in found}
    shared = len(found) > 1 and len(why) == 1 and why != {""}
    shown = [f.partition(": ")[0] for f in found] if shared else found
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return ", ".join(shown[:3]) + more + (f": {why.pop()}" if shared else "")


def quantized_tflite(path: str | Path) -> bool:
    """A .tflite that carries its own quantization (built without a calibration set); False for a float one and
    for any other file."""
    from edgec.frontend.tflite import is_tflite

    return is_tflite(path) and not (Path(path).is_file() and is_float(path))


def float_tflite(path: str | Path) -> bool:
    """A float, float16-weights or dynamic-range .tflite (edgec quantizes it from a calibration set)."""
    from edgec.frontend.tflite import is_tflite

    return is_tflite(path) and Path(path).is_file() and is_float(path)
