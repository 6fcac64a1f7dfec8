"""scikit-learn classifier heads (skl2onnx, `zipmap=False`) written in ONNX's own operators before anything else
reads the model: the `ai.onnx.ml` nodes a linear model exports, as a user puts them after a network or after a
StandardScaler.

- Scaler(offset, scale): (x - offset) * scale, a Sub and a Mul of constants;
- LinearClassifier(coefficients, intercepts, classlabels_ints 0..C-1, post_transform): the scores x W^T + b as a
  Gemm, then the post transform (NONE; SOFTMAX: Softmax over the classes; LOGISTIC: Sigmoid); the label output
  ArgMax over the scores (keepdims 0: the class index, which is the label when the labels are 0..C-1; edgec writes
  it as the float value of an int8 index, edgec/ops/reduce.py). One coefficient row (a binary classifier: ONNX
  Runtime scores it s, labels it 1 when s > 0 and gives the pair [1 - s, s], or [1 - sigmoid(s), sigmoid(s)] with
  LOGISTIC) is written as the two rows -w, w (scores [-s, s]: the label their ArgMax, sigmoid of them the
  LOGISTIC pair, plus [1, 0] the NONE pair);
- ArrayFeatureExtractor(classes, index) of a constant class list 0..C-1 (skl2onnx's label after an MLPClassifier's
  ArgMax): the index itself (an Identity), and the integer Cast after it (through a Reshape) too;
- Normalizer(norm L1 / L2 / MAX) over the classes: x / sum |x|, LpNormalization p=2, x / max x; an L1 normalizer
  of probabilities that already sum to 1 (a Softmax, a binary classifier's pair) is that value.

Refused in one line naming each node and what to do: string class labels or labels other than 0..C-1, the post
transforms SOFTMAX_ZERO and PROBIT, a binary classifier with SOFTMAX, a ZipMap (export with
`options={id(model): {"zipmap": False}}`), with every other ai.onnx.ml node of the model; without such a problem
the other ai.onnx.ml operators are left as they are, for the canonicalizer to name with whatever else is in the way.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from edgec.errors import EdgecError

ML = "ai.onnx.ml"
LOWERED = ("Scaler", "LinearClassifier", "Normalizer", "ArrayFeatureExtractor", "ZipMap")   # (ZipMap: refused)


def _attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def lower(model: onnx.ModelProto, where="model") -> onnx.ModelProto:
    """The model with its ai.onnx.ml classifier nodes as ONNX operators (see the module doc); others unchanged."""
    g = model.graph
    if not any(n.domain == ML for n in g.node):
        return model
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    sums_to_one: set[str] = set()          # values that are probabilities summing to 1 per row
    nodes, inits, problems, others, changed = [], [], [], [], False
    indices: set[str] = set()              # class indices (an ArrayFeatureExtractor's output, its views)
    for n in g.node:
        if n.domain in ("", "ai.onnx") and n.input and n.input[0] in indices:
            if n.op_type in ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"):
                indices.add(n.output[0])
            elif n.op_type == "Cast" and _attr(n, "to") in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
                nodes.append(helper.make_node("Identity", [n.input[0]], [n.output[0]], name=n.name))
                indices.add(n.output[0])
                changed = True
                continue
        if n.op_type == "ArrayFeatureExtractor" and n.domain == ML and n.input[0] not in consts:
            others.append(f"node '{n.name}' ({n.op_type}, {ML}): not supported (edgec takes it on a constant list "
                          "of class labels)")
            nodes.append(n)
            continue
        if n.domain != ML or n.op_type not in LOWERED:
            others += [f"node '{n.name}' ({n.op_type}, {ML}): not supported"] if n.domain == ML else []
            nodes.append(n)
            continue
        try:
            new_nodes, new_inits = _lower(n, sums_to_one, consts)
        except EdgecError as e:
            problems.append(str(e))
            continue
        nodes += new_nodes
        inits += new_inits
        changed = True
        if n.op_type == "ArrayFeatureExtractor":
            indices.add(n.output[0])
    if problems:
        raise EdgecError(f"{where}: " + "; ".join(problems + others))
    if not changed:
        return model
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(inits)
    opsets = [o for o in model.opset_import if o.domain != ML or others]
    del model.opset_import[:]
    model.opset_import.extend(opsets)
    if next((o.version for o in opsets if o.domain in ("", "ai.onnx")), 0) < 13:
        raise EdgecError(f"{where}: the ai.onnx.ml classifier is written in ONNX opset 13 operators and the model's "
                         "default opset is older; export it with target_opset 13 or newer")
    return model


def _lower(n, sums_to_one, consts) -> tuple[list, list]:
    what = f"node '{n.name}' ({n.op_type}, {ML})"
    base = n.name or n.output[0]
    if n.op_type == "Scaler":
        offset = np.asarray(_attr(n, "offset", [0.0]), np.float32)
        scale = np.asarray(_attr(n, "scale", [1.0]), np.float32)
        names = [f"{base}__offset", f"{base}__scale"]
        return ([helper.make_node("Sub", [n.input[0], names[0]], [f"{base}__centred"], name=f"{base}__sub"),
                 helper.make_node("Mul", [f"{base}__centred", names[1]], [n.output[0]], name=f"{base}__mul")],
                [numpy_helper.from_array(offset, names[0]), numpy_helper.from_array(scale, names[1])])
    if n.op_type == "LinearClassifier":
        return _linear_classifier(n, what, base, sums_to_one)
    if n.op_type == "ArrayFeatureExtractor":
        labels = np.asarray(consts[n.input[0]]).reshape(-1)
        if labels.dtype.kind not in "iu" or not np.array_equal(labels, np.arange(labels.size)):
            raise EdgecError(f"{what}: class labels {labels[:6].tolist()} are not 0..C-1; train with labels 0..C-1 "
                             "(sklearn's LabelEncoder) and map them back on the host")
        return [helper.make_node("Identity", [n.input[1]], [n.output[0]], name=base)], []
    if n.op_type == "Normalizer":
        norm = str(_attr(n, "norm", "MAX")).upper()
        x, y = n.input[0], n.output[0]
        if norm == "L1" and x in sums_to_one:
            return [helper.make_node("Identity", [x], [y], name=base)], []
        if norm == "L2":
            return [helper.make_node("LpNormalization", [x], [y], name=base, axis=1, p=2)], []
        if norm not in ("L1", "MAX"):
            raise EdgecError(f"{what}: norm {norm} is not one of MAX, L1, L2")
        axes = numpy_helper.from_array(np.array([1], np.int64), f"{base}__axes")
        nodes = [helper.make_node("Abs", [x], [f"{base}__abs"], name=f"{base}__abs")] if norm == "L1" else []
        red = helper.make_node("ReduceSum", [nodes[0].output[0], axes.name], [f"{base}__total"], name=f"{base}__sum",
                               keepdims=1) if norm == "L1" else \
            helper.make_node("ReduceMax", [x], [f"{base}__total"], name=f"{base}__max", axes=[1], keepdims=1)
        return nodes + [red, helper.make_node("Div", [x, f"{base}__total"], [y], name=f"{base}__div")], \
            [axes] if norm == "L1" else []
    raise EdgecError(f"{what}: a ZipMap (the probabilities as a list of maps) is not a tensor; export with "
                     "skl2onnx's options={id(model): {'zipmap': False}}")


def _linear_classifier(n, what, base, sums_to_one) -> tuple[list, list]:
    if _attr(n, "classlabels_strings"):
        raise EdgecError(f"{what}: string class labels are not supported (edgec's outputs are numbers); train with "
                         "integer labels 0..C-1 (sklearn's LabelEncoder) and map them back on the host")
    labels = list(_attr(n, "classlabels_ints", []) or [])
    coef = np.asarray(_attr(n, "coefficients", []), np.float32)
    bias = np.asarray(_attr(n, "intercepts", []) or [0.0], np.float32)
    post = str(_attr(n, "post_transform", "NONE")).upper()
    rows = bias.size
    if not rows or coef.size % rows:
        raise EdgecError(f"{what}: {coef.size} coefficients for {rows} intercepts")
    w = coef.reshape(rows, -1)
    if rows == 1:                        # a binary classifier: scores [-s, s]
        if post not in ("NONE", "LOGISTIC"):
            raise EdgecError(f"{what}: a binary classifier with post_transform {post} is not supported (NONE and "
                             "LOGISTIC are)")
        w, bias = np.concatenate([-w, w]), np.concatenate([-bias, bias])
    classes = w.shape[0]
    if labels and labels != list(range(classes)):
        raise EdgecError(f"{what}: class labels {labels[:6]} are not 0..{classes - 1}; train with labels 0..C-1 "
                         "(a LabelEncoder), or read the probabilities output")
    if post not in ("NONE", "SOFTMAX", "LOGISTIC"):
        raise EdgecError(f"{what}: post_transform {post} is not supported (NONE, SOFTMAX and LOGISTIC are)")
    names = [f"{base}__weights", f"{base}__bias"]
    inits = [numpy_helper.from_array(w, names[0]), numpy_helper.from_array(bias, names[1])]
    out = n.output[1] if len(n.output) > 1 and n.output[1] else ""
    direct = out and post == "NONE" and rows > 1
    scores = out if direct else f"{base}__scores"
    nodes = [helper.make_node("Gemm", [n.input[0], *names], [scores], name=f"{base}__gemm", transB=1)]
    if out and post != "NONE":
        op = {"SOFTMAX": "Softmax", "LOGISTIC": "Sigmoid"}[post]
        kw = {"axis": 1} if op == "Softmax" else {}
        nodes.append(helper.make_node(op, [scores], [out], name=f"{base}__{op.lower()}", **kw))
        if op == "Softmax" or rows == 1:
            sums_to_one.add(out)
    elif out and not direct:               # a binary classifier's NONE pair: [1 - s, s]
        inits.append(numpy_helper.from_array(np.array([1, 0], np.float32), f"{base}__one"))
        nodes.append(helper.make_node("Add", [scores, f"{base}__one"], [out], name=f"{base}__pair"))
    if n.output[0]:
        nodes.append(helper.make_node("ArgMax", [scores], [n.output[0]], name=f"{base}__label", axis=1,
                                      keepdims=0))
    return nodes, inits
