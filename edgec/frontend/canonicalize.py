"""Stage 2: ONNX ModelProto -> canonical ir.Graph (the driver; the importers live in edgec/ops/).

What happens here:
- constants are folded (initializers, Constant, Shape of static tensors, and any
  node whose inputs are all constant, evaluated by onnx's reference runtime);
- every other node goes to its importer, `IMPORTERS[op_type](cx, node)` (edgec/ops/registry.py),
  a function in the family module of the canonical op kind it produces; the canonicalizer is
  the `cx` they build on: the graph, the ONNX values, their shapes and layouts, and the
  methods below without a leading underscore;
- operators the exporter wrote as several nodes (GELU, LayerNorm: edgec/frontend/decomposed.py) are read as
  the one node they are;
- Relu and Clip fuse into the op that produces their input, a BatchNormalization or a constant
  Add into the Conv/Gemm before it (the importers ask `fuse_activation`, `is_weighted`);
- NCHW graphs run channels-last: every tensor carries the permutation from its
  ONNX layout to its physical one, and data is only moved (`as_layout`) where a consumer
  needs another order;
- a node edgec cannot build is recorded as a problem and becomes a placeholder, so that a
  survey lists them all; at the end, unused ops are pruned and chains of index maps merged.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import numpy_helper

from edgec.errors import EdgecError, node_error
from edgec.frontend import decomposed, qdq, qdq16
from edgec.frontend.fold import static_shape
from edgec.frontend.loader import graph_inputs
from edgec.frontend.support import CONTROL_FLOW, Problem, problems_message
from edgec.ir import Graph, GraphBuilder, Op, Tensor
from edgec.ops import convert, matmul, movement, norm
from edgec.ops.registry import FUSABLE, GRAPH_IMPORTERS, IMPORTERS, INT4_KINDS, REGISTRY, SUPPORTED_OPS, WEIGHT_AXIS




def survey(model: onnx.ModelProto, name: str) -> tuple[Graph, list[Problem]]:
    """The canonical graph and every node edgec cannot build, in graph order: unsupported operators and
    nodes beyond a limit. Canonicalization goes on past each one (their outputs become placeholder ops
    of kind 'unsupported'), so the graph still gives MACs and an arena estimate of the rest."""
    canon = _Canonicalizer(model, name)
    graph = canon.run()
    return graph, canon.problems


INPUT_LAYOUTS = ("nchw", "nhwc")


def canonicalize(model: onnx.ModelProto, name: str, input_layout: str | None = None) -> Graph:
    """input_layout "nhwc": an NCHW model's input taken channels-last (its first Conv reads it as it is: no input
    transpose on the device); "nchw" or None: the input in the model's own layout."""
    canon = _Canonicalizer(model, name, input_layout)
    graph = canon.run()
    if canon.problems:
        raise EdgecError(problems_message(canon.problems))
    return graph


class _Canonicalizer:
    """The state of one canonicalization, and the context (`cx`) the importers build on."""

    def __init__(self, model: onnx.ModelProto, name: str, input_layout: str | None = None):
        self.model = model
        self.input_layout = input_layout
        self.graph = GraphBuilder(name)        # handed out finished (immutable) by run()
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
        # (index in the model, node): decomposed GELUs and LayerNorms as one node each
        self.nodes, fused_consts = decomposed.fuse(model, self.consts, self.shapes, self.opset)
        self.consts.update(fused_consts)
        self.uses: dict[str, list[str]] = {}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for _, node in self.nodes:
            for i in node.input:
                self.uses.setdefault(i, []).append(node.op_type)
                self.readers.setdefault(i, []).append(node)
        for o in model.graph.output:
            self.uses.setdefault(o.name, []).append("<graph output>")
        self.qdq = qdq.info(model)            # a QDQ model's own quantization (edgec/frontend/qdq.py)
        wide = set(self.qdq.get("int16", []))      # int16 activations (ORT's A16W8): their 16x8 grids
        self.graph.fixed_qparams = {k: qdq16.grid16(s, z) if k in wide else (float(s), int(z))
                                    for k, (s, z) in self.qdq["activations"].items()}
        self.problems: list[Problem] = []     # nodes edgec cannot build (see _node_or_problem)
        self.token_ids: set[str] = set()       # graph inputs read as nn.Embedding's token ids (int32 ports)
        self.poisoned: set[str] = set()       # values downstream of a problem, shape unknown
        self.done: set[int] = set()           # id() of the nodes canonicalized so far
        self.padded_for_conv: dict[str, tuple[str, tuple[int, int]]] = {}   # Pad output -> (input, pads)

    # ---- the context importers build on (edgec/ops/<family>.py) ---------------------------
    def attr(self, node: onnx.NodeProto, name: str, default=None):
        """The value of a node's attribute, or `default`."""
        for a in node.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default

    def const_input(self, node: onnx.NodeProto, i: int, default=None):
        """The constant value of input i, `default` when it is absent; an error when it is computed."""
        if len(node.input) <= i or not node.input[i]:
            return default
        if node.input[i] not in self.consts:
            raise node_error(node, f"input '{node.input[i]}' must be a constant (known at build time)")
        return self.consts[node.input[i]]

    def is_weighted(self, kind: str) -> bool:
        """Ops of this kind hold constant weights and a bias (a BatchNorm or constant Add folds into them)."""
        return kind in WEIGHT_AXIS

    def weight_axis(self, kind: str) -> int:
        """The output-channel axis of a weighted kind's weights."""
        return WEIGHT_AXIS[kind]

    def new_tensor(self, name: str, shape: tuple[int, ...], source: str) -> str:
        """A new canonical tensor of physical `shape` holding ONNX value `source` (named `name`, made unique)."""
        if any(int(d) == 0 for d in shape):
            raise EdgecError(f"tensor '{source}' is empty (shape {list(shape)}); edgec needs at least one element")
        base, k = name, 1
        while name in self.graph.tensors:
            name, k = f"{base}_{k}", k + 1
        self.graph.tensors[name] = Tensor(name=name, shape=tuple(int(d) for d in shape), source=source)
        return name

    def emit(self, kind: str, node: onnx.NodeProto, inputs: list[str], out: str, **attrs) -> Op:
        """Append an op of `kind` made from `node` (a QDQ model's weight scales attached to weighted ones)."""
        op = Op(kind=kind, name=node.name or kind, inputs=tuple(inputs), output=out, attrs=attrs)
        if kind in WEIGHT_AXIS and self.qdq["weights"]:
            scale = qdq.weight_scale(self.qdq, node, WEIGHT_AXIS[kind], attrs["weights"])
            if scale is not None:
                op.attrs["weight_scale"] = scale
                if qdq.weight_bits(self.qdq, node) == 4 and kind in INT4_KINDS:   # the file's 4-bit integers:
                    op.attrs.update(file_weight_bits=4, weight_bits=4)       # stored packed (scheme.weighted)
        self.graph.ops.append(op)
        return op

    def shape(self, value: str, node: onnx.NodeProto) -> tuple[int, ...]:
        """The static ONNX shape of `value` (a constant's too); an error naming `node` when it is not static."""
        if value not in self.shapes and value in self.consts:     # (folded at load or here: no value_info)
            return tuple(int(d) for d in np.shape(self.consts[value]))
        if value not in self.shapes:
            raise node_error(node, f"the shape of '{value}' is not static; export the model with fixed shapes")
        return self.shapes[value]

    def activation(self, value: str, node: onnx.NodeProto) -> tuple[str, tuple[int, ...]]:
        """(canonical tensor, permutation ONNX layout -> physical layout) holding `value`; an error if none does."""
        if value not in self.values:
            raise node_error(node, f"input '{value}' is not a tensor edgec can compute on the device")
        return self.values[value]

    def as_layout(self, value: str, want: tuple[int, ...], node: onnx.NodeProto) -> str:
        """The canonical tensor holding ONNX value `value` in physical layout `want` (moved once, then cached)."""
        tensor, perm = self.activation(value, node)
        if perm == want:
            return tensor
        key = (tensor, want)
        if key not in self.layout_cache:
            self.layout_cache[key] = movement.relayout(self, value, tensor, perm, want, node)
        return self.layout_cache[key]

    def real_uses(self, value: str) -> list[str]:
        """Op types reading `value`, looking through Identity/Dropout (and a QDQ pair's Clip after a view)."""
        uses = []
        for node in self.readers.get(value, []):
            if node.op_type in ("Identity", "Dropout") or node.name in self.qdq["clips"]:
                uses += self.real_uses(node.output[0])
            else:
                uses.append(node.op_type)
        return uses + [u for u in self.uses.get(value, []) if u == "<graph output>"]

    def single_use(self, value: str) -> bool:
        """`value` is read by one node only (or is only the graph output)."""
        return len(self.uses.get(value, [])) == 1

    def fusable_producer(self, value: str) -> Op | None:
        """The op producing `value` if the next op may be folded into it."""
        if value not in self.values or not self.single_use(value):
            return None
        tensor, _ = self.values[value]
        if self.read_as_another_value(value, tensor):
            return None
        op = self.graph.ops[-1] if self.graph.ops else None
        if op is None or op.output != tensor:
            op = self.graph.producer(tensor)
        return op

    def inherited_grid(self, value: str) -> tuple[float, int] | None:
        """The QDQ file's grid (scale, zero point) the int8 tensor holding `value` takes from further up when the
        ops producing it keep their input's quantization (Slice, Reshape, Transpose, MaxPool after a quantized
        tensor); None when its producer sets its own (or no file grid is met; a pool that may take its own,
        edgec/quant/quantize.py own_scales)."""
        fixed, op = self.graph.fixed_qparams, self.graph.producer(self.values[value][0])
        while op is not None and op.inputs and REGISTRY[op.kind].qparams == "input" \
                and REGISTRY[op.kind].own_scale is None:
            src = self.graph.tensors[op.inputs[0]]
            if src.source in fixed:
                return fixed[src.source]
            op = self.graph.producer(src.name)
        return None

    def read_as_another_value(self, value: str, tensor: str) -> bool:
        """Another ONNX value held in the same tensor (a view: a Transpose of a size-1 axis, a Reshape, an Identity)
        is still to be read, or is a graph output: fusing into the producer would change what that reader sees."""
        return any(v != value and t == tensor and ("<graph output>" in self.uses.get(v, [])
                                                   or any(id(r) not in self.done for r in self.readers.get(v, [])))
                   for v, (t, _) in self.values.items())

    def rename_output(self, op: Op, value: str, new_source: str, perm: tuple[int, ...]) -> None:
        """`op` now produces ONNX value `new_source` (an op was fused into it)."""
        t = self.graph.tensors.pop(op.output)
        self.values.pop(value, None)
        name = self.new_tensor(new_source, t.shape, new_source)
        self.graph.replace_op(op, dataclasses.replace(op, output=name))
        self.values[new_source] = (name, perm)

    def fuse_activation(self, node: onnx.NodeProto, lo: float, hi: float) -> bool:
        """Clamp the op producing node's input to [lo, hi] (a Relu/Clip fused into it), if it can be."""
        x = node.input[0]
        prod = self.fusable_producer(x)
        if prod is None or prod.kind not in FUSABLE:
            return False
        a, b = prod.attrs["act"]
        prod.attrs["act"] = (max(a, lo), min(b, hi))
        self.rename_output(prod, x, node.output[0], self.values[x][1])
        return True

    def _token_ids(self, name: str, elem: int) -> bool:
        """Whether an integer input is read only as the indices of Gathers of constant tables (nn.Embedding's
        token ids): an int32 port (edgec/ops/gather.py import_onnx_embedding)."""
        users = [n for n in self.model.graph.node if name in n.input]
        return elem in (onnx.TensorProto.INT64, onnx.TensorProto.INT32) and bool(users) and all(
            n.op_type == "Gather" and list(n.input).index(name) == 1 and n.input[0] in self.consts for n in users)

    # ---- main loop -----------------------------------------------------------------------
    def run(self) -> Graph:
        inputs = graph_inputs(self.model)
        for k, inp in enumerate(inputs):
            shape = self.shapes.get(inp.name)
            elem = inp.type.tensor_type.elem_type
            ids = elem != onnx.TensorProto.FLOAT and self._token_ids(inp.name, elem) and shape is not None
            if ids:     # nn.Embedding's token ids (int64 or int32): an int32 port (edgec/ops/gather.py)
                self.token_ids.add(inp.name)
            elif elem != onnx.TensorProto.FLOAT:
                raise EdgecError(f"input '{inp.name}' is {onnx.TensorProto.DataType.Name(elem)}; edgec takes float "
                                 "inputs, int64/int32 token ids read only by Gathers of constant tables (nn.Embedding), "
                                 "and uint8/int8 inputs read only by a DequantizeLinear with a constant per-tensor "
                                 "scale (a QDQ model)")
            perm = self._input_perm(inp.name, shape, len(inputs))
            name = self.new_tensor(inp.name, tuple(shape[a] for a in perm), inp.name)
            if ids:
                self.graph.tensors[name] = dataclasses.replace(self.graph.tensors[name], dtype="int32")
            self.values[inp.name] = (name, perm)
            if perm != movement.identity(len(shape)):
                self.graph.input_perm = perm
            if self.qdq.get("integer_inputs", {}).get(inp.name) == "uint8":     # the device takes the bytes
                name = self._uint8_port(inp.name, self.graph.tensors[name].shape, name)
            if k == 0:
                self.graph.input = name
                self.graph.input_onnx_shape = shape
            else:
                self.graph.more_inputs.append(name)
            if len(inputs) > 1 or len(self.model.graph.output) > 1:
                self.graph.port_names[name], self.graph.port_shapes[name] = inp.name, shape
        taken = any(take(self, self.model) for take in GRAPH_IMPORTERS)   # e.g. an MFCC front end as one op
        for i, node in ([] if taken else self.nodes):
            self._node_or_problem(i, node)
        if self.problems:   # the graph is only surveyed (edgec inspect): no output checks
            self.graph.output = self.values.get(self.model.graph.output[0].name, ("", None))[0]
            return self.graph.finish()
        for k, vi in enumerate(self.model.graph.output):
            self._output(k, vi.name)
        self.graph.prune()
        movement.merge_remaps(self.graph)
        norm.normalize_selected_rows(self.graph)    # a ViT's class token: normalized alone
        matmul.read_through_views(self.graph)    # attention's q/k/v slices and 1/sqrt(d): no copies
        movement.ensure_kernel(self)
        qdq16.widen(self.graph, set(self.qdq.get("int16", [])))    # a QDQ file's int16 activations: 16x8
        return self.graph.finish()

    def _input_perm(self, value: str, shape: tuple[int, ...], n_inputs: int) -> tuple[int, ...]:
        """The input's physical axis order: channels-last with --input-layout nhwc, else its ONNX order."""
        if self.input_layout in (None, "nchw"):
            return movement.identity(len(shape))
        if self.input_layout != "nhwc":
            raise EdgecError(f"--input-layout {self.input_layout}: use one of {', '.join(INPUT_LAYOUTS)}")
        if n_inputs > 1 or len(shape) < 3:
            raise EdgecError(f"--input-layout nhwc: input '{value}' is {list(shape)}"
                             + (" and the model has several inputs" if n_inputs > 1 else "")
                             + "; it applies to a model with one NCHW input of rank 3 or more (N, C, spatial...)")
        return movement.channels_last(len(shape))

    def _uint8_port(self, value: str, shape: tuple[int, ...], int8: str) -> str:
        """A QDQ model's uint8 input (edgec/frontend/qdq.py): a uint8 tensor (the same grid, zero point + 128)
        converted to the int8 tensor the graph reads by a `quantize` op; returns the uint8 tensor."""
        port = self.new_tensor(value, shape, value)
        self.graph.retensor(port, dtype="uint8")
        self.emit(convert.QUANTIZE_KIND, onnx.helper.make_node("Identity", [value], [value], name=f"{value} (uint8 input)"),
                  [port], int8)
        return port

    def _output(self, k: int, out: str) -> None:
        """The model's k-th output, in its ONNX layout."""
        if out in self.consts:
            raise EdgecError(f"output '{out}' is a constant: the model computes nothing from its input")
        oshape = self.shape(out, self.model.graph.node[-1])
        tensor = self.as_layout(out, movement.identity(len(oshape)), self.model.graph.node[-1])
        if tensor in self.graph.inputs:
            raise EdgecError(f"output '{out}' is the input itself: the model computes nothing")
        if tensor in self.graph.outputs[:k]:
            raise EdgecError(f"output '{out}' is the same tensor as an earlier output; export the model with "
                             "each output computed once")
        if self.qdq.get("integer_outputs", {}).get(out) == "uint8":    # a QDQ file's uint8 output: the device's too
            port = self.new_tensor(f"{out} (uint8)", self.graph.tensors[tensor].shape, out)
            self.graph.retensor(port, dtype="uint8")
            node = onnx.helper.make_node("Identity", [out], [out], name=f"{out} (uint8 output)")
            self.emit(convert.QUANTIZE_KIND, node, [tensor], port)
            tensor = port
        if k == 0:
            self.graph.output, self.graph.output_onnx_shape = tensor, oshape
        else:
            self.graph.more_outputs.append(tensor)
        if len(graph_inputs(self.model)) > 1 or len(self.model.graph.output) > 1:
            self.graph.port_names[tensor], self.graph.port_shapes[tensor] = out, oshape

    def _node_or_problem(self, index: int, node: onnx.NodeProto) -> None:
        """Canonicalize one node; a node edgec cannot build is recorded as a problem and the survey goes
        on past it (its outputs become placeholders, so every later problem is found too)."""
        foldable = node.input and all(i in self.consts or i == "" for i in node.input) and \
            node.op_type not in CONTROL_FLOW
        if (node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS) and not foldable:
            # named even after an earlier problem: an operator edgec lacks is in the way whatever precedes it
            self.problems.append(Problem(self.model, index, node))
            return self._placeholder(node)
        try:
            self._node(node)
        except EdgecError as exc:
            if not any(i in self.poisoned for i in node.input):   # else: a consequence of an earlier problem
                self.problems.append(Problem(self.model, index, node, str(exc)))
            self._placeholder(node)
        finally:
            self.done.add(id(node))

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
            out = self.new_tensor(o, tuple(shape) or (1,), o)
            self.emit("unsupported", node, ins, out)
            self.values[o] = (out, movement.identity(len(shape)))

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
            if op == "Shape":
                self._shape_constant(node)
            else:
                IMPORTERS[op](self, node)
        except KeyError as exc:
            if exc.args and exc.args[0] in node.input:   # a weight, bias or shape computed at run time
                raise node_error(node, f"input '{exc.args[0]}' must be a constant (an initializer) for edgec; "
                                       "export the model with constant folding") from None
            raise
        except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError) as exc:
            # shapes, attributes or constants that contradict each other in a model the ONNX checker let
            # through (found by tests/test_fuzz.py): refuse the node instead of failing inside NumPy
            raise node_error(node, f"inconsistent shapes, attributes or constants ({type(exc).__name__}: "
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
            raise node_error(node, f"could not fold this constant computation ({exc})") from None
        for o, r in zip(node.output, results):
            self.consts[o] = np.asarray(r)

    def _shape_constant(self, node: onnx.NodeProto) -> None:
        """Shape of a computed tensor (reached only when the input is not constant): its shape still is."""
        shape = self.shape(node.input[0], node)
        start, end = self.attr(node, "start", 0), self.attr(node, "end", None)
        self.consts[node.output[0]] = np.array(shape[start:end], np.int64)

