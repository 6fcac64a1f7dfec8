"""edgec/frontend/fold.py: build-time folding keeps the values a Loop's body reads from the outer scope. A
torch.jit.script recurrence whose initial state is a graph input (tests/data/make_torch_script_loop.py, exported by
torch.onnx's TorchScript exporter) is an ONNX Loop whose body reads the Constants written before it: folded away
as unread, they left the body's Unsqueeze without an input and the model "invalid" (shape inference failed). Kept,
the Loop is unrolled (edgec/frontend/unroll.py) with the graph input h0 as its first carried state."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import hostcc
from conftest import WARN, host_compiler, library_sources
from edgec import api, ports
from edgec.codegen import cmodel
from edgec.frontend import fold, loader
from edgec.plan import planner
from edgec.quant import reference

DATA = Path(__file__).resolve().parent / "data"
MODEL = DATA / "torch_script_loop.onnx"


def sqnr(want, got) -> float:
    return float(10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)))


def test_subgraph_reads_are_the_outer_values_a_body_reads():
    model = onnx.load(str(MODEL))
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    outer = {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    assert outer & fold.subgraph_reads(loop)                 # the exporter's Constants, read inside the body
    inner = helper.make_node("Neg", ["deep"], ["d"])
    nested = helper.make_node("If", ["c"], ["o"], then_branch=helper.make_graph([inner], "t", [], []),
                              else_branch=helper.make_graph([], "e", [], []))
    wrapper = helper.make_node("Loop", ["", ""], [], body=helper.make_graph([nested], "b", [], []))
    assert fold.subgraph_reads(wrapper) == {"c", "deep"}


def test_a_scripted_loop_whose_state_is_a_graph_input_loads_unrolled():
    model = loader.prepare(onnx.load(str(MODEL)), "torch_script_loop.onnx")
    assert not any(n.op_type == "Loop" for n in model.graph.node)
    assert [i.name for i in loader.graph_inputs(model)] == ["x", "h0"]
    d = np.load(DATA / "torch_script_loop_data.npz")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = np.concatenate([sess.run(None, {"x": x[None], "h0": h[None]})[0] for x, h in zip(d["test_x"], d["test_h0"])])
    np.testing.assert_allclose(got, d["test_y"], rtol=1e-5, atol=1e-5)       # the unrolled graph is PyTorch's


def test_the_unrolled_loop_builds_and_the_c_is_bit_exact(tmp_path):
    """INT8 against PyTorch's outputs (the measured figure: docs/models.md), the generated C bit-exact with the
    reference on both inputs packed."""
    d = np.load(DATA / "torch_script_loop_data.npz")
    graph = api.calibrate(MODEL, {"x_x": d["x_x"], "x_h0": d["x_h0"]}).graph
    packed = np.concatenate([d["test_x"].reshape(8, -1), d["test_h0"].reshape(8, -1)], axis=1)
    got = np.concatenate([np.asarray(api.reference(graph, p[None]).y, np.float32).reshape(1, -1) for p in packed])
    value = sqnr(d["test_y"], got)
    print(f"torch.jit.script loop, h0 a graph input: INT8 SQNR {value:.1f} dB against PyTorch")
    assert value > 17.0
    plan = planner.plan(graph)
    cmodel.generate(graph, plan, tmp_path, graph.name)
    xq = ports.quantize_inputs(graph, packed)
    want = np.stack([reference.run(graph, q).reshape(-1) for q in xq])
    (tmp_path / "driver_main.c").write_text(DRIVER)
    exe = tmp_path / "driver"
    hostcc.build(library_sources(tmp_path), tmp_path, exe, host_compiler("gcc"), [*WARN, "-O2", "-I", str(tmp_path)])
    proc = subprocess.run([str(exe)], input=np.ascontiguousarray(xq, np.int8).tobytes(), capture_output=True)
    assert proc.returncode == 0 and proc.stderr == b""
    np.testing.assert_array_equal(np.frombuffer(proc.stdout, np.int8).reshape(want.shape), want)


DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include "torch_script_loop.h"
int main(void)
{
    for (;;) {
        size_t got = fread(torch_script_loop_input_x(), 1, 30, stdin);
        if (got == 0) return 0;
        if (got != 30 || fread(torch_script_loop_input_h0(), 1, 8, stdin) != 8) return 3;
        if (torch_script_loop_invoke() != 0) return 4;
        fwrite(torch_script_loop_output(), 1, TORCH_SCRIPT_LOOP_OUTPUT_BYTES, stdout);
    }
}
"""


def test_initializers_read_only_inside_a_body_are_kept():
    """A Loop whose body reads an initializer of the outer graph, beside a Shape that folds: the initializer stays."""
    body = helper.make_graph([helper.make_node("Add", ["h", "bias"], ["h2"]),
                              helper.make_node("Identity", ["c"], ["c2"])],
                             "body", [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                                      helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                                      helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT, [1, 2])],
                             [helper.make_tensor_value_info("c2", onnx.TensorProto.BOOL, []),
                              helper.make_tensor_value_info("h2", onnx.TensorProto.FLOAT, [1, 2])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["xr"]),
             helper.make_node("Loop", ["n", "t", "xr"], ["y"], body=body)]
    inits = [numpy_helper.from_array(np.int64(3), "n"), numpy_helper.from_array(np.array(True), "t"),
             numpy_helper.from_array(np.ones((1, 2), np.float32), "bias")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])], inits)
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    folded = fold.fold_constants(model)
    assert "bias" in {i.name for i in folded.graph.initializer}


def _if_on_a_dimension(channels: int, graph_output: bool = False) -> onnx.ModelProto:
    """Conv -> Relu, then an If on `Shape(relu)[1] == 8` as TorchScript writes F.local_response_norm's rank test:
    the then branch a Sigmoid of the outer value (and a constant of its own added), the else branch an Identity; a Mul by 2 after it (or the If's output a graph output)."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((channels, 3, 3, 3)).astype(np.float32), "w")
    one = numpy_helper.from_array(np.array([0.5], np.float32), "half")
    then_nodes = [helper.make_node("Sigmoid", ["r"], ["s"]), helper.make_node("Add", ["s", "half"], ["t"])]
    shape = [1, channels, 8, 8]
    then = helper.make_graph(then_nodes, "then", [], [helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, shape)],
                             [one])
    other = helper.make_graph([helper.make_node("Identity", ["r"], ["i"])], "else", [],
                              [helper.make_tensor_value_info("i", onnx.TensorProto.FLOAT, shape)])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["dim"], axis=0),
             helper.make_node("Equal", ["dim", "eight"], ["cond"]),
             helper.make_node("If", ["cond"], ["picked" if not graph_output else "y"], then_branch=then,
                              else_branch=other)]
    if not graph_output:
        nodes.append(helper.make_node("Mul", ["picked", "two"], ["y"]))
    inits = [w, numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(8, np.int64), "eight"), numpy_helper.from_array(np.array(2, np.float32), "two")]
    g = helper.make_graph(nodes, "if_dim", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_an_if_whose_condition_is_known_at_build_time_is_its_branch(tmp_path):
    """An If on a shape (F.local_response_norm's, through TorchScript) was refused as control flow though its
    condition is a constant once the shapes are known: the branch it takes is now written in its place, its
    values renamed, its own constants kept; the graph computes what ONNX Runtime computes on the file."""
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    for channels, graph_output, branch in ((8, False, "Sigmoid"), (4, False, None), (8, True, "Sigmoid")):
        model = _if_on_a_dimension(channels, graph_output)
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        folded = loader.prepare(model, "if_dim.onnx")
        kinds = [n.op_type for n in folded.graph.node]
        assert "If" not in kinds and (branch in kinds if branch else "Sigmoid" not in kinds), kinds
        got = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    onnx.save(_if_on_a_dimension(8), str(tmp_path / "if_dim.onnx"))
    graph = api.calibrate(tmp_path / "if_dim.onnx", {"x": np.random.default_rng(2).standard_normal((8, 3, 8, 8))
                                                     .astype(np.float32)}).graph
    assert api.reference(graph, x).y.shape == (1, 8, 8, 8)


def test_an_if_on_a_value_known_only_at_run_time_is_still_refused():
    model = _if_on_a_dimension(8)
    g = model.graph
    eq = next(n for n in g.node if n.op_type == "Equal")      # a condition on the input's values, not its shape
    g.node.insert(0, helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0))
    eq.input[:] = ["m", "zero"]
    g.initializer.append(numpy_helper.from_array(np.array(0, np.float32), "zero"))
    folded = loader.prepare(model, "if_value.onnx")
    assert "If" in [n.op_type for n in folded.graph.node]
