"""ONNX operators edgec builds from their ONNX function bodies (edgec/frontend/functions.py): opset 23's Attention,
which torch.onnx's dynamo exporter writes for F.scaled_dot_product_attention, and the -inf
mask its causal form adds before the Softmax, folded into a masked softmax (edgec/ops/softmax/masked.py)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import helper

from conftest import make_model
from edgec.frontend import canonicalize
from edgec.quant import floatref, numerics

D, S = 12, 5


def _attention(**attrs):
    """x [1, S, D] -> three MatMuls (q, k, v) -> Attention (3-D inputs, 2 heads) -> MatMul -> out, opset 23."""
    rng = np.random.default_rng(0)
    consts = {n: rng.normal(size=(D, D)).astype(np.float32) for n in ("wq", "wk", "wv", "wo")}
    nodes = [helper.make_node("MatMul", ["x", f"w{n}"], [n], name=n) for n in "qkv"]
    nodes += [helper.make_node("Attention", ["q", "k", "v"], ["a"], name="att", q_num_heads=2, kv_num_heads=2,
                               **attrs),
              helper.make_node("MatMul", ["a", "wo"], ["out"], name="out")]
    return make_model(nodes, ("x", [1, S, D]), ("out", [1, S, D]), consts, opset=23)


def test_an_opset23_attention_is_built_from_its_function_body():
    """Attention was an unsupported operator; its body (with its integer head-count arithmetic, Mod included, folded
    at build time) is MatMul / Softmax / MatMul, and edgec's float graph of it is ONNX Runtime's result."""
    model = _attention()
    assert "Attention" not in {n.op_type for n in model.graph.node}
    graph = canonicalize.canonicalize(model, "m")
    assert "softmax" in [op.kind for op in graph.ops]
    x = np.random.default_rng(1).normal(size=(1, S, D)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_a_causal_attention_is_a_masked_softmax():
    """is_causal=1 adds a -inf mask (and a float Cast) before the Softmax: it was refused ("edgec does not run masked
    attention yet"); the mask is now folded into a masked_softmax (edgec/ops/softmax/masked.py), no -inf left in the
    graph, and edgec's float graph is ONNX Runtime's result."""
    model = _attention(is_causal=1)
    graph = canonicalize.canonicalize(model, "m")
    assert "masked_softmax" in [op.kind for op in graph.ops] and "softmax" not in [op.kind for op in graph.ops]
    numerics.check_finite(graph)
    x = np.random.default_rng(1).normal(size=(1, S, D)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(floatref.output(graph, x).reshape(want.shape), want, rtol=1e-4, atol=1e-4)
