"""Opsets 11 up to the newest the installed onnx knows give the same INT8 model; older ones are converted;
what edgec cannot take (control flow, several inputs or outputs, dynamic dimensions, an opset newer than
onnx knows) is one clear line; external-data models load."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, version_converter

from conftest import make_model, save
from edgec import api
from edgec.frontend import canonicalize, loader
from edgec.frontend import opsets
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.errors import EdgecError

NEWEST = onnx.defs.onnx_opset_version()


def exported(opset: int) -> onnx.ModelProto:
    """The same network written natively at opset 11 or 13 (Split/Squeeze/Unsqueeze attributes vs inputs,
    Resize's roi): conv, relu, split, reflect pad, slice, nearest resize, max pool, concat, global mean,
    squeeze/unsqueeze/reshape, gemm, softmax."""
    rng = np.random.default_rng(0)
    new = opset >= 13
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Split", ["r", "split"] if new else ["r"], ["s1", "s2"], axis=1, name="split",
                         **({} if new else {"split": [4, 4]})),
        helper.make_node("Pad", ["s1", "pads"], ["p"], mode="reflect", name="pad"),
        helper.make_node("Slice", ["p", "st", "en", "ax"], ["sl"], name="slice"),
        helper.make_node("Resize", ["s2", "" if new else "roi", "scales"], ["up"], mode="nearest", name="resize"),
        helper.make_node("MaxPool", ["up"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Concat", ["sl", "mp"], ["cat"], axis=1, name="concat"),
        helper.make_node("ReduceMean", ["cat"], ["gap"], axes=[2, 3], keepdims=1, name="gap"),
        helper.make_node("Squeeze", ["gap", "sq"] if new else ["gap"], ["flat"], name="squeeze",
                         **({} if new else {"axes": [2, 3]})),
        helper.make_node("Unsqueeze", ["flat", "uq"] if new else ["flat"], ["u"], name="unsqueeze",
                         **({} if new else {"axes": [0]})),
        helper.make_node("Reshape", ["u", "shape"], ["rs"], name="reshape"),
        helper.make_node("Gemm", ["rs", "fw", "fb"], ["g"], transB=1, name="fc"),
        helper.make_node("Softmax", ["g"], ["y"], axis=1, name="softmax")]
    inits = {"w": rng.normal(size=(8, 3, 3, 3)) * 0.3, "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "st": np.array([1, 1], np.int64), "en": np.array([9, 9], np.int64), "ax": np.array([2, 3], np.int64),
             "scales": np.array([1, 1, 2, 2], np.float32), "shape": np.array([1, -1], np.int64),
             "fw": rng.normal(size=(5, 8)) * 0.5, "fb": rng.normal(size=5) * 0.1}
    if new:
        inits.update(split=np.array([4, 4], np.int64), sq=np.array([2, 3], np.int64), uq=np.array([0], np.int64))
    else:
        inits["roi"] = np.zeros(0, np.float32)
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 5]), inits, opset=opset)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("opsets")
    rng = np.random.default_rng(1)
    calib, test = tmp / "calib.npz", tmp / "test.npz"
    np.savez(calib, x=rng.normal(size=(16, 3, 8, 8)).astype(np.float32))
    np.savez(test, x=rng.normal(size=(6, 3, 8, 8)).astype(np.float32))
    return tmp, calib, test


def test_opsets_11_13_17_and_newest_give_the_same_int8_model(data):
    tmp, calib, test = data
    x = np.load(test)["x"]
    outs = {}
    for v in sorted({11, 13, 17, NEWEST}):
        m = exported(v) if v in (11, 13) else version_converter.convert_version(exported(13), v)
        assert opsets.default_opset(m) == v
        path = save(m, tmp, f"net_opset{v}.onnx")
        _, g, _ = api.compile_model(path, calib)
        xq = scheme.quantize_input(g.tensors[g.input], x)
        outs[v] = np.stack([reference.run(g, xq[i]) for i in range(len(x))])
        np.testing.assert_array_equal(outs[v], outs[11], err_msg=f"opset {v}")
    # the newest opset runs on the device bit-exact (onnxruntime, for the float side, gets a converted copy)
    out = tmp / "build"
    api.build(tmp / f"net_opset{NEWEST}.onnx", calib, "host", out)
    r = api.bench(out, test)
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["agreement_top1"]["int8_vs_float"] >= 5 / 6


def test_an_old_opset_is_converted(data, tmp_path):
    _, calib, _ = data
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 1, 1], name="pad"),   # opset 2 Pad
             helper.make_node("Conv", ["p", "w"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Upsample", ["r", "scales"], ["u"], mode="nearest", name="up"),
             helper.make_node("Flatten", ["u"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fw"], ["y"], transB=1, name="fc")]
    m = make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 4]),
                   {"w": rng.normal(size=(2, 3, 3, 3)), "scales": np.array([1, 1, 2, 2], np.float32),
                    "fw": rng.normal(size=(4, 512)) * 0.1}, opset=9)
    path = save(m, tmp_path)
    loaded = loader.load_model(path)
    assert opsets.default_opset(loaded) == opsets.CONVERT_TO
    _, g, _ = api.compile_model(path, calib)
    # the zero Pad became the convolution's padding; the Upsample an index map
    assert [op.kind for op in g.ops] == ["transpose", "conv2d", "remap", "reshape", "fully_connected"]
    assert g.ops[1].attrs["pad"] == (1, 1)


def test_an_opset_newer_than_onnx_knows_is_refused(tmp_path):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", NEWEST + 1)]), tmp_path)
    with pytest.raises(EdgecError, match=f"uses opset {NEWEST + 1} but the installed onnx .* knows opsets up to "
                                         f"{NEWEST}; upgrade onnx"):
        loader.load_model(path)


def _body(kind):
    """A trivial subgraph for If / Loop / Scan."""
    f = TensorProto.FLOAT
    if kind == "If":
        return helper.make_graph([helper.make_node("Relu", ["r"], ["o"])], "b", [],
                                 [helper.make_tensor_value_info("o", f, None)])
    if kind == "Loop":
        return helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                                  helper.make_node("Relu", ["v_in"], ["v_out"])], "b",
                                 [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                  helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                                  helper.make_tensor_value_info("v_in", f, None)],
                                 [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                                  helper.make_tensor_value_info("v_out", f, None)])
    return helper.make_graph([helper.make_node("Add", ["s_in", "e"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["scan_out"])], "b",
                             [helper.make_tensor_value_info("s_in", f, [4]), helper.make_tensor_value_info("e", f, [4])],
                             [helper.make_tensor_value_info("s_out", f, [4]),
                              helper.make_tensor_value_info("scan_out", f, [4])])


def test_control_flow_is_named_before_anything_is_built(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             # a condition known only at run time (a constant one is folded to its branch: edgec/frontend/fold.py)
             helper.make_node("ReduceMax", ["r"], ["r_max"], keepdims=0, name="r_max"),
             helper.make_node("Greater", ["r_max", "zero"], ["cond"], name="positive"),
             helper.make_node("If", ["cond"], ["a"], then_branch=_body("If"), else_branch=_body("If"), name="if_node"),
             # too many trips to unroll (a short loop is written out: edgec/frontend/unroll.py)
             helper.make_node("Loop", ["many", "cond", "r"], ["b"], body=_body("Loop"), name="loop_node"),
             # too many steps to write out (a Scan of a known, short length is: edgec/frontend/unroll.py)
             helper.make_node("Tile", ["r", "steps"], ["b2"], name="tile"),
             helper.make_node("Scan", ["zeros", "b2"], ["s", "y2"], body=_body("Scan"), num_scan_inputs=1,
                              name="scan_node"),
             helper.make_node("Relu", ["r"], ["y"], name="out")]
    m = make_model(nodes, ("x", [1, 4]), ("y", [1, 4]), {"zero": np.array(0, np.float32), "many": np.array(10 ** 9, np.int64),
                                                         "zeros": np.zeros(4, np.float32),
                                                         "steps": np.array([5000, 1], np.int64)})
    path = save(m, tmp_path)
    info = api.inspect_model(path)
    flow = [(p["op"], p["node"]) for p in info["problems"]]
    assert flow == [("If", "if_node"), ("Loop", "loop_node"), ("Scan", "scan_node")]
    assert all("control flow is not supported" in p["what"] and p["opset"] == 13 for p in info["problems"])
    calib = tmp_path / "c.npz"
    np.savez(calib, x=np.ones((2, 4), np.float32))
    with pytest.raises(EdgecError, match=r"unsupported operators: If \(if_node, opset 13\), Loop \(loop_node, "
                                         r"opset 13\), Scan \(scan_node, opset 13\); nothing was built"):
        api.build(path, calib, "host", tmp_path / "out", firmware=False)
    assert not (tmp_path / "out").exists()


def _io_model(n_in, n_out, dims=(1, 4)):
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(f"x{i}", f, list(dims)) for i in range(n_in)]
    nodes = [helper.make_node("Relu", [f"x{i % n_in}"], [f"y{i}"]) for i in range(n_out)]
    outs = [helper.make_tensor_value_info(f"y{i}", f, list(dims)) for i in range(n_out)]
    return helper.make_model(helper.make_graph(nodes, "io", ins, outs), opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("n_in,n_out,dims,message", [
    (1, 1, (1, "time"), r"input 'x0' has a dynamic dimension 1 \('time'\); edgec takes its size from the "
     r"calibration set: give --calib FILE.npz .*or export the model with a fixed input shape"),
])
def test_what_edgec_cannot_take_is_one_clear_line(tmp_path, n_in, n_out, dims, message):
    path = save(_io_model(n_in, n_out, dims), tmp_path)
    with pytest.raises(EdgecError, match=message) as err:
        canonicalize.canonicalize(loader.load_model(path), "io")
    assert "\n" not in str(err.value)


def test_unsupported_nodes_of_a_model_with_several_inputs_and_outputs_are_one_error(tmp_path):
    """Two inputs and two outputs (which edgec builds), a NonMaxSuppression without its maximum (edgec needs the
    static bound) and a Loop whose trip count is computed: one error lists both nodes (operator and node name),
    before anything is built."""
    f = TensorProto.FLOAT
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Relu", ["v_in"], ["v_out"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_in", f, [1, 1, 4])],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_out", f, [1, 1, 4])])
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms"),
             helper.make_node("ReduceMax", ["scores"], ["m"], name="rmax", keepdims=0),
             helper.make_node("Cast", ["m"], ["trip"], to=TensorProto.INT64, name="trip_count"),
             helper.make_node("Loop", ["trip", "", "scores"], ["looped"], body=body, name="loop"),
             helper.make_node("Relu", ["scores"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "det", [helper.make_tensor_value_info("boxes", f, [1, 4, 4]),
                                             helper.make_tensor_value_info("scores", f, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", f, [1, 1, 4]),
                               helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])])
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path)
    with pytest.raises(EdgecError) as err:
        canonicalize.canonicalize(loader.load_model(path), "det")
    msg = str(err.value)
    assert "\n" not in msg
    for part in ("node 'nms' (NonMaxSuppression): max_output_boxes_per_class", "Loop (loop", "nothing was built"):
        assert part in msg, (part, msg)


def test_a_dynamic_batch_is_pinned_to_one(tmp_path):
    path = save(_io_model(1, 1, ("N", 4)), tmp_path)
    m = loader.load_model(path)
    assert loader.static_shape(m.graph.input[0]) == (1, 4)


def test_external_data_models_load_and_build(tmp_path):
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc")]
    m = make_model(nodes, ("x", [1, 64]), ("y", [1, 32]), {"w": rng.normal(size=(32, 64)), "b": rng.normal(size=32)})
    path = tmp_path / "ext.onnx"
    onnx.save(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="ext.data",
              size_threshold=0)
    assert (tmp_path / "ext.data").is_file()
    assert numpy_helper.to_array(loader.load_model(path).graph.initializer[0]).shape in ((32, 64), (32,))
    calib = tmp_path / "c.npz"
    np.savez(calib, x=rng.normal(size=(8, 64)).astype(np.float32))
    out = tmp_path / "out"
    api.build(path, calib, "host", out, firmware=False)
    copy = onnx.load(str(out / "model.onnx"), load_external_data=False)      # the build keeps one file
    assert all(i.data_location != TensorProto.EXTERNAL for i in copy.graph.initializer)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(EdgecError, match="keeps its data in an external file that cannot be read"):
        loader.load_model(path)
