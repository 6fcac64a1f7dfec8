"""Everything edgec cannot build is said before anything is built, all at once: `edgec inspect` lists every
unsupported node (op type, node name, opset) and every node beyond a limit (which limit), and `edgec
build` stops with one line naming all of them."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import assert_clean_error, edgec, make_model, save
from edgec import api
from edgec.frontend import canonicalize
from edgec.frontend import loader
from edgec.errors import EdgecError
from edgec.ops.registry import graph_macs


def many_problems_model():
    """conv -> dilated max pool (limit) -> Hardmax (unsupported) -> relu -> cubic Resize (limit) -> custom
    op (unsupported domain) -> relu, and an If on a side branch (control flow)."""
    rng = np.random.default_rng(0)
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["b_out"])], "branch", [],
                               [helper.make_tensor_value_info("b_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], dilations=[2, 2], name="dilated_pool"),
             helper.make_node("Hardmax", ["p"], ["h"], name="hardmax"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Resize", ["r", "", "scales"], ["z"], mode="cubic", name="cubic_resize"),
             helper.make_node("MyOp", ["z"], ["m"], domain="com.example", name="custom"),
             helper.make_node("Relu", ["m"], ["y"], name="relu_out"),
             # the If's condition is known only at run time (a constant one is folded: edgec/frontend/fold.py)
             helper.make_node("ReduceMax", ["x"], ["x_max"], keepdims=0, name="x_max"),
             helper.make_node("Greater", ["x_max", "zero"], ["cond"], name="positive"),
             helper.make_node("If", ["cond"], ["side"], then_branch=branch, else_branch=branch, name="branchy")]
    inits = {"w": rng.normal(size=(4, 4, 3, 3)).astype(np.float32), "scales": np.array([1, 1, 2, 2], np.float32),
             "zero": np.array(0, np.float32)}
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
        value_info=[helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 4, 12, 12])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    return loader.prepare(model)


EXPECTED = [("MaxPool", "dilated_pool", "limit", "dilated pooling"), ("Hardmax", "hardmax", "unsupported", ""),
            ("Resize", "cubic_resize", "limit", "mode 'cubic'"),
            ("com.example.MyOp", "custom", "unsupported", "custom domain 'com.example'"),
            ("If", "branchy", "unsupported", "control flow")]


def test_every_problem_is_found():
    graph, found = canonicalize.survey(many_problems_model(), "m")
    got = [(p.op, p.node, "unsupported" if p.unsupported else "limit") for p in found]
    assert got == [e[:3] for e in EXPECTED]
    for p, (_, _, _, what) in zip(found, EXPECTED):
        assert what in p.detail and p.opset == (1 if p.op.startswith("com.") else 13)
    # the survey went on past every problem: the conv and both relus are in the canonical graph
    kinds = [op.kind for op in graph.ops]
    assert "conv2d" in kinds and kinds.count("unsupported") == 5, kinds   # the If (on a run-time condition) too
    assert graph_macs(graph) == 4 * 4 * 9 * 64


def test_build_names_every_problem_in_one_line(tmp_path):
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(many_problems_model(), "m")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("unsupported operators: Hardmax (hardmax, opset 13), com.example.MyOp (custom, opset 1), "
                          "If (branchy, opset 13); 2 nodes beyond edgec's limits: node 'dilated_pool' (MaxPool): "
                          "dilated pooling is not supported yet; node 'cubic_resize' (Resize): "), msg
    path = save(many_problems_model(), tmp_path)
    calib = tmp_path / "c.npz"
    np.savez(calib, x=np.zeros((2, 4, 8, 8), np.float32))
    proc = edgec("build", path, "--calib", calib, "--board", "host", "-o", tmp_path / "out")
    assert_clean_error(proc, "Hardmax (hardmax, opset 13)", "If (branchy, opset 13)", "'dilated_pool'",
                       "'cubic_resize'", "com.example.MyOp (custom, opset 1)")
    assert not (tmp_path / "out").exists()


def test_inspect_lists_every_problem_with_macs_and_arena(tmp_path):
    path = save(many_problems_model(), tmp_path)
    info = api.inspect_model(path)
    assert [(p["op"], p["node"], p["kind"]) for p in info["problems"]] == [e[:3] for e in EXPECTED]
    assert all(p["opset"] in (1, 13) for p in info["problems"])
    status = {n["name"]: n["supported"] for n in info["nodes"]}
    assert status == {"conv": True, "dilated_pool": False, "hardmax": False, "relu": True, "cubic_resize": False,
                      "custom": False, "relu_out": True, "x_max": True, "positive": True, "branchy": False}
    assert info["macs"] == 4 * 4 * 9 * 64 and info["arena_bytes_estimate"] > 0
    proc = edgec("inspect", path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "limit: MaxPool (dilated_pool, opset 13): dilated pooling is not supported yet" in lines
    assert any(ln.startswith("unsupported: If (branchy, opset 13): control flow is not supported") for ln in lines)
    assert any(ln.startswith("unsupported: com.example.MyOp (custom, opset 1): operator of the custom domain")
               for ln in lines)
    assert "(of the nodes edgec can build; 5 it cannot)" in lines[-1]
    js = json.loads(edgec("inspect", path, "--json").stdout)
    assert len(js["problems"]) == 5 and js["unsupported"] == ["Hardmax (hardmax, opset 13)",
                                                               "com.example.MyOp (custom, opset 1)",
                                                               "If (branchy, opset 13)"]


def test_a_single_limit_keeps_its_own_message():
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], name="dilated")]
    model = make_model(nodes, ("x", [1, 4, 5, 5]), ("y", [1, 4, 3, 3]), {})
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(model, "m")
    assert str(err.value) == "node 'dilated' (MaxPool): dilated pooling is not supported yet"


def test_unsupported_operators_on_constants_are_folded():
    """An operator edgec has no kernel for is fine when its inputs are all constants: folded at build time."""
    nodes = [helper.make_node("NonZero", ["mask"], ["nz"], name="nonzero"),
             helper.make_node("ReduceMax", ["nz"], ["k"], keepdims=0, name="kmax"),
             helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Mul", ["x", "kf"], ["y"], name="scale")]
    model = make_model(nodes, ("x", [1, 4]), ("y", [1, 4]), {"mask": np.array([0, 1, 0, 1], np.int64)})
    graph, found = canonicalize.survey(model, "m")
    assert found == [] and [op.kind for op in graph.ops] == ["lut"]


def test_operators_defined_as_onnx_functions_are_expanded_or_named():
    """A LayerNormalization over two axes is built from its ONNX function body (its nodes carry its name; over
    the last axis alone it is one layer_norm op, tests/kernels/test_norm.py); Hardmax's body needs
    operators edgec lacks, so it stays and is named itself."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=1, name="ln"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    model = make_model(nodes, ("x", [1, 6, 16]), ("y", [1, 6, 16]),
                       {"g": rng.uniform(0.5, 1.5, (6, 16)), "b": rng.normal(size=(6, 16))}, opset=17)
    assert "LayerNormalization" not in {n.op_type for n in model.graph.node}
    graph, found = canonicalize.survey(model, "m")
    assert found == [] and {op.kind for op in graph.ops} >= {"reduce", "binary"}
    assert all(op.name.startswith("ln/") for op in graph.ops if op.kind == "reduce")
    nodes = [helper.make_node("Hardmax", ["x"], ["y"], name="hm")]      # (GreaterOrEqual is built since h43-where)
    model = make_model(nodes, ("x", [1, 4]), ("y", [1, 4]), {}, opset=16)
    assert [str(p) for p in canonicalize.survey(model, "m")[1]] == \
        ["Hardmax (hm, opset 16): unsupported operator"]


def test_an_unsupported_operator_after_another_is_named_too():
    """Two custom-domain operators in a row (skl2onnx's Imputer ... ArrayFeatureExtractor; its Scaler is built since
    h44-ops): the second was marked supported, its input unknown after the first, and the build named only the
    first."""
    nodes = [helper.make_node("Imputer", ["x"], ["s"], domain="ai.onnx.ml", name="imputer",
                              imputed_value_floats=[0.0] * 4, replaced_value_float=float("nan")),
             helper.make_node("Cast", ["s"], ["r"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("MyOp", ["r"], ["y"], domain="com.example", name="custom")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(loader.prepare(model), "m")
    assert str(err.value).startswith("unsupported operators: ai.onnx.ml.Imputer (imputer, opset 1), "
                                     "com.example.MyOp (custom, opset 1);"), err.value


def test_operators_onnx_does_not_define_are_named_at_once():
    """A FINN file writes QONNX's operators in ONNX's own domain (Quant is taken: edgec/frontend/qonnx.py; Trunc is
    not): refused naming every such node, not as an "invalid ONNX model" naming ONNX's checker's first complaint."""
    nodes = [helper.make_node("Trunc", ["x", "one", "zero", "bits", "bits"], ["q"], name="quant_in"),
             helper.make_node("Relu", ["q"], ["r"], name="relu"),
             helper.make_node("Trunc", ["r", "one", "zero", "bits", "bits"], ["y"], name="quant_out")]
    inits = {"one": np.array(1.0, np.float32), "zero": np.array(0.0, np.float32), "bits": np.array(8.0, np.float32)}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(EdgecError) as err:
        loader.prepare(model, "m.onnx")
    assert str(err.value).startswith("m.onnx: operators ONNX does not define, in its default domain: Trunc (2 nodes: "
                                     "quant_in, quant_out); edgec builds ONNX operators"), err.value
    erfc = helper.make_graph([helper.make_node("Erfc", ["x"], ["y"], name="erfc")], "g",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    with pytest.raises(EdgecError) as err:           # tf2onnx 1.17's GELU
        loader.prepare(helper.make_model(erfc, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    assert str(err.value) == ("m.onnx: operators ONNX does not define, in its default domain: Erfc (1 node: erfc); "
                              "edgec builds ONNX operators"), err.value
