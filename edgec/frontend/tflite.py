"""A fully quantized TFLite INT8 model (`.tflite`) -> edgec's quantized graph, without calibration.

The flatbuffer is read with the `tflite` package (Python classes generated from TFLite's schema). Every
operator goes to its importer, `TFLITE_IMPORTERS[name](tx, op)` (edgec/ops/registry.py), a function in the
family module of the canonical op kind it produces; this module is the `tx` they build on.

The file's quantization is honoured exactly, as TFLite Micro's reference kernels compute it: activation scales
and zero points come from the file (never from calibration), weights and int32 biases are the file's integers,
requantization multipliers are computed from the file's float32 scales the way TFLM's Prepare does (per-channel
convolutions in double, per-tensor fully connected layers from the float32 product), fused activations become
TFLite's integer clamp (CalculateActivationRangeQuantized), and where TFLite's arithmetic differs from edgec's
own kernels the kind runs its TFLite variant (softmax: gemmlowp's fixed-point exp). Each op gets its parameters
from its kind's own quantizer (the struct layout), then the file's integers replace what that quantizer derived.

A QUANTIZE after a float graph input and a DEQUANTIZE before a float graph output are the edges edgec's
host already does (its input is int8 with the file's scale and zero point). Every operator or quantization that
cannot be honoured is listed in one error.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError
from edgec.fixedpoint.scheme import MultiplierRangeError
from edgec.frontend import tflite_file, tflite_fold
from edgec.frontend.support import problems_line
from edgec.ir import NO_ACT, Graph, GraphBuilder, Op, Tensor
from edgec.ops import matmul, variables

IDENTIFIER = tflite_file.IDENTIFIER
INT8, UINT8, INT16 = 9, 3, 7       # tflite.TensorType
TYPES = {0: np.float32, 2: np.int32, 3: np.uint8, 4: np.int64, 7: np.int16, 9: np.int8}
ACTIVATIONS = {0: None, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}   # NONE, RELU, RELU_N1_TO_1, RELU6


class Unsupported(Exception):
    """An operator or quantization the importer cannot honour (collected, then reported together)."""


def is_tflite(path: str | Path) -> bool:
    path = Path(path)
    if path.suffix.lower() == ".tflite" or not path.is_file():   # (a FIFO or device would block the read below)
        return path.suffix.lower() == ".tflite"
    try:
        with open(path, "rb") as f:
            return f.read(8)[4:8] == IDENTIFIER
    except OSError:
        return False


def load(path: str | Path, name: str) -> Graph:
    """The quantized graph of a .tflite file (see the module doc)."""
    tx = _open(path, name)
    return _read(tx.path, tx.run)


def survey(path: str | Path, name: str) -> tuple[Graph, dict]:
    """`edgec inspect` of a .tflite file: the graph of what edgec can build (quantized when it can build all of
    it) and the inspect report (every operator, its shapes, constants and support status)."""
    tx = _open(path, name)
    graph = _read(tx.path, lambda: tx.run(strict=False))
    sg, rows = tx.sg, []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        problem = next((p for p in tx.problems if p["index"] == i), None)
        rows.append({"name": f"{tx.op_name(op)}#{i}", "op": tx.op_name(op),
                     "inputs": [list(tx.shape(k)) for k in op.InputsAsNumpy() if k >= 0 and tx._computed(k)],
                     "outputs": [list(tx.shape(k)) for k in op.OutputsAsNumpy()],
                     "params": sum(int(np.prod(tx.shape(k))) for k in op.InputsAsNumpy() if k >= 0 and not tx._computed(k)),
                     "supported": problem is None, "problem": problem and {k: problem[k] for k in PROBLEM_KEYS}})
    problems = [{k: p[k] for k in PROBLEM_KEYS} for p in tx.problems]
    info = {"model": str(path), "opset": f"tflite schema v{tx.model.Version()}", "format": "tflite",
            "input": {"name": tx._tname(sg.Inputs(0)), "shape": list(tx.shape(sg.Inputs(0)))},
            "output": {"name": tx._tname(sg.Outputs(0)), "shape": list(tx.shape(sg.Outputs(0)))},
            "inputs": [{"name": tx._tname(i), "shape": list(tx.shape(i))} for i in sg.InputsAsNumpy()],
            "outputs": [{"name": tx._tname(i), "shape": list(tx.shape(i))} for i in sg.OutputsAsNumpy()],
            "parameters": sum(r["params"] for r in rows), "nodes": rows, "problems": problems,
            "unsupported": [f"{p['op']} ({p['node']})" for p in problems if p["kind"] == "unsupported"],
            "limits": [f"{p['op']} ({p['node']}): {p['what']}" for p in problems if p["kind"] != "unsupported"]}
    return graph, info


PROBLEM_KEYS = ("node", "op", "opset", "kind", "what")


def _open(path: str | Path, name: str) -> "_Importer":
    import tflite

    path = Path(path)
    buf = tflite_file.read(path)          # read once: constants are views of its bytes, not copies
    tx = _read(path, lambda: _Importer(tflite.Model.GetRootAsModel(buf, 0), path, name))
    _read(path, lambda: tflite_file.check_tensors(tx.model, tx.sg, path))   # before any importer reads a field
    return tx


def _read(path: Path, fn):
    """fn(), a damaged flatbuffer (offsets out of range, garbage fields) reported as one line."""
    try:
        return fn()
    except MultiplierRangeError as exc:   # sound bytes, but scales no integer kernel can requantize between
        raise EdgecError(f"{path}: the file's quantization scales need a requantization {exc}; TFLite's integer "
                         "kernels cannot run it either: quantize the float model again") from None
    except (IndexError, ValueError, TypeError, AttributeError, UnicodeDecodeError, KeyError, OverflowError,
            MemoryError, __import__("struct").error) as exc:
        raise EdgecError(f"{path}: damaged TFLite flatbuffer ({type(exc).__name__}: {str(exc)[:100]}); "
                         "export the model again") from None


class _Importer:
    """The state of one import, and the context (`tx`) the TFLite importers in edgec/ops build on."""

    def __init__(self, model, path: Path, name: str):
        from tflite.utils import BUILTIN_OPCODE2NAME

        self.model, self.path = model, path
        variables.check_subgraphs(model, path)      # one, or with the init subgraphs of CALL_ONCE
        self.sg = model.Subgraphs(0)
        self.graph = GraphBuilder(name)        # handed out finished (immutable) by run()
        self.names = BUILTIN_OPCODE2NAME
        self.values: dict[int, str] = {}          # TFLite tensor index -> canonical tensor
        self.problems: list[dict] = []          # what cannot be honoured, one entry per operator
        self.given: dict[str, dict] = {}          # op name -> the file's integers replacing the quantizer's
        self.static: dict[int, np.ndarray] = {}   # TFLite tensor index -> its value, computed at import
                                                  # (run-time shape computations: edgec/frontend/tflite_fold.py)
        self.parts: dict[int, str] = {}           # output of an operator with several, held packed in one tensor

    # ---- the context importers build on (edgec/ops/<family>.py) ---------------------------
    def op_name(self, op) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        c = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        return self.names.get(c, f"builtin #{c}") if c != 32 else f"CUSTOM {code.CustomCode().decode()}"

    def options(self, op):
        """The operator's builtin options table (None when it has none)."""
        import tflite

        table = op.BuiltinOptions()
        if table is None:
            return None
        names = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
        cls = getattr(tflite, names.get(op.BuiltinOptionsType(), ""), None)
        if cls is None:
            raise Unsupported("unknown builtin options")
        o = cls()
        o.Init(table.Bytes, table.Pos)
        return o

    def shape(self, index: int) -> tuple[int, ...]:
        t = self.sg.Tensors(index)
        return tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()

    def qparams(self, index: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(float32 scales, int64 zero points, quantized dimension) of a tensor; an error if it has none."""
        q = self.sg.Tensors(index).Quantization()
        if q is None or q.ScaleLength() == 0:
            raise Unsupported(f"tensor '{self._tname(index)}' is not quantized (edgec imports fully INT8 models)")
        zp = q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros(q.ScaleLength(), np.int64)
        return (np.asarray(q.ScaleAsNumpy(), np.float32), np.asarray(zp, np.int64).reshape(-1),
                int(q.QuantizedDimension()))

    def const(self, op, k: int) -> np.ndarray | None:
        """The constant data of input k (None when the input is absent); an error when it is computed."""
        if k >= op.InputsLength() or op.Inputs(k) < 0:
            return None
        i = op.Inputs(k)
        if i in self.static:
            return self.static[i]
        t = self.sg.Tensors(i)
        data = self.model.Buffers(t.Buffer()).DataAsNumpy() if t.Buffer() > 0 else 0
        if isinstance(data, int) or t.Type() not in TYPES:
            raise Unsupported(f"input {k} ('{self._tname(i)}') must be a constant of a numeric type")
        return data.view(TYPES[t.Type()]).reshape(self.shape(i))     # a read-only view of the mapped file

    def input(self, op, k: int = 0, dtypes: tuple[str, ...] = ("int8",)) -> str:
        """The canonical tensor holding activation input k (of one of `dtypes`: a uint8 tensor only where the
        importer says it takes one)."""
        i = op.Inputs(k)
        if i not in self.values and not tflite_fold.materialize(self, op, i):
            raise Unsupported(f"input {k} ('{self._tname(i)}') is a constant or an unknown tensor; edgec needs an "
                              "activation there")
        if self.graph.tensors[self.values[i]].dtype not in dtypes:
            raise Unsupported(f"input {k} ('{self._tname(i)}') is {self.graph.tensors[self.values[i]].dtype}; this "
                              f"operator takes {' or '.join(dtypes)} (uint8 goes through a QUANTIZE to int8 first)")
        return self.values[i]

    def tensor(self, name: str) -> Tensor:
        return self.graph.tensors[name]

    def output(self, op, shape: tuple[int, ...] | None = None, dtypes: tuple[str, ...] = ("int8",), k: int = 0) -> str:
        """A new canonical int8 tensor (or of one of `dtypes`) for the operator's output k, with the file's scale
        and zero point."""
        return self._activation(op.Outputs(k), shape or tflite_fold.run_batch_shape(self, op, k), dtypes)

    def packed_outputs(self, op, size: int, dtype: str) -> str:
        """One tensor (`size` values of `dtype`, named after output 0) holding all of the operator's outputs one
        after the other, as edgec packs a model's outputs (edgec/ports.py): they must be the graph's outputs."""
        name = self._tname(op.Outputs(0))
        self.graph.tensors[name] = Tensor(name=name, shape=(size,), source=name, scale=1.0, zero_point=0,
                                          dtype=dtype)
        for k in range(op.OutputsLength()):
            self.values[op.Outputs(k)] = self.parts[op.Outputs(k)] = name
        return name

    def intermediate(self, like: str, shape: tuple[int, ...], suffix: str) -> str:
        """A new tensor between two ops made from one operator, quantized as tensor `like`."""
        t = self.graph.tensors[like]
        name = f"{like}{suffix}"
        self.graph.tensors[name] = Tensor(name=name, shape=tuple(shape), source=name, scale=t.scale,
                                          zero_point=t.zero_point)
        return name

    def act_range(self, op, out: str, fused: int) -> dict:
        """TFLite's CalculateActivationRangeQuantized: the int8 (int16) clamp of a fused activation (float32 math)."""
        if fused not in ACTIVATIONS:
            raise Unsupported(f"fused activation #{fused} (edgec fuses NONE, RELU, RELU_N1_TO_1, RELU6)")
        t = self.graph.tensors[out]
        rng, (qmin, qmax) = ACTIVATIONS[fused], (-32768, 32767) if t.dtype == "int16" else (-128, 127)
        if rng is None:
            return {"act_min": qmin, "act_max": qmax}

        def q(f):
            v = np.float32(f) / np.float32(t.scale)
            return t.zero_point + int(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))
        lo = max(qmin, q(rng[0]))
        hi = qmax if rng[1] == math.inf else min(qmax, q(rng[1]))
        return {"act_min": lo, "act_max": hi}

    def window(self, o, in_hw, out_hw, kernel) -> dict:
        """kernel, stride, dilation and pad (top, left) attributes of a conv or pool's options: TFLite's
        ComputePaddingHeightWidth (the odd pixel of SAME padding at the bottom / right)."""
        st = (o.StrideH(), o.StrideW())
        dil = (o.DilationHFactor(), o.DilationWFactor()) if hasattr(o, "DilationHFactor") else (1, 1)
        pad = tuple(max(0, (n - 1) * s + (f - 1) * d + 1 - i) // 2
                    for n, s, f, d, i in zip(out_hw, st, kernel, dil, in_hw))
        return {"kernel": tuple(int(k) for k in kernel), "stride": st, "dilation": dil, "pad": pad}

    def weighted(self, op, weights_q: np.ndarray, axis: int, bias_k: int, out: str,
                 per_tensor_float32: bool = False) -> tuple[dict, np.ndarray, np.ndarray]:
        """The file's integers of a weighted op (weights as given, int32 bias, Q31 multipliers and shifts as
        TFLM's Prepare computes them) and the float weights and bias they stand for."""
        from edgec.fixedpoint.scheme import quantize_multiplier

        scales, zps, _ = self.qparams(op.Inputs(1))
        if self.sg.Tensors(op.Inputs(1)).Type() != INT8 or np.any(zps != 0):
            raise Unsupported("weights must be symmetric int8 (zero point 0)")
        n = weights_q.shape[axis]
        if scales.size not in (1, n):
            raise Unsupported(f"{scales.size} weight scales for {n} output channels")
        ws = np.broadcast_to(scales, (n,)).astype(np.float32)
        x, y = self.tensor(self.values[op.Inputs(0)]), self.tensor(out)
        bias, wide = self.const(op, bias_k), np.int64 if x.dtype == "int16" else np.int32   # 16x8: int64 bias
        wide = np.int32 if x.dtype == "int16" and bias is not None and bias.dtype == np.int32 else wide   # or int32
        if bias is None:
            bias = np.zeros(n, wide)
        elif bias.dtype != wide or bias.size != n:
            raise Unsupported(f"bias must be {np.dtype(wide)}, one per output channel (got {bias.dtype} {bias.shape})")
        if per_tensor_float32 and scales.size == 1:      # GetQuantizedConvolutionMultipler: float32 product
            real = [float(np.float32(np.float32(x.scale) * ws[0])) / float(y.scale)] * n
        else:                                             # PopulateConvolutionQuantizationParams: double
            real = [float(x.scale) * float(s) / float(y.scale) for s in ws]
        try:
            mult, shift = zip(*(quantize_multiplier(r) for r in real))
        except ValueError as exc:
            raise Unsupported(str(exc)) from None
        shape = [1] * weights_q.ndim
        shape[axis] = -1
        arrays = {"weights": np.ascontiguousarray(weights_q, np.int8), "bias": np.asarray(bias, wide).reshape(-1),
                  "mult": np.asarray(mult, np.int32), "shift": np.asarray(shift, np.int32)}
        w = tflite_file.DequantizedWeights(weights_q, ws.reshape(shape))   # float32 when read, not held (4x)
        b = (arrays["bias"].astype(np.float64) * float(x.scale) * ws.astype(np.float64)).astype(np.float32)
        return arrays, w, b

    def emit(self, kind: str, tflite_op, inputs: list[str], out: str, arrays: dict | None = None,
             params: dict | None = None, part: str = "", **attrs) -> Op:
        """Append an op of `kind` made from `tflite_op`; `arrays`/`params`: the file's integers, which replace
        its quantizer's; `part`: a suffix of its name when one operator becomes several ops."""
        name = base = f"{self.op_name(tflite_op)}#{self.index}{part}"
        k = 1
        while name in self.given:                 # one TFLite operator made into several ops (SPLIT, ...)
            name, k = f"{base}.{k}", k + 1
        e = Op(kind=kind, name=name, inputs=tuple(inputs), output=out, attrs={"act": NO_ACT, **attrs})
        self.graph.ops.append(e)
        self.given[name] = {"arrays": arrays or {}, "params": params or {}}
        return e

    def unsupported(self, what: str) -> Exception:
        """The exception an importer raises for what it cannot honour (listed with the others)."""
        return Unsupported(what)

    def same_qparams(self, a: str, b: str, what: str) -> None:
        ta, tb = self.tensor(a), self.tensor(b)
        if (ta.scale, ta.zero_point) != (tb.scale, tb.zero_point):
            raise Unsupported(f"{what} with different input and output quantization")

    # ---- the driver ---------------------------------------------------------------------------------
    def run(self, strict: bool = True) -> Graph:
        """The quantized graph; strict=False: the graph of what can be built (not quantized if something cannot)."""
        from edgec.ops.registry import TFLITE_IMPORTERS

        sg, g = self.sg, self.graph
        edges = self._edges()
        several = sg.InputsLength() > 1 or sg.OutputsLength() > 1
        for k in range(sg.InputsLength()):
            i = sg.Inputs(k)
            try:
                t = self._activation(edges.get(i, i), dtypes=("int8", "uint8", "int16", "int32"))
            except Unsupported as exc:
                hint = ("; a float or dynamic-range .tflite: quantize it fully with TFLiteConverter (a representative "
                        "dataset, int8 inputs and outputs), or give edgec the float model as ONNX with --calib"
                        if self.sg.Tensors(i).Type() == 0 else "")
                raise EdgecError(f"{self.path}: graph input '{self._tname(i)}': {exc}{hint}") from None
            if k == 0:
                g.input, g.input_onnx_shape = t, self.shape(i)
            else:
                g.more_inputs.append(t)
            if several:
                g.port_names[t], g.port_shapes[t] = self._tname(i), self.shape(i)
        poisoned: set[int] = set()        # tensors computed by (or after) an operator that could not be imported
        for self.index in range(sg.OperatorsLength()):
            op = sg.Operators(self.index)
            name = self.op_name(op)
            if self.index in edges["ops"]:
                continue
            after = any(op.Inputs(k) in poisoned for k in range(op.InputsLength()))
            if tflite_fold.fold(self, op):   # (never reads an activation's values: poisoned inputs do not matter)
                continue                  # computed at import (a shape computation)
            try:
                if name not in TFLITE_IMPORTERS:
                    raise Unsupported(variables.REFUSED.get(name, "operator not supported"))
                if after:                 # a supported operator on what could not be imported: not checked further
                    poisoned.update(int(t) for t in op.OutputsAsNumpy())
                    continue
                TFLITE_IMPORTERS[name](self, op)
            except Unsupported as exc:
                poisoned.update(int(t) for t in op.OutputsAsNumpy())
                code = self.model.OperatorCodes(op.OpcodeIndex())
                self.problems.append({"index": self.index, "node": f"{name}#{self.index}", "op": name,
                                      "opset": code.Version(), "what": str(exc),
                                      "kind": "unsupported" if name not in TFLITE_IMPORTERS else "limit"})
        ys = [sg.Outputs(k) for k in range(sg.OutputsLength())]
        if self.problems and not strict:
            g.output = self.values.get(edges.get(ys[0], ys[0]), g.ops[-1].output if g.ops else g.input)
            return g.finish()
        if self.problems:
            raise EdgecError(f"{self.path}: edgec cannot honour {len(self.problems)} operator(s): "
                             + problems_line(self.problems) + "; give edgec the float model (.onnx) instead")
        ys = self._packed(ys)
        if several and len(ys) == 1 and sg.InputsLength() == 1:     # one input, one packed output
            several = False
            g.port_names.clear()
            g.port_shapes.clear()
        for k, o in enumerate(ys):
            t = self._graph_output(o, edges.get(o, o), g.outputs[:k])
            shape = (1, *g.tensors[t].shape) if o in self.parts else self.shape(o)   # packed: its own shape
            shape = shape if int(np.prod(shape)) == g.tensors[t].size else g.tensors[t].shape   # batch None
            if k == 0:
                g.output, g.output_onnx_shape = t, shape
            else:
                g.more_outputs.append(t)
            if several:
                g.port_names[t], g.port_shapes[t] = self._tname(o), shape
        g.prune()
        matmul.read_through_views(g, scalars=False)     # attention's TRANSPOSEs read through strides, not copied
        self._quantize()
        return g.finish()

    def _packed(self, ys: list[int]) -> list[int]:
        """The graph outputs with an operator's packed outputs (`packed_outputs`) as one: its first; an error
        unless they are all graph outputs, one after the other in the operator's order."""
        out, k = [], 0
        while k < len(ys):
            if ys[k] not in self.parts:
                out.append(ys[k])
                k += 1
                continue
            t = self.parts[ys[k]]
            group = [i for i, v in self.parts.items() if v == t]
            if ys[k:k + len(group)] != group:
                raise EdgecError(f"{self.path}: graph outputs '{self._tname(ys[k])}'...: edgec needs all "
                                 f"{len(group)} outputs of the operator computing them as graph outputs, one "
                                 "after the other in the operator's order; export the model with them so")
            out.append(ys[k])
            k += len(group)
        return out

    def _graph_output(self, index: int, y: int, earlier: list[str]) -> str:
        """The canonical tensor of graph output `index` (held in TFLite tensor y; `earlier`: the outputs before
        it); an error naming what is wrong with it."""
        g, name = self.graph, self._tname(index)
        last = self.sg.Operators(self.sg.OperatorsLength() - 1)
        if y not in self.values and not tflite_fold.materialize(self, last, y):    # a folded constant output
            ops = [i for i in range(self.sg.OperatorsLength()) if y in self.sg.Operators(i).OutputsAsNumpy()]
            what = f"computed by {self.op_name(self.sg.Operators(ops[0]))} (operator #{ops[0]}), which edgec " \
                   "did not import" if ops else "a constant or a tensor no operator computes"
            raise EdgecError(f"{self.path}: graph output '{name}' is {what}; export the model with outputs "
                             "computed by its operators")
        t = self.values[y]
        if t in g.inputs:
            raise EdgecError(f"{self.path}: graph output '{name}' is a graph input itself: the model computes "
                             "nothing for it")
        if t in earlier:
            raise EdgecError(f"{self.path}: graph output '{name}' is the same tensor as an earlier output; "
                             "export the model with each output computed once")
        return t

    def _edges(self) -> dict:
        """QUANTIZE of a float graph input / DEQUANTIZE to a float graph output: tensor maps, ops skipped."""
        sg, edges = self.sg, {"ops": set()}
        ins = {sg.Inputs(k) for k in range(sg.InputsLength())}
        outs = {sg.Outputs(k) for k in range(sg.OutputsLength())}
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            name = self.op_name(op)
            if name == "QUANTIZE" and op.Inputs(0) in ins and self.sg.Tensors(op.Inputs(0)).Type() == 0:
                edges[op.Inputs(0)] = op.Outputs(0)
                edges["ops"].add(i)
            elif name == "DEQUANTIZE" and op.Outputs(0) in outs:
                edges[op.Outputs(0)] = op.Inputs(0)
                edges["ops"].add(i)
        return edges

    def _computed(self, index: int) -> bool:
        t = self.sg.Tensors(index)
        return not (t.Buffer() > 0 and not isinstance(self.model.Buffers(t.Buffer()).DataAsNumpy(), int))

    def _tname(self, index: int) -> str:
        n = self.sg.Tensors(index).Name()
        return n.decode(errors="replace") if n else f"#{index}"

    def _activation(self, index: int, shape=None, dtypes: tuple[str, ...] = ("int8",)) -> str:
        t = self.sg.Tensors(index)
        dtype = {INT8: "int8", UINT8: "uint8", INT16: "int16", 2: "int32"}.get(t.Type())
        if dtype not in dtypes:
            raise Unsupported(f"tensor '{self._tname(index)}' is {_type_name(t.Type())}; edgec runs int8 activations"
                              + (f" (and takes {dtype} in and out through a QUANTIZE)" if dtype else ""))
        plain = dtype in ("int16", "int32") and not (t.Quantization() and t.Quantization().ScaleLength())  # ids
        scales, zps, _ = (np.ones(1, np.float32), np.zeros(1, np.int64), 0) if plain else self.qparams(index)
        if scales.size != 1:
            raise Unsupported(f"tensor '{self._tname(index)}' has a scale per channel; activations are per tensor")
        name = self._tname(index)
        base, k = name, 1
        while name in self.graph.tensors:
            name, k = f"{base}_{k}", k + 1
        phys = tuple(shape if shape is not None else self.shape(index)) or (1,)
        self.graph.tensors[name] = Tensor(name=name, shape=phys, source=name, scale=float(scales[0]),
                                          zero_point=int(zps[0]), dtype=dtype)
        self.values[index] = name
        return name

    def _quantize(self) -> None:
        """Every op's parameters from its kind's quantizer, then the file's integers in their place (on the ops
        this import made, before the graph is handed out)."""
        from edgec.ops.registry import quantize

        for op in self.graph.ops:
            ins = [self.graph.tensors[i] for i in op.inputs]
            given = self.given[op.name]
            op.attrs["tflite"] = True             # weighted() keeps the file's weights (no float requantizing)
            op.arrays.update(given["arrays"])
            quantize(op, ins, self.graph.tensors[op.output])       # (16x8: the kind's int16 quantizer too)
            op.arrays.update(given["arrays"])
            op.params.update(given["params"])


def _type_name(t: int) -> str:
    import tflite

    names = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
    return names.get(t, f"type #{t}").lower()
