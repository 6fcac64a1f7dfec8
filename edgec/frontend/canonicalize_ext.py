"""Canonicalization of the ONNX operators beyond first light (a mixin of canonicalize._Canonicalizer).

Every ONNX value is held by a canonical tensor plus a permutation from its ONNX layout to the
physical one (see canonicalize.py). The operators here become a few generic canonical ops:
- `lut`: any elementwise function of one tensor, with at most a per-axis constant
  (activations, x op constant, PRelu, an unfoldable BatchNorm);
- `binary`: broadcasting add/sub/mul/div/max/min of two tensors or a tensor and a constant;
- `remap`: data movement as a separable index map (Slice, Pad, Gather, Tile, Expand,
  DepthToSpace, SpaceToDepth, nearest Resize, real transposes, ConvTranspose's zero insertion);
- `concat`, `reduce`, `group_conv2d`, `fully_connected_rows`, `matmul`, `log_softmax`, `resize_linear`.
Each is described by float attributes (run by edgec/floatref.py) and gets its integer
parameters in edgec/quantize_ext.py.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from edgec.ops import elementwise
from edgec.errors import EdgecError
from edgec.ir import SYNTHETIC
from edgec.ops.movement import INVALID, RANK

NO_ACT = (-math.inf, math.inf)
MAX_LUT_TABLES = 64          # per-axis tables (256 bytes each) before a constant operand is stored instead
BINARY_FNS = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min", "Pow": "pow"}
CONST_FNS = {  # (op, constant is the first operand) -> lut function
    ("add", False): "add_c", ("add", True): "add_c", ("mul", False): "mul_c", ("mul", True): "mul_c",
    ("sub", False): "sub_c", ("sub", True): "rsub_c", ("div", False): "div_c", ("div", True): "rdiv_c",
    ("max", False): "max_c", ("max", True): "max_c", ("min", False): "min_c", ("min", True): "min_c",
    ("pow", False): "pow_c", ("pow", True): "rpow_c",
}
EXT_OPS = {
    "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Celu", "Selu", "Gelu",
    "Softplus", "Softsign", "Mish", "Swish", "ThresholdedRelu", "Shrink", "Exp", "Log", "Sqrt",
    "Reciprocal", "Abs", "Neg", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
    "Asinh", "Acosh", "Atanh", "Floor", "Ceil", "Round", "Sign",
    "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum", "Mean",
    "Concat", "Split", "Slice", "Pad", "Gather", "Tile", "Expand", "DepthToSpace", "SpaceToDepth",
    "Resize", "Upsample", "ConvTranspose", "GlobalMaxPool", "ReduceSum", "ReduceMax", "ReduceMin",
    "ArgMax", "ArgMin", "LogSoftmax", "Cast", "ConstantOfShape", "Range", "CastLike",
    "ReduceL1", "ReduceSumSquare", "QuantizeLinear", "DequantizeLinear",
}


def _node_error(node: onnx.NodeProto, what: str) -> EdgecError:
    return EdgecError(f"node '{node.name}' ({node.op_type}): {what}")


def _contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for d in reversed(list(shape)):
        strides.append(acc)
        acc *= int(d)
    return strides[::-1]


class ExtOps:
    """Mixin: needs the _Canonicalizer's helpers (_shape, _activation, _as_layout, _emit...)."""

    # ---- helpers -------------------------------------------------------------------------
    def _axis_strides(self, value, node):
        """(tensor, perm, stride of each ONNX axis in the tensor's physical layout)."""
        tensor, perm = self._activation(value, node)
        shape = self._shape(value, node)
        phys = _contiguous_strides([shape[a] for a in perm])
        strides = [0] * len(shape)
        for k, a in enumerate(perm):
            strides[a] = phys[k]
        return tensor, perm, strides

    def _remap(self, node, tensor, y, dims, tables, pad=0.0, source=None) -> str:
        """Emit a remap writing a new tensor of physical shape dims (tables per physical axis)."""
        dims, tables = list(dims), [np.asarray(t, np.int64) for t in tables]
        shape = tuple(int(d) for d in dims) or (1,)
        while len(dims) > RANK:     # fold a size-1 axis into another axis' offsets
            if 1 not in dims:
                raise _node_error(node, f"data movement over {len(dims)} non-unit dimensions (at most {RANK})")
            k = dims.index(1)
            base = int(tables[k][0])
            del dims[k], tables[k]
            tables[0] = np.where((tables[0] >= 0) & (base >= 0), tables[0] + base, INVALID)
        out = self._new_tensor(y, shape, source or y)
        self._emit("remap", node, [tensor], out, dims=tuple(dims), tables=tables, pad=float(pad))
        return out

    def _remap_axes(self, node, x, y, index_fns, pad=0.0) -> None:
        """y[j] = x[idx_a(j_a) for each axis a] (same rank, -1 = padding); y keeps x's layout."""
        tensor, perm, strides = self._axis_strides(x, node)
        yshape = self._shape(y, node)
        tables = []
        for a in perm:
            idx = np.asarray(index_fns[a](yshape[a]), np.int64)
            tables.append(np.where(idx >= 0, idx * strides[a], INVALID))
        out = self._remap(node, tensor, y, [yshape[a] for a in perm], tables, pad)
        self.values[y] = (out, perm)

    def _ensure_kernel(self) -> None:
        """A graph of views only (a Reshape model) still needs one kernel call: copy the bytes."""
        if all(op.kind == "reshape" for op in self.graph.ops):
            node = self.model.graph.node[-1]
            src = self.graph.tensors[self.graph.output]
            out = self._remap(node, self.graph.output, src.name + "__copy", [src.size], [np.arange(src.size)],
                              source=src.source)
            self.graph.output = out

    def _merge_remaps(self) -> None:
        """A remap reading only another remap's output becomes one remap (Slice -> Slice -> Resize, Pad ->
        Slice, ... as exporters write them): one pass over the data instead of several."""
        g = self.graph
        merged = True
        while merged:
            merged = False
            for op2 in g.ops:
                src = op2.inputs[0] if op2.kind == "remap" else None
                op1 = g.producer(src) if src else None
                if op1 is None or op1.kind != "remap" or src == g.output or len(g.consumers(src)) != 1:
                    continue
                both = compose_remaps(op1.attrs, op2.attrs)
                if both is None:
                    continue
                op2.attrs["tables"], op2.attrs["pad"] = both
                op2.inputs = list(op1.inputs)
                g.ops.remove(op1)
                del g.tensors[src]
                merged = True
                break

    def _in_layout(self, value, rank, perm, node):
        """A tensor holding `value` (rank <= `rank`, leading 1s added) laid out in the order `perm`."""
        shape = self._shape(value, node)
        k = rank - len(shape)
        padded = (1,) * k + tuple(shape)
        tensor, own = self._activation(value, node)
        own_ext = tuple(range(k)) + tuple(p + k for p in own)
        if _same(padded, own_ext, perm):
            return tensor
        ident = self._as_layout(value, tuple(range(len(shape))), node)
        if _same(padded, tuple(range(rank)), perm):
            return ident
        strides = _contiguous_strides(padded)
        tables = [np.arange(padded[a]) * strides[a] for a in perm]
        return self._remap(node, ident, f"{value}__perm", [padded[a] for a in perm], tables,
                           source=self.graph.tensors[tensor].source)

    def _const_input(self, node, i, default=None):
        if len(node.input) <= i or not node.input[i]:
            return default
        if node.input[i] not in self.consts:
            raise _node_error(node, f"input '{node.input[i]}' must be a constant (known at build time)")
        return self.consts[node.input[i]]

    def _lut(self, node, x, y, fn, params=None, consts=None, count=1, inner=1) -> None:
        tensor, perm = self._activation(x, node)
        out = self._new_tensor(y, self.graph.tensors[tensor].shape, y)
        self._emit("lut", node, [tensor], out, fn=fn, fparams=dict(params or {}),
                   consts=None if consts is None else np.asarray(consts, np.float64), count=count, inner=inner)
        self.values[y] = (out, perm)

    # ---- elementwise -----------------------------------------------------------------------
    def _unary(self, node):
        fn, attrs = elementwise.UNARY_ONNX[node.op_type]
        params = {}
        for attr, (pname, default) in attrs.items():
            v = self._attr(node, attr, default)
            params[pname] = v.decode() if isinstance(v, bytes) else v
        if node.op_type == "Swish":
            params = {}
            alpha = float(self._attr(node, "alpha", 1.0))
            if alpha != 1.0:
                raise _node_error(node, "Swish with alpha != 1 is not supported")
        self._lut(node, node.input[0], node.output[0], fn, params)

    def _op_Sigmoid(self, node):
        self._unary(node)

    def _op_HardSigmoid(self, node):
        self._unary(node)

    def _op_Mul(self, node):
        a, b = node.input
        if a not in self.consts and b not in self.consts and self._fuse_gate(node):
            return
        self._binary(node, "mul")

    def _fuse_gate(self, node) -> bool:
        """x * Sigmoid(x) -> one SiLU table; x * HardSigmoid(x) -> HardSwish."""
        for x, s in (node.input, node.input[::-1]):
            if s not in self.values or x not in self.values or not self._single_use(s):
                continue
            prod = self.graph.producer(self.values[s][0])
            tx, px = self.values[x]
            if prod is None or prod.kind != "lut" or prod.inputs != [tx] or self.values[s][1] != px:
                continue
            if prod.attrs["fn"] == "sigmoid":
                prod.attrs["fn"] = "silu"
            elif prod.attrs["fn"] == "hard_sigmoid":
                prod.attrs["fn"] = "hard_swish"
            else:
                continue
            self._rename_output(prod, s, node.output[0], px)
            return True
        return False

    def _op_PRelu(self, node):
        slope = self._const_input(node, 1)
        self._const_operand(node, node.input[0], slope.astype(np.float64), "prelu")

    def _variadic(self, node, op, y=None):
        """Sum/Max/Min of n tensors: a chain of binary ops (intermediates are edgec's own tensors)."""
        y = y or node.output[0]
        if len(node.input) == 1:
            self.values[y] = self._activation(node.input[0], node)
            return
        acc = node.input[0]
        for k, nxt in enumerate(node.input[1:]):
            last = k == len(node.input) - 2
            out = y if last else f"{SYNTHETIC}{y}__{k}"
            if not last:
                self.shapes[out] = tuple(np.broadcast_shapes(self._shape(acc, node), self._shape(nxt, node)))
            self._binary(onnx.helper.make_node(node.op_type, [acc, nxt], [out], name=node.name), op)
            acc = out

    def _op_Sum(self, node):
        self._variadic(node, "add")

    def _op_Max(self, node):
        self._variadic(node, "max")

    def _op_Min(self, node):
        self._variadic(node, "min")

    def _op_Mean(self, node):
        if len(node.input) == 1:
            return self._alias(node)
        mid = f"{SYNTHETIC}{node.output[0]}__sum"
        self.shapes[mid] = self._shape(node.output[0], node)
        self._variadic(node, "add", mid)
        self._lut(node, mid, node.output[0], "mul_c", consts=np.array([1.0 / len(node.input)]))

    def _binary_node(self, node):
        self._binary(node, BINARY_FNS[node.op_type])

    _op_Sub = _op_Div = _op_Pow = _binary_node

    def _binary(self, node, op, source=None):
        if len(node.input) != 2:
            raise _node_error(node, f"{node.op_type} of {len(node.input)} tensors is not supported (two)")
        a, b = node.input
        if a in self.consts or b in self.consts:
            first = a in self.consts
            x, c = (b, self.consts[a]) if first else (a, self.consts[b])
            return self._const_operand(node, x, np.asarray(c, np.float64), CONST_FNS[(op, first)],
                                       op=op, const_first=first)
        if op == "pow":
            raise _node_error(node, "Pow of two tensors is not supported (a constant exponent is)")
        y = node.output[0]
        yshape = self._shape(y, node)
        r = len(yshape)
        sa, sb = self._shape(a, node), self._shape(b, node)
        perm = self._activation(a if len(sa) == r else b, node)[1]
        ta, tb = self._in_layout(a, r, perm, node), self._in_layout(b, r, perm, node)
        pa = tuple(((1,) * (r - len(sa)) + tuple(sa))[p] for p in perm)
        pb = tuple(((1,) * (r - len(sb)) + tuple(sb))[p] for p in perm)
        if r > RANK:
            raise _node_error(node, f"broadcasting over {r} dimensions is not supported (at most {RANK})")
        out = self._new_tensor(y, tuple(yshape[p] for p in perm) or (1,), source or y)
        self._emit("binary", node, [ta, tb], out, op=op, a_shape=pa, b_shape=pb, const=None, const_first=False,
                   act=NO_ACT)
        self.values[y] = (out, perm)

    def _const_operand(self, node, x, c, fn, op=None, const_first=False):
        """x (op) constant: a table (per axis if the constant varies along one), else a stored operand."""
        y = node.output[0]
        xshape, yshape = self._shape(x, node), self._shape(y, node)
        tensor, perm = self._activation(x, node)
        r = len(xshape)
        if tuple(xshape) == tuple(yshape) and c.ndim <= r:
            cphys = c.reshape((1,) * (r - c.ndim) + c.shape).transpose(perm)
            phys = [xshape[p] for p in perm]
            varying = [k for k in range(r) if cphys.shape[k] > 1]
            if not varying:
                return self._lut(node, x, y, fn, consts=cphys.reshape(1))
            lo, hi = varying[0], varying[-1]
            if all(k in varying or phys[k] == 1 for k in range(lo, hi + 1)):
                count = int(np.prod([phys[k] for k in varying]))
                if count <= MAX_LUT_TABLES:
                    return self._lut(node, x, y, fn, consts=cphys.reshape(-1), count=count,
                                     inner=int(np.prod(phys[hi + 1:], dtype=np.int64)))
        if op is None or op == "pow":
            raise _node_error(node, f"a constant operand of shape {list(c.shape)} that varies along several "
                                    "axes is supported only for Add/Sub/Mul/Div/Max/Min")
        ry = len(yshape)
        if ry > RANK:
            raise _node_error(node, f"broadcasting over {ry} dimensions is not supported (at most {RANK})")
        perm_y = tuple(range(ry - r)) + tuple(p + ry - r for p in perm)
        tx = self._in_layout(x, ry, perm_y, node)
        cfull = c.reshape((1,) * (ry - c.ndim) + c.shape).transpose(perm_y)
        px = tuple(((1,) * (ry - r) + tuple(xshape))[p] for p in perm_y)
        out = self._new_tensor(y, tuple(yshape[p] for p in perm_y) or (1,), y)
        self._emit("binary", node, [tx], out, op=op, a_shape=cfull.shape if const_first else px,
                   b_shape=px if const_first else cfull.shape, const=cfull.astype(np.float32),
                   const_first=const_first, act=NO_ACT)
        self.values[y] = (out, perm_y)

    def _per_channel_affine(self, node, x, scale, shift):
        """y = x * scale[c] + shift[c] along ONNX axis 1: one table per channel."""
        tensor, perm = self._activation(x, node)
        shape = self._shape(x, node)
        k = perm.index(1)
        inner = int(np.prod([shape[a] for a in perm[k + 1:]], dtype=np.int64))
        self._lut(node, x, node.output[0], "affine", consts=np.stack([scale, shift], axis=1),
                  count=shape[1], inner=inner)

    def _lut_activation(self, node, fn, params):
        """An activation with no producer to fuse into: a table."""
        self._lut(node, node.input[0], node.output[0], fn, params)

    # ---- shape and data movement -------------------------------------------------------------
    def _op_Concat(self, node):
        y = node.output[0]
        yshape = self._shape(y, node)
        r = len(yshape)
        axis = int(self._attr(node, "axis")) % r
        inputs = [i for i in node.input if i and int(np.prod(self._shape(i, node))) > 0]
        for i in inputs:
            if i in self.consts:
                raise _node_error(node, f"concatenating the constant '{i}' is not supported")
        if len(inputs) == 1:
            self.values[y] = self._activation(inputs[0], node)
            return
        perm = self._activation(inputs[0], node)[1]
        tensors = [self._in_layout(i, r, perm, node) for i in inputs]
        k = perm.index(axis)
        phys = [yshape[p] for p in perm]
        outer = int(np.prod(phys[:k], dtype=np.int64))
        chunks = [int(np.prod([self._shape(i, node)[p] for p in perm][k:], dtype=np.int64)) for i in inputs]
        out = self._new_tensor(y, tuple(phys), y)
        self._emit("concat", node, tensors, out, outer=outer, chunks=chunks)
        self.values[y] = (out, perm)

    def _op_Split(self, node):
        x = node.input[0]
        shape = self._shape(x, node)
        axis = int(self._attr(node, "axis", 0)) % len(shape)
        start = 0
        for y in node.output:
            n = self._shape(y, node)[axis] if y else 0
            if y:
                s = start
                fns = [(lambda m: np.arange(m)) for _ in shape]
                fns[axis] = lambda m, s=s: s + np.arange(m)
                self._remap_axes(node, x, y, fns)
            start += n

    def _op_Slice(self, node):
        x = node.input[0]
        shape = self._shape(x, node)
        r = len(shape)
        if self.opset < 10:
            starts, ends = self._attr(node, "starts"), self._attr(node, "ends")
            axes, steps = self._attr(node, "axes", list(range(len(starts)))), [1] * len(starts)
        else:
            starts, ends = self._const_input(node, 1).tolist(), self._const_input(node, 2).tolist()
            axes = self._const_input(node, 3, np.arange(len(starts))).tolist()
            steps = self._const_input(node, 4, np.ones(len(starts), np.int64)).tolist()
        first = [0] * r
        step = [1] * r
        for s, e, a, t in zip(starts, ends, axes, steps):
            a %= r
            n = shape[a]
            if t > 0:
                first[a] = min(max(s + n if s < 0 else s, 0), n)
            else:
                first[a] = min(max(s + n if s < 0 else s, 0), n - 1)
            step[a] = t
        fns = [(lambda m, a=a: first[a] + step[a] * np.arange(m)) for a in range(r)]
        self._remap_axes(node, x, node.output[0], fns)

    def _op_Pad(self, node):
        x = node.input[0]
        shape = self._shape(x, node)
        r = len(shape)
        mode = self._attr(node, "mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if self.opset < 11:
            pads, value = list(self._attr(node, "pads")), float(self._attr(node, "value", 0.0))
            axes = list(range(r))
        else:
            pads = self._const_input(node, 1).tolist()
            value = self._const_input(node, 2, np.array(0.0))
            value = float(np.asarray(value).reshape(-1)[0]) if np.asarray(value).size else 0.0
            axes = [a % r for a in self._const_input(node, 3, np.arange(len(pads) // 2)).tolist()]
        begin, end = [0] * r, [0] * r
        for i, a in enumerate(axes):
            begin[a], end[a] = int(pads[i]), int(pads[i + len(axes)])
        if self._pad_folds_into_conv(node, mode, value, begin, end):
            return

        def fn(a):
            n = shape[a]

            def idx(m):
                i = np.arange(m) - begin[a]
                if mode == "constant":
                    return np.where((i >= 0) & (i < n), i, -1)
                if mode == "edge":
                    return np.clip(i, 0, n - 1)
                if mode == "wrap":
                    return np.mod(i, n)
                if mode == "reflect":
                    if n == 1:
                        return np.zeros_like(i)
                    period = 2 * (n - 1)
                    i = np.mod(i, period)
                    return np.where(i < n, i, period - i)
                raise _node_error(node, f"pad mode '{mode}' is not supported")
            return idx
        self._remap_axes(node, x, node.output[0], [fn(a) for a in range(r)], pad=value)

    def _pad_folds_into_conv(self, node, mode, value, begin, end) -> bool:
        """Zero padding of the spatial axes read only by convolutions becomes their padding (tf2onnx writes
        Pad + Conv for TensorFlow's SAME padding; PyTorch for F.pad before a conv)."""
        x, y = node.input[0], node.output[0]
        readers = self.readers.get(y, [])
        r = len(begin)
        if mode != "constant" or value != 0.0 or r not in (3, 4) or any(begin[:2]) or any(end[:2]) or \
                min(begin + end) < 0 or not readers or y in {o.name for o in self.model.graph.output}:
            return False
        for conv in readers:
            auto = self._attr(conv, "auto_pad", b"NOTSET")
            if conv.op_type != "Conv" or conv.input[0] != y or (auto.decode() if isinstance(auto, bytes) else auto) \
                    != "NOTSET":
                return False
        self._activation(x, node)
        self.padded_for_conv[y] = (x, (0, begin[2]) if r == 3 else (begin[2], begin[3]))
        return True

    def _op_Gather(self, node):
        x, ind = node.input
        if ind not in self.consts:
            raise _node_error(node, "only Gather with constant indices is supported")
        if x in self.consts:
            raise _node_error(node, "Gather from a constant table with computed indices is not supported")
        shape = self._shape(x, node)
        axis = int(self._attr(node, "axis", 0)) % len(shape)
        idx = np.asarray(self.consts[ind], np.int64)
        idx = np.where(idx < 0, idx + shape[axis], idx)
        y = node.output[0]
        if idx.ndim == 1:
            fns = [(lambda m: np.arange(m)) for _ in shape]
            fns[axis] = lambda m: idx
            return self._remap_axes(node, x, y, fns)
        mid = y + "__gathered"
        self.shapes[mid] = tuple(shape[:axis]) + (idx.size,) + tuple(shape[axis + 1:])
        flat = idx.reshape(-1)
        fns = [(lambda m: np.arange(m)) for _ in shape]
        fns[axis] = lambda m: flat
        self._remap_axes(node, x, mid, fns)
        self._view(node, mid, y)

    def _op_Tile(self, node):
        x = node.input[0]
        shape = self._shape(x, node)
        self._remap_axes(node, x, node.output[0], [(lambda m, n=n: np.arange(m) % n) for n in shape])

    def _op_Expand(self, node):
        x, y = node.input[0], node.output[0]
        shape, yshape = self._shape(x, node), self._shape(y, node)
        r = len(yshape)
        k = r - len(shape)
        padded = (1,) * k + tuple(shape)
        tensor, own = self._activation(x, node)
        perm = tuple(range(k)) + tuple(p + k for p in own)
        phys = _contiguous_strides([padded[a] for a in perm])
        strides = [0] * r
        for i, a in enumerate(perm):
            strides[a] = phys[i] if padded[a] > 1 else 0
        tables = [np.arange(yshape[a]) * strides[a] for a in perm]
        out = self._remap(node, tensor, y, [yshape[a] for a in perm], tables)
        self.values[y] = (out, perm)

    def _space_depth(self, node, to_space):
        x, y = node.input[0], node.output[0]
        b = int(self._attr(node, "blocksize"))
        mode = self._attr(node, "mode", b"DCR")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        tensor, perm, st = self._axis_strides(x, node)
        if perm not in ((0, 1, 2, 3), (0, 2, 3, 1)):
            tensor, perm = self._as_layout(x, (0, 1, 2, 3), node), (0, 1, 2, 3)
            st = _contiguous_strides(self._shape(x, node))
        n, c, h, w = self._shape(x, node)
        if n != 1:
            raise _node_error(node, f"batch {n}: {node.op_type} runs on a batch of 1")
        ar = np.arange
        if to_space:   # out[c', h*b+i, w*b+j] = in[ch(i, j, c'), h, w]
            c2 = c // (b * b)
            chan = {"i": (lambda m: ar(m) * (b * c2 if mode == "DCR" else b) * st[1]),
                    "j": (lambda m: ar(m) * (c2 if mode == "DCR" else 1) * st[1]),
                    "c": (lambda m: ar(m) * (1 if mode == "DCR" else b * b) * st[1])}
            axes = {"c": (c2, chan["c"]), "h": (h, lambda m: ar(m) * st[2]), "i": (b, chan["i"]),
                    "w": (w, lambda m: ar(m) * st[3]), "j": (b, chan["j"])}
            order = ["c", "h", "i", "w", "j"] if perm == (0, 1, 2, 3) else ["h", "i", "w", "j", "c"]
        else:          # out[ch(i, j, c), h, w] = in[c, h*b+i, w*b+j]
            if mode == "CRD":    # channel c*b*b + i*b + j instead of (i*b + j)*C + c
                order = ["c", "i", "j", "h", "w"] if perm == (0, 1, 2, 3) else ["h", "w", "c", "i", "j"]
            axes = {"i": (b, lambda m: ar(m) * st[2]), "j": (b, lambda m: ar(m) * st[3]),
                    "c": (c, lambda m: ar(m) * st[1]), "h": (h // b, lambda m: ar(m) * b * st[2]),
                    "w": (w // b, lambda m: ar(m) * b * st[3])}
            if mode != "CRD":
                order = ["i", "j", "c", "h", "w"] if perm == (0, 1, 2, 3) else ["h", "w", "i", "j", "c"]
        out = self._remap(node, tensor, y, [axes[k][0] for k in order], [axes[k][1](axes[k][0]) for k in order])
        self.graph.tensors[out].shape = tuple(self._shape(y, node)[p] for p in perm)
        self.graph.ops[-1].attrs["dims"] = tuple(axes[k][0] for k in order)
        self.values[y] = (out, perm)

    def _op_DepthToSpace(self, node):
        self._space_depth(node, True)

    def _op_SpaceToDepth(self, node):
        self._space_depth(node, False)

    def _resize_map(self, node, x, values):
        """Run the Resize node itself (onnx reference) on a tensor of index values."""
        from onnx.reference import ReferenceEvaluator
        inputs = ["x"] + [f"c{i}" if n else "" for i, n in enumerate(node.input[1:])]
        feeds = {f"c{i}": self.consts[n] for i, n in enumerate(node.input[1:]) if n}
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        op = "Resize" if node.op_type == "Resize" else "Upsample"
        g = onnx.helper.make_graph(
            [onnx.helper.make_node(op, inputs, ["y"], **attrs)], "resize",
            [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in ["x", *feeds]],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)])
        m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", self.opset)])
        return ReferenceEvaluator(m).run(None, {"x": values, **feeds})[0]

    def _op_Resize(self, node):
        x, y = node.input[0], node.output[0]
        for i in node.input[1:]:
            if i and i not in self.consts:
                raise _node_error(node, f"input '{i}' (roi/scales/sizes) must be constant")
        shape, yshape = self._shape(x, node), self._shape(y, node)
        mode = self._attr(node, "mode", b"nearest")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        ctm = self._attr(node, "coordinate_transformation_mode", b"half_pixel")
        if (ctm.decode() if isinstance(ctm, bytes) else ctm) == "tf_crop_and_resize":
            raise _node_error(node, "coordinate_transformation_mode tf_crop_and_resize is not supported")
        if self._attr(node, "antialias", 0) and mode != "nearest":
            raise _node_error(node, "antialiased Resize is not supported")
        coords = []
        for a, n in enumerate(shape):
            v = np.arange(n, dtype=np.float32).reshape([n if k == a else 1 for k in range(len(shape))])
            v = np.broadcast_to(v, shape).astype(np.float32)
            out = np.asarray(self._resize_map(node, x, v), np.float64)
            coords.append(out[tuple(slice(None) if k == a else 0 for k in range(len(shape)))])
        if mode == "nearest":
            idx = [np.round(c).astype(np.int64) for c in coords]
            return self._remap_axes(node, x, y, [(lambda m, i=i: i) for i in idx])
        if mode != "linear":
            raise _node_error(node, f"Resize mode '{mode}' is not supported (nearest and linear are)")
        moved = [a for a in range(len(shape)) if not np.array_equal(coords[a], np.arange(shape[a]))]
        if len(shape) != 4 or any(a < 2 for a in moved):
            raise _node_error(node, "linear Resize is supported over the two spatial axes of an NCHW tensor")
        xin = self._as_layout(x, (0, 2, 3, 1), node)
        cy, cx = coords[2], coords[3]
        y0, x0 = np.clip(np.floor(cy), 0, shape[2] - 1).astype(np.int64), np.clip(np.floor(cx), 0, shape[3] - 1).astype(np.int64)
        y1, x1 = np.minimum(y0 + 1, shape[2] - 1), np.minimum(x0 + 1, shape[3] - 1)
        out = self._new_tensor(y, (1, yshape[2], yshape[3], yshape[1]), y)
        self._emit("resize_linear", node, [xin], out, in_hwc=(shape[2], shape[3], shape[1]),
                   out_hwc=(yshape[2], yshape[3], yshape[1]), y0=y0, y1=y1, x0=x0, x1=x1,
                   fy=np.clip(cy - y0, 0, 1), fx=np.clip(cx - x0, 0, 1))
        self.values[y] = (out, (0, 2, 3, 1))

    _op_Upsample = _op_Resize

    # ---- convolution and pooling -----------------------------------------------------------------
    def _op_ConvTranspose(self, node):
        x, y = node.input[0], node.output[0]
        w = self._const_input(node, 1).astype(np.float32)          # [C_in, C_out/g, k...]
        shape, yshape = self._shape(x, node), self._shape(y, node)
        nsp = len(shape) - 2
        if shape[0] != 1:
            raise _node_error(node, f"batch {shape[0]}: convolutions run on a batch of 1")
        if nsp not in (1, 2):
            raise _node_error(node, "only 1-D and 2-D ConvTranspose are supported")
        g = int(self._attr(node, "group", 1))
        kernel = list(w.shape[2:])
        strides = list(self._attr(node, "strides", [1] * nsp))
        dil = list(self._attr(node, "dilations", [1] * nsp))
        outpad = list(self._attr(node, "output_padding", [0] * nsp))
        auto = self._attr(node, "auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        pads = list(self._attr(node, "pads", [0] * (2 * nsp)))
        begins = []
        for i in range(nsp):
            total = strides[i] * (shape[2 + i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 - yshape[2 + i]
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                begins.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            elif auto == "VALID":
                begins.append(0)
            else:
                begins.append(pads[i])
        # zero insertion + padding: a stride-1 convolution with the flipped kernel gives the result
        mid = y + "__upsampled"
        mshape = tuple(shape[:2]) + tuple(yshape[2 + i] + (kernel[i] - 1) * dil[i] for i in range(nsp))
        self.shapes[mid] = mshape

        def fn(i):
            lead = (kernel[i] - 1) * dil[i] - begins[i]

            def idx(m):
                j = np.arange(m) - lead
                ok = (j >= 0) & (j % strides[i] == 0) & (j // strides[i] < shape[2 + i])
                return np.where(ok, j // strides[i], -1)
            return idx
        self._remap_axes(node, x, mid, [lambda m: np.arange(m), lambda m: np.arange(m)] + [fn(i) for i in range(nsp)])
        self.graph.tensors[self.values[mid][0]].source = x
        cin, cog = w.shape[0], w.shape[1]
        wt = w.reshape((g, cin // g, cog) + w.shape[2:]).swapaxes(1, 2).reshape((g * cog, cin // g) + w.shape[2:])
        wt = np.flip(wt, axis=tuple(range(2, 2 + nsp))).copy()
        bias = self._const_input(node, 2, np.zeros(g * cog, np.float32))
        self._conv_from(node, mid, y, wt, np.asarray(bias, np.float32), [1] * nsp, dil, [0] * nsp, g)

    def _conv_from(self, node, x, y, w, bias, strides, dil, begins, group):
        """A convolution of ONNX value x (NCHW / NCW) with weights [oc, ic/g, k...] into y."""
        in_shape, out_shape = self._shape(x, node), self._shape(y, node)
        nsp = len(in_shape) - 2
        kernel = list(w.shape[2:])
        ic, oc = in_shape[1], out_shape[1]
        if nsp == 1:
            w = w[:, :, None, :]
            kernel, strides, dil, begins = [1] + kernel, [1] + list(strides), [1] + list(dil), [0] + list(begins)
            ihwc, ohwc = (1, in_shape[2], ic), (1, out_shape[2], oc)
        else:
            ihwc, ohwc = (in_shape[2], in_shape[3], ic), (out_shape[2], out_shape[3], oc)
        cl = (0,) + tuple(range(2, len(in_shape))) + (1,)
        xin = self._as_layout(x, cl, node)
        out = self._new_tensor(y, (1,) + tuple(out_shape[2:]) + (oc,), y)
        common = dict(bias=bias, in_hwc=ihwc, out_hwc=ohwc, kernel=tuple(kernel), stride=tuple(strides),
                      dilation=tuple(dil), pad=tuple(begins), act=NO_ACT)
        if group == 1:
            self._emit("conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), **common)
        elif group == ic and w.shape[1] == 1:
            self._emit("depthwise_conv2d", node, [xin], out, weights=w[:, 0].transpose(1, 2, 0).copy(),
                       depth_multiplier=oc // ic, **common)
        else:
            self._emit("group_conv2d", node, [xin], out, weights=w.transpose(0, 2, 3, 1).copy(), groups=group,
                       **common)
        self.values[y] = (out, cl)

    def _pool_padded(self, node, kind, kernel, strides, begins):
        """AveragePool with count_include_pad=1: pad explicitly (with zeros), then pool unpadded."""
        x, y = node.input[0], node.output[0]
        shape = self._shape(x, node)
        nsp = len(shape) - 2
        pads = list(self._attr(node, "pads", [0] * (2 * nsp)))
        ends = [pads[nsp + i] if len(pads) == 2 * nsp else 0 for i in range(nsp)]
        auto = self._attr(node, "auto_pad", b"NOTSET")
        if (auto.decode() if isinstance(auto, bytes) else auto) != "NOTSET":
            yshape = self._shape(y, node)
            ends = [max((yshape[2 + i] - 1) * strides[i] + kernel[i] - shape[2 + i], 0) - begins[i]
                    for i in range(nsp)]
        mid = y + "__padded"
        self.shapes[mid] = tuple(shape[:2]) + tuple(shape[2 + i] + begins[i] + ends[i] for i in range(nsp))
        fns = [lambda m: np.arange(m), lambda m: np.arange(m)]
        for i in range(nsp):
            fns.append(lambda m, i=i: np.where((np.arange(m) - begins[i] >= 0) & (np.arange(m) - begins[i] < shape[2 + i]),
                                               np.arange(m) - begins[i], -1))
        self._remap_axes(node, x, mid, fns)
        self.graph.tensors[self.values[mid][0]].source = x
        fake = onnx.helper.make_node("AveragePool", [mid], [y], name=node.name, kernel_shape=kernel,
                                     strides=strides)
        self._pool(fake, kind, kernel, strides, (0, 0))

    def _op_GlobalMaxPool(self, node):
        in_shape = self._shape(node.input[0], node)
        self._pool(node, "max_pool", list(in_shape[2:]), [1] * (len(in_shape) - 2), (0, 0))

    # ---- reductions and normalizations --------------------------------------------------------
    def _reduce_axes(self, node, rank):
        axes = self._attr(node, "axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = self._const_input(node, 1).tolist()
        if not axes:
            if self._attr(node, "noop_with_empty_axes", 0):
                return []
            axes = list(range(rank))
        return sorted({int(a) % rank for a in axes})

    def _reduce(self, node, kind, axes=None, select_last=0):
        x, y = node.input[0], node.output[0]
        shape = self._shape(x, node)
        r = len(shape)
        if axes is None:
            axes = self._reduce_axes(node, r)
        if not axes:
            return self._alias(node)
        tensor, perm = self._activation(x, node)
        order = [a for a in perm if shape[a] > 1]
        red = [a for a in order if a in axes]
        kept = [a for a in order if a not in axes]
        pos = [i for i, a in enumerate(order) if a in axes]
        if pos and pos != list(range(pos[0], pos[0] + len(pos))):
            want = tuple([a for a in perm if a not in axes] + [a for a in perm if a in axes])
            tensor = self._as_layout(x, want, node)
            order = kept + red
            perm = want
        n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        first = order.index(red[0]) if red else len(order)
        outer = int(np.prod([shape[a] for a in order[:first]], dtype=np.int64))
        inner = int(np.prod([shape[a] for a in order[first + len(red):]], dtype=np.int64))
        yshape = self._shape(y, node)
        keep = len(yshape) == r
        yperm = perm if keep else tuple(a - sum(1 for b in axes if b < a) for a in perm if a not in axes)
        out = self._new_tensor(y, tuple(yshape[a] for a in yperm) or (1,), y)
        if kind in ("argmax", "argmin") and n > 128:
            raise _node_error(node, f"{node.op_type} over {n} values: int8 indices reach 127 at most")
        self._emit("reduce", node, [tensor], out, how=kind, outer=outer, n=n, inner=inner,
                   select_last=int(select_last))
        self.values[y] = (out, tuple(yperm))

    def _op_ReduceSum(self, node):
        self._reduce(node, "sum")

    def _op_ReduceMax(self, node):
        self._reduce(node, "max")

    def _op_ReduceMin(self, node):
        self._reduce(node, "min")

    def _op_ReduceL1(self, node):
        mid = node.output[0] + "__abs"
        self.shapes[mid] = self._shape(node.input[0], node)
        self._lut(node, node.input[0], mid, "abs")
        self.graph.tensors[self.values[mid][0]].source = SYNTHETIC + mid
        fake = onnx.helper.make_node("ReduceSum", [mid] + list(node.input[1:]), list(node.output), name=node.name)
        fake.attribute.extend(node.attribute)
        self._reduce(fake, "sum", self._reduce_axes(node, len(self.shapes[mid])))

    def _op_ReduceSumSquare(self, node):
        mid = node.output[0] + "__square"
        self.shapes[mid] = self._shape(node.input[0], node)
        self._lut(node, node.input[0], mid, "pow_c", consts=np.array([2.0]))
        self.graph.tensors[self.values[mid][0]].source = SYNTHETIC + mid
        fake = onnx.helper.make_node("ReduceSum", [mid] + list(node.input[1:]), list(node.output), name=node.name)
        fake.attribute.extend(node.attribute)
        self._reduce(fake, "sum", self._reduce_axes(node, len(self.shapes[mid])))

    def _arg(self, node, kind):
        shape = self._shape(node.input[0], node)
        axis = int(self._attr(node, "axis", 0)) % len(shape)
        self._reduce(node, kind, [axis], self._attr(node, "select_last_index", 0))

    def _op_ArgMax(self, node):
        self._arg(node, "argmax")

    def _op_ArgMin(self, node):
        self._arg(node, "argmin")

    def _softmax_general(self, node, kind):
        """Softmax/LogSoftmax over any axes: bring them innermost (a remap) when they are not."""
        x, y = node.input[0], node.output[0]
        shape = self._shape(x, node)
        rank = len(shape)
        axis = int(self._attr(node, "axis", -1 if self.opset >= 13 else 1)) % rank
        reduced = [axis] if self.opset >= 13 else list(range(axis, rank))
        tensor, perm = self._activation(x, node)
        order = [a for a in perm if shape[a] != 1]
        tail = [a for a in order if a in reduced]
        if order[len(order) - len(tail):] != tail:
            perm = tuple([a for a in perm if a not in reduced] + [a for a in perm if a in reduced])
            tensor = self._as_layout(x, perm, node)
        cols = int(np.prod([shape[a] for a in reduced], dtype=np.int64))
        out = self._new_tensor(y, self.graph.tensors[tensor].shape, y)
        self._emit(kind, node, [tensor], out, rows=int(np.prod(shape, dtype=np.int64)) // cols, cols=cols)
        self.values[y] = (out, perm)

    def _op_LogSoftmax(self, node):
        self._softmax_general(node, "log_softmax")

    # ---- dense --------------------------------------------------------------------------------
    def _dense_rows(self, node, x, w_out_in, bias):
        xshape = self._shape(x, node)
        tensor = self._as_layout(x, tuple(range(len(xshape))), node)
        oshape = self._shape(node.output[0], node)
        out = self._new_tensor(node.output[0], oshape, node.output[0])
        self._emit("fully_connected_rows", node, [tensor], out, weights=np.ascontiguousarray(w_out_in, np.float32),
                   bias=np.asarray(bias, np.float32).reshape(-1), act=NO_ACT,
                   rows=int(np.prod(xshape[:-1], dtype=np.int64)))
        self.values[node.output[0]] = (out, tuple(range(len(oshape))))

    def _transposed(self, node, x):
        """ONNX value x [K, M] as a new value [M, K] (Gemm transA)."""
        shape = self._shape(x, node)
        t = x + "__T"
        self.shapes[t] = tuple(shape[::-1])
        tensor, perm = self._activation(x, node)
        self.values[t] = (tensor, tuple(int(i) for i in np.argsort((1, 0))[list(perm)]))
        return t

    def _matmul(self, node, a, b, y):
        """Two activations: [.., m, k] x [.., k, n]."""
        sa, sb, sy = self._shape(a, node), self._shape(b, node), self._shape(y, node)
        sa = (1,) + tuple(sa) if len(sa) == 1 else sa                   # a vector is a 1-row / 1-column matrix
        sb = tuple(sb) + (1,) if len(sb) == 1 else sb
        sy = tuple(sa[:-1]) + (sb[-1],) if len(sa) == 2 and len(sb) == 2 else sy
        if len(sy) < 2:
            sy = (1,) * (2 - len(sy)) + tuple(sy)
        ba, bb = int(np.prod(sa[:-2], dtype=np.int64)), int(np.prod(sb[:-2], dtype=np.int64))
        batch = int(np.prod(sy[:-2], dtype=np.int64))
        if (ba != batch and ba != 1) or (bb != batch and bb != 1) or \
                (ba == batch and bb == batch and tuple(sa[:-2]) != tuple(sb[:-2]) and len(sa) == len(sb)):
            raise _node_error(node, f"MatMul batch broadcasting {list(sa)} x {list(sb)} is not supported")
        ta = self._as_layout(a, tuple(range(len(self._shape(a, node)))), node)
        tb = self._as_layout(b, tuple(range(len(self._shape(b, node)))), node)
        m, k, n = sa[-2], sa[-1], sb[-1]
        sy = self._shape(y, node)
        out = self._new_tensor(y, tuple(sy) or (1,), y)
        self._emit("matmul", node, [ta, tb], out, batch=batch, m=m, k=k, n=n,
                   a_batch_stride=m * k if ba > 1 else 0, b_batch_stride=k * n if bb > 1 else 0, act=NO_ACT)
        self.values[y] = (out, tuple(range(len(sy))))

    # ---- build-time computations -----------------------------------------------------------------
    def _op_Cast(self, node):
        to = self._attr(node, "to")
        if to in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
            return self._alias(node)
        raise _node_error(node, f"casting a computed tensor to {onnx.TensorProto.DataType.Name(to)} is not supported")

    def _op_CastLike(self, node):
        a, b = node.input
        target = self.consts[b].dtype if b in self.consts else None
        if a in self.consts and (target is None or target.kind == "f"):   # a constant cast to a float tensor's type
            self.consts[node.output[0]] = self.consts[a].astype(target or np.float32)
            return
        if a not in self.consts and (target is None or target.kind == "f"):
            return self._alias(node)
        raise _node_error(node, "CastLike to a non-float type is not supported on computed tensors")

    def _needs_constants(self, node):
        raise _node_error(node, "supported only when all its inputs are constants (folded at build time)")

    _op_Range = _op_ConstantOfShape = _needs_constants

    def _op_QuantizeLinear(self, node):
        raise _node_error(node, "integer tensors in the graph are not supported: edgec takes QuantizeLinear only "
                                "directly followed by DequantizeLinear (QDQ format) and DequantizeLinear of constants")

    _op_DequantizeLinear = _op_QuantizeLinear


def compose_remaps(first: dict, second: dict) -> tuple[list[np.ndarray], float] | None:
    """Tables and pad value of `second` applied to the output of `first` as one remap, or None when the
    second's offsets along an axis do not stay on the same axis of the first's output (or both pad with
    different values)."""
    d1, d2 = [int(d) for d in first["dims"]], [int(d) for d in second["dims"]]
    if len(d1) != len(d2):
        return None
    s1 = _contiguous_strides(d1)
    tables, pads_first, pads_second = [], False, False
    for k in range(len(d1)):
        t1, t2 = np.asarray(first["tables"][k], np.int64), np.asarray(second["tables"][k], np.int64)
        valid = t2 >= 0
        j = np.where(valid, t2 // s1[k], 0)
        if np.any(valid & ((t2 % s1[k] != 0) | (j >= d1[k]))):
            return None
        t = np.where(valid, t1[j], INVALID)
        pads_first |= bool(np.any(valid & (t1[j] < 0)))
        pads_second |= bool(np.any(~valid))
        tables.append(np.where(t < 0, INVALID, t))
    if pads_first and pads_second and float(first["pad"]) != float(second["pad"]):
        return None
    return tables, float(first["pad"] if pads_first else second["pad"])


def view_layout(xshape, perm, yshape, max_elements: int = 1 << 20) -> tuple[int, ...] | None:
    """A physical axis order q of y = reshape(x) that keeps x's bytes where they are (x laid out by perm),
    or None. E.g. [1, C, H, W] channels-last viewed as [1, C, H*W] is [1, H*W, C]: q = (0, 2, 1)."""
    import itertools
    n = int(np.prod(xshape, dtype=np.int64))
    if n > max_elements or len(yshape) > 5:
        return None
    want = np.arange(n).reshape(xshape).transpose(perm).reshape(-1)
    rank = len(yshape)
    first = [tuple([0] + list(range(2, rank)) + [1])] if rank >= 3 else []
    for q in first + list(itertools.permutations(range(rank))):
        if np.array_equal(np.arange(n).reshape(yshape).transpose(q).reshape(-1), want):
            return tuple(q)
    return None


def _same(shape, p, q) -> bool:
    return [a for a in p if shape[a] != 1] == [a for a in q if shape[a] != 1]


for _name in elementwise.UNARY_ONNX:
    if not hasattr(ExtOps, f"_op_{_name}"):
        setattr(ExtOps, f"_op_{_name}", ExtOps._unary)
