"""tf2onnx's Scan of a TF1 `dynamic_rnn` over GRU / LSTM cells, recognised before unrolling and written as one ONNX
GRU / LSTM node per cell (edgec's own `gru` / `lstm` op: int16 gates and state, as TFLite's integer LSTM).

tf2onnx writes a TF1 `dynamic_rnn` (Arm's ML-KWS-for-MCU GRU, LSTM and CRNN keyword models) as a `Scan` over the
time-major frames, its state the cells' states and a step counter, its body one step of the cell, or of each cell
of a `MultiRNNCell` in turn, written out as Concat / Gemm / Split / Sigmoid / Tanh / Mul / Add / Sub:

  GRUCell:        r, u = split(sigmoid([x, h] Wg + bg)), c = tanh([x, r * h] Wc + bc), h' = u * h + (1 - u) * c
                  -> GRU linear_before_reset=0 (ONNX gates z = u, r, h = c)
  BasicLSTMCell / LSTMCell (no peepholes, no projection):
                  i, j, f, o = split([x, h] W + b), c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j),
                  h' = sigmoid(o) * tanh(c')                    -> LSTM (ONNX gates i, o, f, c; the forget bias in B)
  LSTMCell(use_peepholes, num_proj) (ML-KWS's LSTM_S): i, f += w_i, w_f * c, o += w_o * c', h' = m proj with
                  m = sigmoid(o) * tanh(c')  -> LSTM with P (w_i, w_o, w_f) and R proj^T (its hidden state m: the
                  recurrence reads h = m proj), then h = MatMul(m, proj) after the node (an initial h of zeros)

Unrolled (edgec/frontend/unroll.py) such a cell is one int8 op per node per step, its state requantized to int8
at every step; as one recurrent op it keeps gates and state in int16. The matching is loop_recurrent.py's (affine
forms of the gate pre-activations through Concat, Gemm, Split and constant Adds; the weights read from them and
checked by running the body against the cell formula on random values): the body must be exactly a chain of such
cells, the first reading the scan input, each next one the hidden state its predecessor writes, the state
initialised by constants, the step counter computed from constants only, the scan outputs (if any) a cell's new
hidden state. A stacked cell is then its own node over the whole sequence of the cell below (the same
arithmetic: a cell at step t reads the cell below at step t and itself at step t - 1). Anything else (a cell
clip, a projection clip, a cell of another kind) is left to the unroller, which refuses it when it is too long.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.frontend.loop_recurrent import _expect, _Match, _NoMatch, _shapes
from edgec.frontend.unroll import MAX_TRIPS, evaluate_node, rewrite_loops

ACTIVATIONS = ("Sigmoid", "Tanh")


def recognise_scans(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """`model` with every tf2onnx Scan of GRU / LSTM cells written as ONNX GRU / LSTM nodes, or None if none."""
    shapes = _shapes(model.graph)
    read = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}

    def rewrite(n, k, consts, opset, added, swaps):
        try:
            return _ScanMatch(n, consts, shapes, opset).replacement(added, read)
        except (_NoMatch, ValueError, TypeError, IndexError, KeyError, StopIteration, AttributeError):
            return None
    return rewrite_loops(model, rewrite, "Scan")


class _ScanMatch(_Match):
    """One Scan matched against a chain of cells; `replacement` writes the nodes in its place (raises _NoMatch)."""

    def __init__(self, scan, consts: dict, shapes: dict, opset: int):     # noqa: D107  (not _Match's: a Scan)
        self.loop, self.outer, self.shapes, self.opset = scan, consts, shapes, opset
        attrs = {a.name: a for a in scan.attribute}
        self.body = attrs["body"].g
        _expect(opset >= 9 and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                       for n in self.body.node for a in n.attribute))
        _expect(attrs["num_scan_inputs"].i == 1)
        for key in ("scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"):
            _expect(key not in attrs or all(v == 0 for v in attrs[key].ints))
        self.n_state = len(scan.input) - 1
        _expect(self.n_state >= 1 and len(self.body.input) == self.n_state + 1
                and len(self.body.output) >= self.n_state)
        self.seq = scan.input[-1]
        _expect(self.seq in shapes and len(shapes[self.seq]) == 3)
        self.steps, self.batch, self.width = shapes[self.seq]
        _expect(0 < self.steps <= MAX_TRIPS)
        self.rank = 2

    # ---- the body, its constants folded, activations before a Split moved after it ----------------------
    def _fold(self) -> None:
        local = dict(self.outer)
        local.update({i.name: numpy_helper.to_array(i) for i in self.body.initializer})
        self.through, self.counters, self.states = {}, [], []
        for k in range(self.n_state):
            value = self._carried(k, self.body.input[k].name, self.body.output[k].name, self.loop.input[k], local)
            if value is not None:
                _expect(value.dtype == np.float32 and value.ndim == 2 and value.shape[0] == self.batch)
                self.states.append(k)
        nodes = [n for n in self.body.node if not evaluate_node(n, local, self.opset)]
        self.local, self.nodes = local, _activations_after_split(nodes, {o.name for o in self.body.output})
        self.producer = {o: n for n in self.nodes for o in n.output}

    def _counters(self) -> dict:
        """The counters' final values (the body's control part run `steps` times at build time)."""
        known = {self.body.input[k].name for k in self.counters}
        control = []
        for node in self.nodes:
            if all(not i or i in known or i in self.local for i in node.input):
                control.append(node)
                known.update(o for o in node.output if o)
        values = {self.body.input[k].name: np.asarray(self.outer[self.loop.input[k]]) for k in self.counters}
        for _ in range(self.steps if self.counters else 0):
            env = {**self.local, **values}
            for node in control:
                _expect(evaluate_node(node, env, self.opset))
            _expect(all(self.body.output[k].name in env for k in self.counters))
            values = {self.body.input[k].name: env[self.body.output[k].name] for k in self.counters}
        return {k: values[self.body.input[k].name] for k in self.counters}

    # ---- the cells -------------------------------------------------------------------------------------
    def _try(self, x: str, width: int, st: list) -> tuple | None:
        """The cell on the states `st` ([(body input, body output, initial value name)], h first) fed by `x`."""
        self.xt, self.input_size = x, width
        self.hidden = np.asarray(self.outer[st[0][2]]).shape[-1]
        self.cell = np.asarray(self.outer[st[-1][2]]).shape[-1]
        try:
            if len(st) == 1:
                kind, weights, attrs = self._gru(st[0][0], st[0][1])
                self._verify(kind, *weights, attrs, st)
            else:
                _expect(self._op_of(st[0][1]) in ("Mul", "MatMul") and self._op_of(st[1][1]) == "Add")
                kind, weights, attrs = self._lstm(st[0][0], st[0][1], st[1][0], st[1][1])
                self._verify_lstm(weights, st)
        except (_NoMatch, ValueError, TypeError, IndexError, KeyError, AttributeError, StopIteration):
            return None
        return kind, weights, attrs

    def _cells(self) -> list:
        """The cells in the order they run: [(kind, [W, R, B], attrs, x (body name), states (indices))]."""
        st = {k: (self.body.input[k].name, self.body.output[k].name, self.loop.input[k]) for k in self.states}
        _expect(all(np.asarray(self.outer[s[2]]).shape[-1] <= 512 for s in st.values()))
        feeds, pending, cells = [(self.body.input[-1].name, self.width)], list(self.states), []
        while pending:
            found = None
            for x, width in feeds:
                groups = [[k] for k in pending] + [[h, c] for h in pending for c in pending if h != c]
                for ks in groups:
                    got = self._try(x, width, [st[k] for k in ks])
                    if got is not None:
                        found = (*got, x, ks)
                        break
                if found:
                    break
            _expect(found is not None)
            cells.append(found)
            pending = [k for k in pending if k not in found[4]]
            feeds.append((st[found[4][0]][1], np.asarray(self.outer[st[found[4][0]][2]]).shape[-1]))
        return cells

    # ---- the replacement ---------------------------------------------------------------------------------
    def replacement(self, added: dict, read: set) -> list:
        self._fold()
        finals = self._counters()
        cells = self._cells()
        scan, tag0 = self.loop, self.loop.name or self.loop.output[0]
        h_outs = {self._through_identity(self.body.output[c[4][0]].name): j for j, c in enumerate(cells)}
        scan_outs = []
        for o, b in zip(scan.output[self.n_state:], self.body.output[self.n_state:]):
            j = h_outs.get(self._through_identity(b.name))
            _expect(j is not None)
            scan_outs.append((o, j))
        # what each cell must give: Y (a cell above reads it, or a scan output), Y_h / Y_c (final states read)
        x_of = [h_outs.get(self._through_identity(c[3])) for c in cells]
        need_y = {j for j in x_of if j is not None} | {j for o, j in scan_outs if o in read}
        nodes, names = [], {}
        for j, (kind, (W, R, B, *more), attrs, x, ks) in enumerate(cells):
            tag = f"{tag0}/cell{j}/{kind.lower()}"
            P, proj = more or (None, None)
            inits = [np.asarray(self.outer[scan.input[k]], np.float32) for k in ks]
            if proj is not None:    # the recurrence reads m = o * tanh(c) through R proj^T; h = m proj after it
                _expect(not np.any(inits[0]))
                R, inits[0] = R @ proj.T, np.zeros((self.batch, proj.shape[0]), np.float32)
            ins = [self.seq if x_of[j] is None else names[x_of[j]]]
            for key, v in (("W", W), ("R", R), ("B", B)):
                added[f"{tag}/{key}"] = np.asarray(v, np.float32)[None]
                ins.append(f"{tag}/{key}")
            ins += [""]
            for k, v in zip(ks, inits):
                added[f"{tag}/init{k}"] = v[None]
                ins.append(f"{tag}/init{k}")
            if P is not None:
                added[f"{tag}/P"] = np.asarray(P, np.float32)[None]
                ins.append(f"{tag}/P")
            outs = [f"{tag}/Y" if j in need_y else ""]
            outs += [f"{tag}/Y_{'hc'[m]}" if scan.output[k] and scan.output[k] in read else ""
                     for m, k in enumerate(ks)]
            outs[0] = outs[0] or ("" if any(outs) else f"{tag}/Y")      # (a cell nothing reads: its Y, unread)
            nodes.append(helper.make_node(kind, ins, outs, name=tag, hidden_size=int(R.shape[-1]), **attrs))
            if j in need_y:
                names[j] = f"{tag}/Y_squeezed"
                nodes += self._squeeze(f"{tag}/Y", names[j], 1, tag, added)
                if proj is not None:
                    nodes += self._project(names[j], f"{tag}/Y_projected", proj, tag, added)
                    names[j] = f"{tag}/Y_projected"
            for m, k in enumerate(ks):
                if outs[1 + m] and m == 0 and proj is not None:
                    nodes += self._squeeze(outs[1], f"{tag}/Y_h_squeezed", 0, tag, added)
                    nodes += self._project(f"{tag}/Y_h_squeezed", scan.output[k], proj, tag, added)
                elif outs[1 + m]:
                    nodes += self._squeeze(outs[1 + m], scan.output[k], 0, tag, added)
        for o, j in scan_outs:
            if o and o in read:
                nodes.append(helper.make_node("Identity", [names[j]], [o], name=f"{tag0}/{o}"))
        for k in range(self.n_state):
            o = scan.output[k]
            if o and k in self.through:
                nodes.append(helper.make_node("Identity", [self.through[k]], [o], name=f"{tag0}/{o}"))
            elif o and k in finals:
                added[o] = np.asarray(finals[k])
        return nodes

    # ---- TF's LSTMCell with peepholes and / or a projection (num_proj) ------------------------------------
    def _op_of(self, name: str) -> str | None:
        node = self.producer.get(self._through_identity(name))
        return None if node is None else node.op_type

    def _form(self, name: str, leaves: dict) -> tuple[dict, np.ndarray]:
        """loop_recurrent's affine forms, and a form times a constant vector along the last axis (a peephole:
        c * w_diag, c a leaf)."""
        node = self.producer.get(name)
        if name not in leaves and node is not None and node.op_type == "Mul":
            const = [i for i in node.input if i in self.local]
            _expect(len(const) == 1)
            terms, bias = self._form(next(i for i in node.input if i not in self.local), leaves)
            c = np.asarray(self.local[const[0]], np.float64)
            _expect(c.size in (1, len(bias)) and (c.ndim <= 1 or all(d == 1 for d in c.shape[:-1])))
            c = c.reshape(-1)
            return {k: m * c for k, m in terms.items()}, bias * c
        return super()._form(name, leaves)

    def _lstm(self, h_in: str, h_out: str, c_in: str, c_out: str):
        """TF's LSTMCell: i, f = sigmoid(. + w_i, w_f * c), o = sigmoid(. + w_o * c'), h' = (o * tanh c') proj,
        each part optional: [W, R, B, P, proj] (R over h, proj [cell][hidden] or None, P [3 * cell] or None)."""
        H, xt, c_leaf = self.cell, self.xt, self._through_identity(c_out)
        m_name, proj = h_out, None
        if self._op_of(h_out) == "MatMul":
            node = self._op(h_out, "MatMul")
            proj, m_name = self._const(node.input[1], 2), node.input[0]
            _expect(proj.shape == (H, self.hidden))
        else:
            _expect(H == self.hidden)
        o, tc = self._pair(self._op(m_name, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                           lambda v: self._op(v, "Tanh"))
        _expect(self._through_identity(tc.input[0]) == c_leaf)

        def forget(name):
            return self._pair(self._op(name, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                              lambda v: _expect(v == c_in) or v)[0]

        def write(name):
            return self._pair(self._op(name, "Mul"), lambda v: self._op(v, "Sigmoid").output[0],
                              lambda v: self._op(v, "Tanh").output[0])

        f, (i, g) = self._pair(self._op(c_leaf, "Add"), forget, write)
        base = {xt: self.input_size, h_in: self.hidden}
        gates = [self._gate(i, "Sigmoid", {**base, c_in: H}), self._gate(o, "Sigmoid", {**base, c_leaf: H}),
                 self._gate(f, "Sigmoid", {**base, c_in: H}), self._gate(g, "Tanh", base)]
        peep = []
        for (terms, _), c in zip(gates, (c_in, c_leaf, c_in, None)):
            _expect(xt in terms and h_in in terms and set(terms) <= {xt, h_in, c})
            d = terms.get(c, np.zeros((H, H)))
            _expect(np.all(d == np.diag(np.diag(d))))
            peep.append(np.diag(d))
        W = np.concatenate([t[xt] for t, _ in gates], axis=1).T
        R = np.concatenate([t[h_in] for t, _ in gates], axis=1).T
        B = np.concatenate([b for _, b in gates] + [np.zeros(4 * H)])
        P = np.concatenate(peep[:3]) if np.any(peep[:3]) else None
        return "LSTM", [W, R, B, P, proj], {}

    def _verify_lstm(self, weights: list, st: list) -> None:
        """The body (its dynamic nodes) run on random x_t, h and c against lstm_step."""
        rng = np.random.default_rng(0)
        feeds = {self.xt: rng.normal(size=(self.batch, self.input_size)).astype(np.float32)}
        for (name, _, init) in st:
            feeds[name] = rng.uniform(-1, 1, (self.batch, np.asarray(self.outer[init]).shape[-1])).astype(np.float32)
        env = {**self.local, **feeds}
        for node in self.nodes:
            if node is not self.producer.get(self.xt) and all(not i or i in env for i in node.input):
                _expect(evaluate_node(node, env, self.opset))
        want = lstm_step(*weights, feeds[self.xt], *(feeds[s[0]] for s in st))
        for (_, out, _), w in zip(st, want):
            _expect(out in env)
            got = np.asarray(env[out], np.float64).reshape(w.shape)
            _expect(np.max(np.abs(got - w)) <= 1e-4 * max(1.0, np.max(np.abs(w))))

    def _project(self, value: str, out: str, proj: np.ndarray, tag: str, added: dict) -> list:
        added[f"{tag}/projection"] = np.asarray(proj, np.float32)
        return [helper.make_node("MatMul", [value, f"{tag}/projection"], [out], name=out)]


def _activations_after_split(nodes: list, outputs: set) -> list:
    """Split(Sigmoid(a)) written as Sigmoid(Split(a)[k]) (TF1's GRUCell splits its gates after the sigmoid), where
    the activation's value is read by the Split only; the same values, the gates then one activation each."""
    readers: dict = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    producer = {o: n for n in nodes for o in n.output}
    moved = {}
    for n in nodes:
        act = producer.get(n.input[0]) if n.op_type == "Split" and n.input else None
        if act is not None and act.op_type in ACTIVATIONS and act.output[0] not in outputs \
                and len(readers.get(act.output[0], [])) == 1:
            moved[id(act)] = act
    out = []
    for n in nodes:
        if id(n) in moved:
            continue
        act = producer.get(n.input[0]) if n.op_type == "Split" and n.input else None
        if act is None or id(act) not in moved:
            out.append(n)
            continue
        split = helper.make_node("Split", [act.input[0], *n.input[1:]], [f"{o}/pre" if o else "" for o in n.output],
                                 name=n.name)
        split.attribute.extend(n.attribute)
        out.append(split)
        out += [helper.make_node(act.op_type, [f"{o}/pre"], [o], name=f"{o}/{act.op_type}") for o in n.output if o]
    return out


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_step(W, R, B, P, proj, x, h, c) -> list:
    """One step of TF's LSTMCell in float64 (ONNX's gate order i, o, f, c; P [3 * cell] i, o, f or None; proj
    [cell][hidden] or None): [h', c']."""
    H = len(W) // 4
    pre = np.asarray(x, np.float64) @ W.T + np.asarray(h, np.float64) @ R.T + B[:4 * H] + B[4 * H:]
    c = np.asarray(c, np.float64)
    P = np.zeros(3 * H) if P is None else P
    i = _sigmoid(pre[:, :H] + P[:H] * c)
    f = _sigmoid(pre[:, 2 * H:3 * H] + P[2 * H:] * c)
    c2 = f * c + i * np.tanh(pre[:, 3 * H:])
    m = _sigmoid(pre[:, H:2 * H] + P[H:2 * H] * c2) * np.tanh(c2)
    return [m if proj is None else m @ proj, c2]
