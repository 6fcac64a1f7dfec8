"""Stage 2: ONNX ModelProto -> canonical ir.Graph.

What happens here:
- constants are folded (initializers, Constant, Shape of static tensors, and any
  node whose inputs are all constant, evaluated by onnx's reference runtime);
- BatchNormalization is folded into the Conv/Gemm before it (or becomes a 1x1
  depthwise convolution when there is none), a constant Add after Conv/Gemm
  becomes its bias;
- Relu and Clip fuse into the op that produces their input;
- Identity, Dropout and Transpose are free (they only relabel the layout);
  Flatten/Reshape/Squeeze/Unsqueeze are views;
- NCHW graphs run channels-last: every tensor carries the permutation from its
  ONNX layout to its physical one, and data is only moved (a `transpose` op)
  where a consumer needs another order. A Flatten of a channels-last tensor that
  feeds a Gemm/MatMul permutes the weight columns instead of the data.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from edgec.ops import elementwise
from edgec.frontend import qdq
from edgec.frontend.canonicalize_ext import EXT_OPS, ExtOps, view_layout
from edgec.errors import EdgecError
from edgec.ir import SYNTHETIC, Graph, Op, Tensor
from edgec.ops.registry import FUSABLE, WEIGHT_AXIS
from edgec.frontend.loader import graph_inputs, static_shape
from edgec.frontend.support import CONTROL_FLOW, Problem, problems_message

SUPPORTED_OPS = {
    "Conv", "Gemm", "MatMul", "Relu", "Clip", "MaxPool", "AveragePool", "GlobalAveragePool",
    "ReduceMean", "Add", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Softmax",
    "BatchNormalization", "Identity", "Dropout", "Constant", "Shape",
} | EXT_OPS | set(elementwise.UNARY_ONNX)
NO_ACT = (-math.inf, math.inf)


def unsupported_nodes(model: onnx.ModelProto) -> list[str]:
    """'OpType (node name, opset N)' for every node edgec has no operator for, in graph order."""
    return [p.label for p in survey(model, "model")[1] if p.unsupported]


def survey(model: onnx.ModelProto, name: str) -> tuple[Graph, list[Problem]]:
    """The canonical graph and every node edgec cannot build, in graph order: unsupported operators and
    nodes beyond a limit. Canonicalization goes on past each one (their outputs become placeholder ops
    of kind 'unsupported'), so the graph still gives MACs and an arena estimate of the rest."""
    canon = _Canonicalizer(model, name)
    graph = canon.run()
    return graph, canon.problems


def canonicalize(model: onnx.ModelProto, name: str) -> Graph:
    canon = _Canonicalizer(model, name)
    graph = canon.run()
    if canon.problems:
        raise EdgecError(problems_message(canon.problems))
    return graph


def _node_error(node: onnx.NodeProto, what: str) -> EdgecError:
    return EdgecError(f"node '{node.name}' ({node.op_type}): {what}")


def _identity(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def _channels_last(rank: int) -> tuple[int, ...]:
    return (0,) + tuple(range(2, rank)) + (1,)


def _same_order(shape: tuple[int, ...], p: tuple[int, ...], q: tuple[int, ...]) -> bool:
    """True if laying out `shape` by p or by q gives the same bytes."""
    return [a for a in p if shape[a] != 1] == [a for a in q if shape[a] != 1]


class _Canonicalizer(ExtOps):
    def __init__(self, model: onnx.ModelProto, name: str):
        self.model = model
        self.graph = Graph(name=name, tensors={}, ops=[], input="", output="")
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
        self.consts: dict[str, np.ndarray] = {
            i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.shapes: dict[str, tuple[int, ...]] = {}
        for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
            shape = static_shape(vi)
            if shape is not None:
                self.shapes[vi.name] = shape
        # ONNX value -> (canonical tensor, permutation ONNX layout -> physical layout)
        self.values: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.layout_cache: dict[tuple[str, tuple[int, ...]], str] = {}
        self.feature_perm: dict[str, np.ndarray] = {}   # flattened channels-last tensors
        self.uses: dict[str, list[str]] = {}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for node in model.graph.node:
            for i in node.input:
                self.uses.setdefault(i, []).append(node.op_type)
                self.readers.setdefault(i, []).append(node)
        for o in model.graph.output:
            self.uses.setdefault(o.name, []).append("<graph output>")
        self.qdq = qdq.info(model)            # a QDQ model's own quantization (edgec/qdq.py)
        self.graph.fixed_qparams = {k: (float(s), int(z)) for k, (s, z) in self.qdq["activations"].items()}
        self.problems: list[Problem] = []     # nodes edgec cannot build (see _node_or_problem)
        self.poisoned: set[str] = set()       # values downstream of a problem, shape unknown
        self.padded_for_conv: dict[str, tuple[str, tuple[int, int]]] = {}   # Pad output -> (input, pads)

    # ---- helpers -------------------------------------------------------------------------
    def _new_tensor(self, name: str, shape: tuple[int, ...], source: str) -> str:
        if any(int(d) == 0 for d in shape):
            raise EdgecError(f"tensor '{source}' is empty (shape {list(shape)}); edgec needs at least one element")
        base, k = name, 1
        while name in self.graph.tensors:
            name, k = f"{base}_{k}", k + 1
        self.graph.tensors[name] = Tensor(name=name, shape=tuple(int(d) for d in shape), source=source)
        return name

    def _emit(self, kind: str, node: onnx.NodeProto, inputs: list[str], out: str, **attrs) -> Op:
        op = Op(kind=kind, name=node.name or kind, inputs=inputs, output=out, attrs=attrs)
        if kind in WEIGHT_AXIS and self.qdq["weights"]:
            scale = qdq.weight_scale(self.qdq, node, WEIGHT_AXIS[kind], attrs["weights"])
            if scale is not None:
                op.attrs["weight_scale"] = scale
        self.graph.ops.append(op)
        return op

    def _shape(self, value: str, node: onnx.NodeProto) -> tuple[int, ...]:
        if value not in self.shapes:
            raise _node_error(node, f"the shape of '{value}' is not static; export the model with fixed shapes")
        return self.shapes[value]

    def _activation(self, value: str, node: onnx.NodeProto) -> tuple[str, tuple[int, ...]]:
        if value not in self.values:
            raise _node_error(node, f"input '{value}' is not a tensor edgec can compute on the device")
        return self.values[value]

    def _as_layout(self, value: str, want: tuple[int, ...], node: onnx.NodeProto) -> str:
        """The canonical tensor holding ONNX value `value` in physical layout `want`."""
        tensor, perm = self._activation(value, node)
        if perm == want:
            return tensor
        key = (tensor, want)
        if key in self.layout_cache:
            return self.layout_cache[key]
        onnx_shape = self._shape(value, node)
        phys = tuple(onnx_shape[a] for a in want)
        src = self.graph.tensors[tensor].source
        if sum(d != 1 for d in onnx_shape) > 4 and not _same_order(onnx_shape, perm, want):
            # the transpose kernel moves at most 4 non-unit axes; an index map moves up to 6
            _, _, strides = self._axis_strides(value, node)
            out = self._remap(node, tensor, f"{tensor}__layout", phys,
                              [np.arange(onnx_shape[a]) * strides[a] for a in want], source=src)
            self.layout_cache[key] = out
            return out
        out = self._new_tensor(f"{tensor}__layout", phys, src)
        if _same_order(onnx_shape, perm, want):
            self._emit("reshape", node, [tensor], out)
        else:
            q = tuple(int(i) for i in np.argsort(perm)[list(want)])
            self._emit("transpose", node, [tensor], out, perm=q)
        self.layout_cache[key] = out
        return out

    def _real_uses(self, value: str) -> list[str]:
        """Op types reading `value`, looking through Identity/Dropout (and a QDQ pair's Clip after a view)."""
        uses = []
        for node in self.readers.get(value, []):
            if node.op_type in ("Identity", "Dropout") or node.name in self.qdq["clips"]:
                uses += self._real_uses(node.output[0])
            else:
                uses.append(node.op_type)
        return uses + [u for u in self.uses.get(value, []) if u == "<graph output>"]

    def _single_use(self, value: str) -> bool:
        return len(self.uses.get(value, [])) == 1

    def _fusable_producer(self, value: str) -> Op | None:
        """The op producing `value` if the next op may be folded into it."""
        if value not in self.values or not self._single_use(value):
            return None
        tensor, _ = self.values[value]
        op = self.graph.ops[-1] if self.graph.ops else None
        if op is None or op.output != tensor:
            op = self.graph.producer(tensor)
        return op

    def _rename_output(self, op: Op, value: str, new_source: str, perm: tuple[int, ...]) -> None:
        """`op` now produces ONNX value `new_source` (an op was fused into it)."""
        t = self.graph.tensors.pop(op.output)
        self.values.pop(value, None)
        name = self._new_tensor(new_source, t.shape, new_source)
        op.output = name
        self.values[new_source] = (name, perm)

    # ---- main loop -----------------------------------------------------------------------
    def run(self) -> Graph:
        (inp,) = graph_inputs(self.model)
        shape = self.shapes.get(inp.name)
        elem = inp.type.tensor_type.elem_type
        if elem != onnx.TensorProto.FLOAT:
            raise EdgecError(f"input '{inp.name}' is {onnx.TensorProto.DataType.Name(elem)}; edgec takes float "
                             "models (quantized ONNX models come later)")
        name = self._new_tensor(inp.name, shape, inp.name)
        self.values[inp.name] = (name, _identity(len(shape)))
        self.graph.input = name
        self.graph.input_onnx_shape = shape
        for i, node in enumerate(self.model.graph.node):
            self._node_or_problem(i, node)
        if self.problems:   # the graph is only surveyed (edgec inspect): no output checks
            self.graph.output = self.values.get(self.model.graph.output[0].name, ("", None))[0]
            return self.graph
        out = self.model.graph.output[0].name
        if out in self.consts:
            raise EdgecError(f"output '{out}' is a constant: the model computes nothing from its input")
        oshape = self._shape(out, self.model.graph.node[-1])
        tensor = self._as_layout(out, _identity(len(oshape)), self.model.graph.node[-1])
        if tensor == self.graph.input:
            raise EdgecError(f"output '{out}' is the input itself: the model computes nothing")
        self.graph.output = tensor
        self.graph.output_onnx_shape = oshape
        self._prune()
        self._merge_remaps()
        self._ensure_kernel()
        return self.graph

    def _prune(self) -> None:
        """Drop ops whose results nobody uses."""
        live, keep = {self.graph.output}, []
        for op in reversed(self.graph.ops):
            if op.output in live:
                keep.append(op)
                live.update(op.inputs)
        self.graph.ops = keep[::-1]
        self.graph.tensors = {k: v for k, v in self.graph.tensors.items() if k in live}

    def _node_or_problem(self, index: int, node: onnx.NodeProto) -> None:
        """Canonicalize one node; a node edgec cannot build is recorded as a problem and the survey goes
        on past it (its outputs become placeholders, so every later problem is found too)."""
        foldable = node.input and all(i in self.consts or i == "" for i in node.input) and \
            node.op_type not in CONTROL_FLOW
        if (node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS) and not foldable:
            if not any(i in self.poisoned for i in node.input):
                self.problems.append(Problem(self.model, index, node))
            return self._placeholder(node)
        try:
            self._node(node)
        except EdgecError as exc:
            if not any(i in self.poisoned for i in node.input):   # else: a consequence of an earlier problem
                self.problems.append(Problem(self.model, index, node, str(exc)))
            self._placeholder(node)

    def _placeholder(self, node: onnx.NodeProto) -> None:
        """Outputs of a node edgec cannot build: tensors of their ONNX shape (for the survey's MACs and
        arena estimate), or poisoned values when their shape is unknown."""
        ins = [self.values[i][0] for i in node.input if i in self.values]
        for o in node.output:
            if not o or o in self.values or o in self.consts:
                continue
            shape = self.shapes.get(o)
            if shape is None or not ins or any(d == 0 for d in shape):
                self.poisoned.add(o)
                continue
            out = self._new_tensor(o, tuple(shape) or (1,), o)
            self._emit("unsupported", node, ins, out)
            self.values[o] = (out, _identity(len(shape)))

    def _node(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        if op == "Constant":
            value = onnx.helper.get_attribute_value(node.attribute[0])
            self.consts[node.output[0]] = numpy_helper.to_array(value) \
                if isinstance(value, onnx.TensorProto) else np.asarray(value)
            return
        try:
            if all(i in self.consts or i == "" for i in node.input):
                self._fold_constant(node)
                return
            getattr(self, f"_op_{op}")(node)
        except KeyError as exc:
            if exc.args and exc.args[0] in node.input:   # a weight, bias or shape computed at run time
                raise _node_error(node, f"input '{exc.args[0]}' must be a constant (an initializer) for edgec; "
                                        "export the model with constant folding") from None
            raise
        except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError) as exc:
            # shapes, attributes or constants that contradict each other in a model the ONNX checker let
            # through (found by tests/test_fuzz.py): refuse the node instead of failing inside NumPy
            raise _node_error(node, f"inconsistent shapes, attributes or constants ({type(exc).__name__}: "
                                    f"{str(exc)[:150]}); check the model with onnxruntime") from None

    def _fold_constant(self, node: onnx.NodeProto) -> None:
        from onnx.reference import ReferenceEvaluator

        inputs = [i for i in node.input if i]
        graph = onnx.helper.make_graph(
            [node], "fold", [onnx.helper.make_tensor_value_info(i, onnx.TensorProto.UNDEFINED, None) for i in inputs],
            [onnx.helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output])
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", self.opset)])
        try:
            results = ReferenceEvaluator(model).run(None, {i: self.consts[i] for i in inputs})
        except Exception as exc:
            raise _node_error(node, f"could not fold this constant computation ({exc})") from None
        for o, r in zip(node.output, results):
            self.consts[o] = np.asarray(r)

    def _attr(self, node: onnx.NodeProto, name: str, default=None):
        for a in node.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default

    # ---- convolution & pooling -------------------------------------------------------------
    def _window(self, node, in_shape, out_shape, kernel, strides, dil):
        """(pad_top, pad_left) for a 1-D or 2-D window over a channels-last tensor."""
        nsp = len(kernel)
        auto = self._attr(node, "auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            begins = []
            for i in range(nsp):
                total = max((out_shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_shape[2 + i], 0)
                begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
        elif auto == "VALID":
            begins = [0] * nsp
        else:
            pads = list(self._attr(node, "pads", [0] * (2 * nsp)))
            begins = pads[:nsp]
        if any(p < 0 for p in begins):
            raise _node_error(node, "negative padding is not supported")
        return (0, begins[0]) if nsp == 1 else (begins[0], begins[1])

    def _spatial(self, node, x):
        """Input/output sizes as (h, w, c) for a 1-D (h = 1) or 2-D NCHW op."""
        in_shape, out_shape = self._shape(x, node), self._shape(node.output[0], node)
        if len(in_shape) not in (3, 4) or in_shape[0] != 1:
            raise _node_error(node, f"input shape {list(in_shape)} is not [1, C, L] or [1, C, H, W]")
        if len(in_shape) == 3:
            return in_shape, out_shape, (1, in_shape[2], in_shape[1]), (1, out_shape[2], out_shape[1])
        return (in_shape, out_shape, (in_shape[2], in_shape[3], in_shape[1]),
                (out_shape[2], out_shape[3], out_shape[1]))

    def _op_Conv(self, node):
        x, w_name = node.input[0], node.input[1]
        x, extra = self.padded_for_conv.get(x, (x, (0, 0)))    # a zero Pad before the conv: its padding
        if w_name not in self.consts:
            raise _node_error(node, "the weights are not constant")
        w = self.consts[w_name].astype(np.float32)
        bias = self.consts[node.input[2]].astype(np.float32) if len(node.input) > 2 and node.input[2] else \
            np.zeros(w.shape[0], np.float32)
        in_shape, out_shape, _, _ = self._spatial(node, x)     # checks the ranks
        nsp = len(in_shape) - 2
        kernel = list(w.shape[2:])
        strides = list(self._attr(node, "strides", [1] * nsp))
        dil = list(self._attr(node, "dilations", [1] * nsp))
        pad_top, pad_left = self._window(node, in_shape, out_shape, kernel, strides, dil)
        begins = [pad_left + extra[1]] if nsp == 1 else [pad_top + extra[0], pad_left + extra[1]]
        self._conv_from(node, x, node.output[0], w, bias, strides, dil, begins, self._attr(node, "group", 1))

    def _pool(self, node, kind, kernel, strides, pad):
        x = node.input[0]
        in_shape, out_shape, ihwc, ohwc = self._spatial(node, x)
        nsp = len(in_shape) - 2
        xin = self._as_layout(x, _channels_last(len(in_shape)), node)
        out = self._new_tensor(node.output[0], (1,) + (ohwc if nsp == 2 else ohwc[1:]), node.output[0])
        if nsp == 1:
            kernel, strides = [1] + list(kernel), [1] + list(strides)
        self._emit(kind, node, [xin], out, in_hwc=ihwc, out_hwc=ohwc, kernel=tuple(kernel),
                   stride=tuple(strides), pad=pad, act=NO_ACT)
        self.values[node.output[0]] = (out, _channels_last(len(out_shape)))

    def _op_MaxPool(self, node):
        self._local_pool(node, "max_pool")

    def _op_AveragePool(self, node):
        self._local_pool(node, "avg_pool")

    def _local_pool(self, node, kind):
        if len(node.output) > 1 and node.output[1]:
            raise _node_error(node, "the indices output of MaxPool is not supported")
        kernel = list(self._attr(node, "kernel_shape"))
        nsp = len(kernel)
        strides = list(self._attr(node, "strides", [1] * nsp))
        dil = list(self._attr(node, "dilations", [1] * nsp))
        if any(d != 1 for d in dil):
            raise _node_error(node, "dilated pooling is not supported yet")
        in_shape = self._shape(node.input[0], node)
        pad = self._window(node, in_shape, self._shape(node.output[0], node), kernel, strides, dil)
        if kind == "avg_pool" and self._attr(node, "count_include_pad", 0) and any(pad):
            return self._pool_padded(node, kind, kernel, strides, list(pad[2 - nsp:]))
        self._pool(node, kind, kernel, strides, pad)

    def _op_GlobalAveragePool(self, node):
        in_shape = self._shape(node.input[0], node)
        self._pool(node, "avg_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))

    def _op_ReduceMean(self, node):
        in_shape = self._shape(node.input[0], node)
        axes = self._attr(node, "axes")
        if axes is None and len(node.input) > 1 and node.input[1] in self.consts:
            axes = self.consts[node.input[1]].tolist()
        axes = sorted(a % len(in_shape) for a in (axes or range(len(in_shape))))
        if len(in_shape) not in (3, 4) or axes != list(range(2, len(in_shape))):
            return self._reduce(node, "mean")
        if self._attr(node, "keepdims", 1):
            self._pool(node, "avg_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))
            return
        # keepdims=0: pool to [1,1,(1,)C] then view as [1, C]
        pooled = SYNTHETIC + node.output[0] + "__pooled"    # edgec's own tensor: not an ONNX value
        self.shapes[pooled] = tuple(in_shape[:2]) + (1,) * (len(in_shape) - 2)
        fake = onnx.helper.make_node("GlobalAveragePool", [node.input[0]], [pooled], name=node.name)
        self._op_GlobalAveragePool(fake)
        self._view(node, pooled, node.output[0])

    # ---- dense -------------------------------------------------------------------------------
    def _dense(self, node, x, w_out_in, bias):
        xshape = self._shape(x, node)
        if int(np.prod(xshape[:-1])) != 1:
            return self._dense_rows(node, x, w_out_in, bias)
        tensor, perm = self._activation(x, node)
        if tensor in self.feature_perm:
            w_out_in = w_out_in[:, self.feature_perm[tensor]]
        elif not _same_order(xshape, perm, _identity(len(xshape))):
            tensor = self._as_layout(x, _identity(len(xshape)), node)
        oshape = self._shape(node.output[0], node)
        out = self._new_tensor(node.output[0], oshape, node.output[0])
        self._emit("fully_connected", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
                   bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT)
        self.values[node.output[0]] = (out, _identity(len(oshape)))

    def _op_Gemm(self, node):
        a, b = node.input[0], node.input[1]
        if b not in self.consts:
            raise _node_error(node, "the second operand (B) must be a constant weight matrix")
        if self._attr(node, "transA", 0):
            a = self._transposed(node, a)
        w = self.consts[b].astype(np.float32)
        w = w if self._attr(node, "transB", 0) else w.T
        w = w * float(self._attr(node, "alpha", 1.0))
        n = w.shape[0]
        bias = np.zeros(n, np.float32)
        if len(node.input) > 2 and node.input[2]:
            if node.input[2] not in self.consts:
                raise _node_error(node, "the bias (C) must be constant")
            c = self.consts[node.input[2]].astype(np.float32)
            if c.size != 1 and c.shape[-1] == n and int(np.prod(c.shape[:-1])) != 1:
                raise _node_error(node, f"a bias C of shape {list(c.shape)} that varies per row is not supported")
            bias = np.broadcast_to(c.reshape(-1)[-n:] if c.size > 1 else c.reshape(1), (n,)).copy()
            bias = bias * float(self._attr(node, "beta", 1.0))
        self._dense(node, a, w, bias)

    def _op_MatMul(self, node):
        a, b = node.input
        if a not in self.consts and b not in self.consts:
            return self._matmul(node, a, b, node.output[0])
        if b not in self.consts or self.consts[b].ndim < 2 or int(np.prod(self.consts[b].shape[:-2])) != 1:
            raise _node_error(node, "MatMul is supported as activation x constant 2-D matrix, or of two activations")
        w = self.consts[b].astype(np.float32).reshape(self.consts[b].shape[-2:]).T
        self._dense(node, a, w, np.zeros(w.shape[0], np.float32))

    # ---- folding into producers ---------------------------------------------------------------
    def _op_BatchNormalization(self, node):
        x = node.input[0]
        if self._attr(node, "training_mode", 0) or any(o for o in node.output[1:]):
            raise _node_error(node, "training-mode BatchNormalization is not supported (export in eval mode)")
        for i in node.input[1:5]:
            if i not in self.consts:
                raise _node_error(node, f"parameter '{i}' is not constant (training-mode BatchNorm?)")
        gamma, beta, mean, var = (self.consts[i].astype(np.float64) for i in node.input[1:5])
        eps = float(self._attr(node, "epsilon", 1e-5))
        s = gamma / np.sqrt(var + eps)
        shift = beta - mean * s
        prod = self._fusable_producer(x)
        if prod is not None and prod.kind in WEIGHT_AXIS and prod.attrs["act"] == NO_ACT:
            w = prod.attrs["weights"].astype(np.float64)
            if prod.kind == "depthwise_conv2d":
                w = w * s
            else:
                w = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
            prod.attrs["weights"] = w.astype(np.float32)
            prod.attrs.pop("weight_scale", None)     # a QDQ model's scales were for the unfolded weights
            prod.attrs["bias"] = (prod.attrs["bias"] * s + shift).astype(np.float32)
            self._rename_output(prod, x, node.output[0], self.values[x][1])
            return
        # A BatchNorm edgec cannot fold: a 1x1 depthwise convolution does the same.
        in_shape = self._shape(x, node)
        if in_shape[0] != 1:   # per-channel tables instead of a convolution over a batch of 1
            return self._per_channel_affine(node, x, s, shift)
        c = in_shape[1]
        hwc = (in_shape[2], in_shape[3], c) if len(in_shape) == 4 else (1, int(np.prod(in_shape[2:])), c)
        xin = self._as_layout(x, _channels_last(len(in_shape)), node)
        out = self._new_tensor(node.output[0], self.graph.tensors[xin].shape, node.output[0])
        self._emit("depthwise_conv2d", node, [xin], out, weights=s.reshape(1, 1, c).astype(np.float32),
                   bias=shift.astype(np.float32), in_hwc=hwc, out_hwc=hwc, kernel=(1, 1), stride=(1, 1),
                   dilation=(1, 1), pad=(0, 0), act=NO_ACT, depth_multiplier=1)
        self.values[node.output[0]] = (out, _channels_last(len(in_shape)))

    def _fuse_activation(self, node, lo, hi):
        x = node.input[0]
        prod = self._fusable_producer(x)
        if prod is None or prod.kind not in FUSABLE:
            if node.name in self.qdq["clips"]:   # a QDQ pair's saturation: the int8 tensor does it already
                return self._alias(node)
            return self._lut_activation(node, "clip", {"lo": lo, "hi": hi})
        a, b = prod.attrs["act"]
        prod.attrs["act"] = (max(a, lo), min(b, hi))
        self._rename_output(prod, x, node.output[0], self.values[x][1])

    def _op_Relu(self, node):
        self._fuse_activation(node, 0.0, math.inf)

    def _op_Clip(self, node):
        if self.opset < 11:
            lo, hi = self._attr(node, "min", -math.inf), self._attr(node, "max", math.inf)
        else:
            bounds = []
            for i, default in ((1, -math.inf), (2, math.inf)):
                name = node.input[i] if len(node.input) > i else ""
                if name and name not in self.consts:
                    raise _node_error(node, "Clip bounds must be constant")
                bounds.append(float(self.consts[name]) if name else default)
            lo, hi = bounds
        self._fuse_activation(node, lo, hi)

    def _op_Add(self, node):
        a, b = node.input
        if a in self.consts or b in self.consts:
            if not self._add_constant(node, b if a in self.consts else a, self.consts[a if a in self.consts else b]):
                self._binary(node, "add")
            return
        sa, sb = self._shape(a, node), self._shape(b, node)
        if sa != sb:
            return self._binary(node, "add")
        ta, perm = self._activation(a, node)
        tb = self._as_layout(b, perm, node)
        out = self._new_tensor(node.output[0], self.graph.tensors[ta].shape, node.output[0])
        self._emit("add", node, [ta, tb], out, act=NO_ACT)
        self.values[node.output[0]] = (out, perm)

    def _add_constant(self, node, x, c):
        """x + constant: becomes the bias of the Conv/Gemm producing x."""
        prod = self._fusable_producer(x)
        xshape = self._shape(x, node)
        per_channel = None
        try:
            full = np.broadcast_to(c.astype(np.float32), xshape).reshape(xshape[0], xshape[1], -1) \
                if len(xshape) >= 3 else np.broadcast_to(c.astype(np.float32), xshape).reshape(1, -1, 1)
            if np.all(full == full[:, :, :1]):
                per_channel = full[0, :, 0].copy()
        except ValueError:
            pass
        if prod is None or prod.kind not in WEIGHT_AXIS or prod.attrs["act"] != NO_ACT or per_channel is None \
                or tuple(self._shape(node.output[0], node)) != tuple(xshape):
            return False
        prod.attrs["bias"] = (prod.attrs["bias"] + per_channel).astype(np.float32)
        self._rename_output(prod, x, node.output[0], self.values[x][1])
        return True

    # ---- views and layout ----------------------------------------------------------------------
    def _alias(self, node):
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2] and (
                node.input[2] not in self.consts or bool(self.consts[node.input[2]])):
            raise _node_error(node, "training-mode Dropout is not supported (export the model in eval mode)")
        self.values[node.output[0]] = self._activation(node.input[0], node)

    _op_Identity = _alias
    _op_Dropout = _alias

    def _op_Transpose(self, node):
        tensor, perm = self._activation(node.input[0], node)
        t = self._attr(node, "perm", list(range(len(perm)))[::-1])
        self.values[node.output[0]] = (tensor, tuple(int(i) for i in np.argsort(t)[list(perm)]))

    def _view(self, node, x, y):
        """y = x viewed with another shape (Flatten, Reshape, Squeeze, Unsqueeze)."""
        xshape, yshape = self._shape(x, node), self._shape(y, node)
        tensor, perm = self._activation(x, node)
        if not _same_order(xshape, perm, _identity(len(xshape))):
            feeds_dense = all(u in ("Gemm", "MatMul") for u in self._real_uses(y)) and \
                len(yshape) == 2 and yshape[0] == 1
            if feeds_dense:
                idx = np.arange(int(np.prod(xshape))).reshape(xshape).transpose(perm).reshape(-1)
                out = self._new_tensor(y, yshape, y)
                self._emit("reshape", node, [tensor], out)
                self.feature_perm[out] = idx
                self.values[y] = (out, _identity(2))
                return
            q = view_layout(xshape, perm, yshape)     # the same bytes, read as y in another axis order?
            if q is not None:
                out = self._new_tensor(y, tuple(yshape[a] for a in q), y)
                self._emit("reshape", node, [tensor], out)
                self.values[y] = (out, q)
                return
            tensor = self._as_layout(x, _identity(len(xshape)), node)
        out = self._new_tensor(y, yshape, y)
        self._emit("reshape", node, [tensor], out)
        self.values[y] = (out, _identity(len(yshape)))

    def _op_Flatten(self, node):
        self._view(node, node.input[0], node.output[0])

    _op_Reshape = _op_Flatten
    _op_Squeeze = _op_Flatten
    _op_Unsqueeze = _op_Flatten

    def _op_Softmax(self, node):
        x = node.input[0]
        shape = self._shape(x, node)
        tensor, perm = self._activation(x, node)
        rank = len(shape)
        axis = self._attr(node, "axis", -1 if self.opset >= 13 else 1) % rank
        reduced = [axis] if self.opset >= 13 else list(range(axis, rank))
        phys = [a for a in perm if shape[a] != 1]
        tail = [a for a in phys if a in reduced]
        if phys[len(phys) - len(tail):] != tail or (self.opset < 13 and any(shape[a] != 1 for a in range(axis))):
            return self._softmax_general(node, "softmax")
        cols = int(np.prod([shape[a] for a in reduced]))
        out = self._new_tensor(node.output[0], self.graph.tensors[tensor].shape, node.output[0])
        self._emit("softmax", node, [tensor], out, rows=int(np.prod(shape)) // cols, cols=cols)
        self.values[node.output[0]] = (out, perm)

    def _op_Shape(self, node):  # reached only when the input is not constant: its shape still is
        shape = self._shape(node.input[0], node)
        start, end = self._attr(node, "start", 0), self._attr(node, "end", None)
        self.consts[node.output[0]] = np.array(shape[start:end], np.int64)

