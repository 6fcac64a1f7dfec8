"""tf2onnx's Loop of a Keras GRU or LSTM cell, recognised before unrolling and written as one ONNX GRU / LSTM node.

tf2onnx exports every Keras 3 GRU (and a Keras LSTM with a fixed batch) as an ONNX `Loop` whose body is one cell
step: x_t = Gather(sequence, t) with t a carried counter, the kernel, recurrent kernel and bias carried through
unchanged, and the gates written out (MatMul / Gemm, Add, Split / Slice, Sigmoid, Tanh, Mul, Sub). Unrolled
(edgec/frontend/unroll.py) that is one op per node per step, slower and less accurate than edgec's own `gru` /
`lstm` op. `recognise_loops` replaces such a Loop by the ONNX node it computes:

  GRU, Keras reset_after=True:  z, r = sigmoid(x Wz + h Uz + b), n = tanh(x Wn + bx + r * (h Un + bh)),
                                h' = z * h + (1 - z) * n   -> GRU linear_before_reset=1 (gate order z, r, h as Keras)
  GRU, reset_after=False:        n = tanh(x Wn + (r * h) Un + b)                    -> GRU linear_before_reset=0
  LSTM:  i, f, o = sigmoid(.), g = tanh(.), c' = f * c + i * g, h' = o * tanh(c')   -> LSTM (ONNX order i, o, f, c)

with W = the kernel's columns transposed to ONNX's [gates * hidden][input] rows. The matcher is strict: the body
must be exactly such a cell once its constants are folded (activations sigmoid and tanh, weights constant, the
counter 0, 1, ... indexing the whole sequence, the initial state a constant), the cell's outputs are the carried
state and the scan outputs are the new hidden state; and the weights read from the structure are checked by
running the body and the formula on random values (relative error under 1e-4). Anything else is left to the
unroller.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.frontend.unroll import MAX_TRIPS, evaluate_node, rewrite_loops


class _NoMatch(Exception):
    pass


def recognise_loops(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """`model` with every tf2onnx GRU / LSTM Loop written as an ONNX GRU / LSTM node, or None if it has none."""
    g = model.graph
    shapes = _shapes(g)
    readers: dict = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    for o in g.output:
        readers.setdefault(o.name, []).append(None)

    def rewrite(n, k, consts, opset, added, swaps):
        try:
            found: dict = {}
            written = _Match(n, consts, shapes, opset).replacement(added, readers, found)
        except (_NoMatch, ValueError, TypeError, IndexError, KeyError, StopIteration, AttributeError):
            return None
        swaps.update(found)
        return written
    return rewrite_loops(model, rewrite)


def _shapes(g) -> dict:
    shapes = {}
    for vi in (*g.input, *g.value_info, *g.output):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            shapes[vi.name] = tuple(d.dim_value for d in t.shape.dim)
    for i in g.initializer:
        shapes[i.name] = tuple(i.dims)
    return shapes


def _attr(node, name, default=None):
    a = next((a for a in node.attribute if a.name == name), None)
    return default if a is None else helper.get_attribute_value(a)


def _expect(cond: bool) -> None:
    if not cond:
        raise _NoMatch


class _Match:
    """One Loop matched against the cells; `replacement` writes the nodes in its place (raises _NoMatch)."""

    def __init__(self, loop, consts: dict, shapes: dict, opset: int):
        self.loop, self.outer, self.shapes, self.opset = loop, consts, shapes, opset
        self.body = next(a.g for a in loop.attribute if a.name == "body")
        _expect(not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                        for n in self.body.node for a in n.attribute))
        _expect(len(loop.input) >= 4 and all(loop.input[:2]))
        _expect(loop.input[0] in consts and loop.input[1] in consts)
        self.n_carried = len(loop.input) - 2
        _expect(len(self.body.input) == self.n_carried + 2 and len(self.body.output) >= 1 + self.n_carried)

    def _carried(self, k: int, vin: str, vout: str, init: str, local: dict) -> np.ndarray | None:
        """Carried value k sorted: passed through unchanged (its value put in `local`), an integer counter, or a
        state, whose initial value is returned for the caller's own checks (None for the other two)."""
        _expect(bool(init) and init in self.outer)
        value = np.asarray(self.outer[init])
        if vin == vout:
            local[vin] = value
            self.through[k] = init
        elif value.dtype.kind in "iu":
            self.counters.append(k)
        else:
            return value
        return None

    # ---- the body, its constants folded -----------------------------------------------------------
    def _fold(self) -> None:
        body, local = self.body, dict(self.outer)
        local.update({i.name: numpy_helper.to_array(i) for i in body.initializer})
        self.through, self.counters, self.states = {}, [], []
        for k in range(self.n_carried):
            value = self._carried(k, self.body.input[2 + k].name, self.body.output[1 + k].name,
                                  self.loop.input[2 + k], local)
            if value is not None:
                _expect(value.dtype == np.float32)
                self.states.append(k)
        self.nodes = []
        for node in body.node:
            if not evaluate_node(node, local, self.opset):
                self.nodes.append(node)
        self.local = local
        self.producer = {o: n for n in self.nodes for o in n.output}

    def _trips(self) -> tuple[int, dict]:
        """Runs the counters and the condition (all the body computes from them and constants) at build time:
        the number of iterations and the counters' final values; the step's Gather index must be the iteration."""
        it_name, cond_name = self.body.input[0].name, self.body.input[1].name
        known = {it_name, cond_name} | {self.body.input[2 + k].name for k in self.counters}
        control = []
        for node in self.nodes:
            if all(i in known or i in self.local or not i for i in node.input):
                control.append(node)
                known.update(o for o in node.output if o)
        cond_out = self.body.output[0].name
        watch = [cond_out, self.index] + [self.body.output[1 + k].name for k in self.counters]
        _expect(all(w in known or w in self.local for w in watch))
        limit = int(np.asarray(self.outer[self.loop.input[0]]).reshape(-1)[0])
        go = bool(np.asarray(self.outer[self.loop.input[1]]).reshape(-1)[0])
        values = {self.body.input[2 + k].name: np.asarray(self.outer[self.loop.input[2 + k]]) for k in self.counters}
        it = 0
        while go and it < limit:
            _expect(it < MAX_TRIPS)
            env = {**self.local, **values, it_name: np.array(it, np.int64), cond_name: np.array(go)}
            for node in control:
                _expect(evaluate_node(node, env, self.opset))
            _expect(int(np.asarray(env[self.index]).reshape(-1)[0]) == it and np.asarray(env[self.index]).ndim == 0)
            go = bool(np.asarray(env[cond_out]).reshape(-1)[0])
            values = {self.body.input[2 + k].name: env[self.body.output[1 + k].name] for k in self.counters}
            it += 1
        return it, {self.loop.output[k]: values[self.body.input[2 + k].name] for k in self.counters}

    # ---- affine forms: value = sum over leaves of leaf @ M + b (columns along the last axis) ------------
    def _form(self, name: str, leaves: dict) -> tuple[dict, np.ndarray]:
        if name in leaves:
            return {name: np.eye(leaves[name])}, np.zeros(leaves[name])
        node = self.producer.get(name)
        _expect(node is not None)
        op, ins = node.op_type, list(node.input)
        if op in ("Identity", "Squeeze", "Unsqueeze"):
            return self._form(ins[0], leaves)
        if op == "MatMul":
            b = self._const(ins[1], 2)
            terms, bias = self._form(ins[0], leaves)
            return {k: m @ b for k, m in terms.items()}, bias @ b
        if op == "Gemm":
            _expect(_attr(node, "transA", 0) == 0 and _attr(node, "alpha", 1.0) == 1.0
                    and _attr(node, "beta", 1.0) == 1.0)
            b = self._const(ins[1], 2)
            b = b.T if _attr(node, "transB", 0) else b
            terms, bias = self._form(ins[0], leaves)
            terms, bias = {k: m @ b for k, m in terms.items()}, bias @ b
            return self._plus((terms, bias), ins[2], leaves) if len(ins) > 2 and ins[2] else (terms, bias)
        if op == "Add":
            first, second = (ins[1], ins[0]) if ins[0] in self.local else (ins[0], ins[1])
            return self._plus(self._form(first, leaves), second, leaves)
        if op in ("Split", "Slice"):
            terms, bias = self._form(ins[0], leaves)
            cols = self._columns(node, name, len(bias))
            return {k: m[:, cols] for k, m in terms.items()}, bias[cols]
        if op == "Concat":       # TF1's cells: concat([x, h]) @ kernel
            _expect(_attr(node, "axis", 0) in (-1, self.rank - 1))
            parts = [self._form(i, leaves) for i in ins]
            bias, terms, at = np.concatenate([b for _, b in parts]), {}, 0
            for t, b in parts:
                for k, m in t.items():
                    terms.setdefault(k, np.zeros((leaves[k], len(bias))))[:, at:at + len(b)] += m
                at += len(b)
            return terms, bias
        raise _NoMatch

    def _plus(self, form, name: str, leaves: dict):
        """form + the value `name` (a constant broadcast along the last axis, or an affine form)."""
        terms, bias = form
        if name not in self.local:
            t2, b2 = self._form(name, leaves)
            _expect(not set(terms) & set(t2) and bias.shape == b2.shape)
            return {**terms, **t2}, bias + b2
        c = np.asarray(self.local[name], np.float64)
        _expect(c.size in (1, len(bias)) and (c.ndim <= 1 or all(d == 1 for d in c.shape[:-1])))
        return terms, bias + c.reshape(-1)

    def _const(self, name: str, rank: int) -> np.ndarray:
        _expect(name in self.local)
        v = np.asarray(self.local[name], np.float64)
        _expect(v.ndim == rank)
        return v

    def _columns(self, node, name: str, width: int) -> slice:
        """The columns (last axis) a Split output or a Slice takes; every other axis taken whole."""
        rank = len(self.shapes.get(node.input[0], ())) or self.rank
        if node.op_type == "Split":
            axis = _attr(node, "axis", 0)
            _expect(axis in (-1, rank - 1))
            parts = len(node.output)
            if len(node.input) > 1 and node.input[1]:
                sizes = [int(s) for s in self._const(node.input[1], 1)]
            else:
                _expect(width % parts == 0)
                sizes = [width // parts] * parts
            _expect(sum(sizes) == width)
            k = list(node.output).index(name)
            return slice(sum(sizes[:k]), sum(sizes[:k + 1]))
        starts, ends = (np.asarray(self.local[i]).reshape(-1) for i in node.input[1:3])
        axes = np.asarray(self.local[node.input[3]]).reshape(-1) if len(node.input) > 3 and node.input[3] \
            else np.arange(len(starts))
        steps = np.asarray(self.local[node.input[4]]).reshape(-1) if len(node.input) > 4 and node.input[4] \
            else np.ones(len(starts))
        _expect(np.all(steps == 1))
        last = None
        for s, e, a in zip(starts, ends, axes):
            if a in (-1, rank - 1):
                last = slice(int(s), int(e)).indices(width)[:2]
            else:
                _expect(s == 0 and e >= self.batch)
        _expect(last is not None)
        return slice(*last)

    # ---- the cells -----------------------------------------------------------------------------------
    def _op(self, name: str, op: str):
        node = self.producer.get(self._through_identity(name))
        _expect(node is not None and node.op_type == op)
        return node

    def _pair(self, node, test_a, test_b):
        """The operands of a commutative node as (a, b) with test_a(a) and test_b(b)."""
        a, b = node.input
        for x, y in ((a, b), (b, a)):
            try:
                return test_a(x), test_b(y)
            except _NoMatch:
                continue
        raise _NoMatch

    def _gate(self, name: str, act: str, leaves: dict) -> tuple[dict, np.ndarray]:
        return self._form(self._op(name, act).input[0], leaves)

    def _gru(self, h_in: str, h_out: str):
        H, xt = self.hidden, self.xt
        leaves = {xt: self.input_size, h_in: H}
        out = self._op(h_out, "Add")

        def keep(name):          # z * h
            m = self._op(name, "Mul")
            return self._pair(m, lambda v: self._op(v, "Sigmoid").output[0], lambda v: _expect(v == h_in) or v)[0]

        def new(name):           # (1 - z) * n
            m = self._op(name, "Mul")
            sub, n = self._pair(m, lambda v: self._op(v, "Sub"), lambda v: self._op(v, "Tanh"))
            _expect(sub.input[0] in self.local and np.all(np.asarray(self.local[sub.input[0]]) == 1))
            return sub.input[1], n

        z, (z2, n) = self._pair(out, keep, new)
        _expect(z == z2)
        z_terms, z_bias = self._gate(z, "Sigmoid", leaves)
        pre_n = self.producer.get(self._through_identity(n.input[0]))
        after = 0
        # reset_after: tanh(x Wn + bx + r * (h Un + bh)); reset_before: tanh(x Wn + (r * h) Un + b)
        for x_part, r_part in ((pre_n.input[0], pre_n.input[1]), (pre_n.input[1], pre_n.input[0])) \
                if pre_n is not None and pre_n.op_type == "Add" else ():
            mul = self.producer.get(r_part)
            if mul is None or mul.op_type != "Mul":
                continue
            try:
                r, h_part = self._pair(mul, lambda v: self._op(v, "Sigmoid").output[0],
                                       lambda v: self._form(v, {h_in: H}))
                xn_terms, xn_bias = self._form(x_part, {xt: self.input_size})
            except _NoMatch:
                continue
            after = 1
            break
        if not after:
            r, rh = self._reset_before_leaf(h_in, z)
            n_terms, n_bias = self._form(n.input[0], {xt: self.input_size, rh: H})
            _expect(set(n_terms) == {xt, rh})
            xn_terms, xn_bias = {xt: n_terms[xt]}, n_bias
            h_part = ({h_in: n_terms[rh]}, np.zeros(H))
        r_terms, r_bias = self._gate(r, "Sigmoid", leaves)
        for terms in (z_terms, r_terms):
            _expect(set(terms) == {xt, h_in})
        _expect(set(xn_terms) == {xt} and set(h_part[0]) == {h_in})
        W = np.concatenate([z_terms[xt], r_terms[xt], xn_terms[xt]], axis=1).T
        R = np.concatenate([z_terms[h_in], r_terms[h_in], h_part[0][h_in]], axis=1).T
        B = np.concatenate([z_bias, r_bias, xn_bias, np.zeros(2 * H), h_part[1]])
        return "GRU", [W, R, B], {"linear_before_reset": after}

    def _reset_before_leaf(self, h_in, z):
        """The Mul(r, h) feeding the candidate's pre-activation of a reset_after=False GRU: (r, its name)."""
        for node in self.nodes:
            if node.op_type == "Mul" and h_in in node.input:
                other = node.input[1] if node.input[0] == h_in else node.input[0]
                try:
                    self._op(other, "Sigmoid")
                except _NoMatch:
                    continue
                if other != z:
                    return other, node.output[0]
        raise _NoMatch

    def _lstm(self, h_in: str, h_out: str, c_in: str, c_out: str):
        H, xt = self.hidden, self.xt
        leaves = {xt: self.input_size, h_in: H}
        o, tc = self._pair(self._op(h_out, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                           lambda v: self._op(v, "Tanh"))
        _expect(self._through_identity(tc.input[0]) == self._through_identity(c_out))

        def forget(name):
            return self._pair(self._op(name, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                              lambda v: _expect(v == c_in) or v)[0]

        def write(name):
            return self._pair(self._op(name, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                              lambda v: self._op(v, "Tanh").output[0])

        f, (i, g) = self._pair(self._op(c_out, "Add"), forget, write)
        gates = [self._gate(i, "Sigmoid", leaves), self._gate(o, "Sigmoid", leaves),
                 self._gate(f, "Sigmoid", leaves), self._gate(g, "Tanh", leaves)]
        for terms, _ in gates:
            _expect(set(terms) == {xt, h_in})
        W = np.concatenate([t[xt] for t, _ in gates], axis=1).T
        R = np.concatenate([t[h_in] for t, _ in gates], axis=1).T
        B = np.concatenate([b for _, b in gates] + [np.zeros(4 * H)])
        return "LSTM", [W, R, B], {}

    # ---- the replacement -----------------------------------------------------------------------------
    def replacement(self, added: dict, readers: dict, swaps: dict) -> list:
        """The nodes in the Loop's place; `swaps` gets the nodes in place of a reader of its scan output that
        takes the last step only (a Slice [-1:] along time: the GRU / LSTM node's Y_h)."""
        self._fold()
        gathers = [n for n in self.nodes if n.op_type == "Gather" and n.input[0] not in self.local]
        _expect(len(gathers) == 1 and _attr(gathers[0], "axis", 0) == 0)
        seq, self.index = gathers[0].input
        self.xt = gathers[0].output[0]
        _expect(seq in self.shapes and len(self.shapes[seq]) == 3)
        steps, self.batch, self.input_size = self.shapes[seq]
        self.rank = 2
        trips, finals = self._trips()
        self.trips = trips
        _expect(trips == steps and trips > 0)
        _expect(len(self.states) in (1, 2))
        st = [(self.body.input[2 + k].name, self.body.output[1 + k].name, self.loop.input[2 + k])
              for k in self.states]
        inits = [np.asarray(self.outer[s[2]], np.float64) for s in st]
        self.hidden = inits[0].shape[-1]
        _expect(all(v.shape == (self.batch, self.hidden) for v in inits))
        if len(st) == 1:
            kind, (W, R, B), attrs = self._gru(st[0][0], st[0][1])
        else:
            h, c = st if self._is_hidden(st[0][1]) else st[::-1]
            if h is not st[0]:
                inits, self.states = inits[::-1], self.states[::-1]
            st = [h, c]
            kind, (W, R, B), attrs = self._lstm(h[0], h[1], c[0], c[1])
        self._verify(kind, W, R, B, attrs, st)
        return self._write(kind, W, R, B, attrs, st, inits, seq, finals, added, readers, swaps)

    def _is_hidden(self, out: str) -> bool:
        node = self.producer.get(out)
        while node is not None and node.op_type == "Identity":
            node = self.producer.get(node.input[0])
        return node is not None and node.op_type == "Mul"

    def _verify(self, kind, W, R, B, attrs, st) -> None:
        """The body (its dynamic nodes) run on random x_t and states against the cell formula."""
        rng = np.random.default_rng(0)
        feeds = {self.xt: rng.normal(size=(self.batch, self.input_size)).astype(np.float32)}
        for name, _, _ in st:
            feeds[name] = rng.uniform(-1, 1, (self.batch, self.hidden)).astype(np.float32)
        outs = [s[1] for s in st]
        env = {**self.local, **feeds}
        for node in self.nodes:
            if node is self.producer.get(self.xt):
                continue
            if all(not i or i in env for i in node.input):
                _expect(evaluate_node(node, env, self.opset))
        _expect(all(o in env for o in outs))
        want = cell_step(kind, W, R, B, attrs.get("linear_before_reset", 0), feeds[self.xt],
                         *(feeds[s[0]] for s in st))
        for o, w in zip(outs, want):
            got = np.asarray(env[o], np.float64).reshape(w.shape)
            _expect(np.max(np.abs(got - w)) <= 1e-4 * max(1.0, np.max(np.abs(w))))

    def _write(self, kind, W, R, B, attrs, st, inits, seq, finals, added, readers, swaps) -> list:
        loop, H = self.loop, self.hidden
        tag = (loop.name or loop.output[0]) + f"/{kind.lower()}"
        ins = [seq]
        for key, v in (("W", W), ("R", R), ("B", B)):
            added[f"{tag}/{key}"] = np.asarray(v, np.float32)[None]
            ins.append(f"{tag}/{key}")
        ins += ["", ""]
        for key, v in zip(("initial_h", "initial_c"), inits):
            added[f"{tag}/{key}"] = np.asarray(v, np.float32)[None]
        ins[5:] = [f"{tag}/initial_h"] + ([f"{tag}/initial_c"] if kind == "LSTM" else [])
        outs = [f"{tag}/Y", f"{tag}/Y_h"] + ([f"{tag}/Y_c"] if kind == "LSTM" else [])
        nodes = [helper.make_node(kind, ins, outs, name=tag, hidden_size=H, **attrs)]
        whole = []
        for o, scan in zip(loop.output[self.n_carried:], self.body.output[1 + self.n_carried:]):
            _expect(self._through_identity(scan.name) == self._through_identity(st[0][1]))
            if not o:
                continue
            # the last step read as Y_h only when Y_h is read anyway (its own scale, calibrated on one state a
            # sample, can be narrower than the sequence's and clip the evaluation's)
            h_read = bool(loop.output[self.states[0]] and readers.get(loop.output[self.states[0]]))
            last = [r for r in readers.get(o, []) if h_read and self._last_step(r, self.trips)]
            for r in last:
                swaps[id(r)] = [helper.make_node("Identity", [outs[1]], [r.output[0]], name=f"{tag}/{r.output[0]}")]
            if len(last) < len(readers.get(o, [])):
                whole.append(helper.make_node("Identity", [f"{tag}/Y_squeezed"], [o], name=f"{tag}/{o}"))
        if whole:
            nodes += self._squeeze(outs[0], None, 1, tag, added) + whole
        state_out = {self.states[j]: outs[1 + j] for j in range(len(st))}
        for k in range(self.n_carried):
            o = loop.output[k]
            if not o:
                continue
            if k in self.through:
                nodes.append(helper.make_node("Identity", [self.through[k]], [o], name=f"{tag}/{o}"))
            elif k in finals or o in finals:
                added[o] = np.asarray(finals[o])
            else:
                nodes += self._squeeze(state_out[k], o, 0, tag, added)
        return nodes

    def _last_step(self, node, steps: int) -> bool:
        """Whether a reader of the scan output is a Slice taking its last step only (starts -1 or steps - 1, to
        the end, along axis 0, step 1): [1, batch, hidden], which the node's Y_h is."""
        if node is None or node.op_type != "Slice" or not all(i in self.outer for i in node.input[1:] if i):
            return False
        v = [np.asarray(self.outer[i]).reshape(-1) if i else None for i in list(node.input[1:5]) + [""] * 4][:4]
        starts, ends, axes, steps_ = v
        return (len(starts) == 1 and int(starts[0]) in (-1, steps - 1) and int(ends[0]) >= steps
                and (axes is None or int(axes[0]) == 0) and (steps_ is None or int(steps_[0]) == 1))

    def _through_identity(self, name: str) -> str:
        node = self.producer.get(name)
        while node is not None and node.op_type == "Identity":
            name = node.input[0]
            node = self.producer.get(name)
        return name

    def _squeeze(self, value, out, axis, tag, added) -> list:
        out = out or f"{value}_squeezed"
        if self.opset >= 13:
            added[f"{tag}/axis{axis}"] = np.array([axis], np.int64)
            return [helper.make_node("Squeeze", [value, f"{tag}/axis{axis}"], [out], name=out)]
        return [helper.make_node("Squeeze", [value], [out], axes=[axis], name=out)]


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def cell_step(kind, W, R, B, linear_before_reset, x, h, c=None) -> list:
    """One step of ONNX's GRU / LSTM (forward, default activations) in float64: [h'] or [h', c']."""
    H = R.shape[-1]
    x, h = np.asarray(x, np.float64), np.asarray(h, np.float64)
    g = len(W) // H
    Wb, Rb = B[:g * H], B[g * H:]
    px = x @ W.T + Wb
    if kind == "LSTM":
        pre = px + h @ R.T + Rb
        i, o, f = (_sigmoid(pre[:, q * H:(q + 1) * H]) for q in range(3))
        c2 = f * np.asarray(c, np.float64) + i * np.tanh(pre[:, 3 * H:])
        return [o * np.tanh(c2), c2]
    zr = _sigmoid(px[:, :2 * H] + h @ R[:2 * H].T + Rb[:2 * H])
    z, r = zr[:, :H], zr[:, H:]
    hn = r * (h @ R[2 * H:].T + Rb[2 * H:]) if linear_before_reset else (r * h) @ R[2 * H:].T + Rb[2 * H:]
    n = np.tanh(px[:, 2 * H:] + hn)
    return [(1 - z) * n + z * h]
