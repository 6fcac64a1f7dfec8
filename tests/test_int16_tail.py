"""An int16 tail (edgec/quant/int16.py `tail_default`, ptq.tail_choice): a float model's output LogSoftmax (or L2
normalization, tests/test_lp_norm.py) and the 16x8 layer feeding it run int16 and the output leaves as an int16
port, by default only where that gains more than fixes.MIN_GAIN_DB on the calibration samples; the generated C
bit-exact with the reference (gcc; clang with sanitizers), the header stating the int16 output."""
from __future__ import annotations

import re

import numpy as np
from onnx import helper

from conftest import check_generated_c_gcc_and_clang, make_model, save, snr_against_ort
from edgec import api
from edgec.codegen import cmodel
from edgec.plan import planner
from edgec.quant import fixes, ptq


def _classifier():
    """x[1, 40] -> Gemm 40->10 -> LogSoftmax: logits within a few tenths of each other, so log-probabilities near
    -ln 10, which an int8 output grid (its range must hold 0) rounds far more coarsely than the logits' own grid."""
    r = np.random.default_rng(3)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["z"], transB=1, name="fc"),
             helper.make_node("LogSoftmax", ["z"], ["y"], axis=-1, name="logp")]
    inits = {"w": r.normal(0, 0.02, (10, 40)), "b": r.normal(0, 0.05, 10)}
    return make_model(nodes, ("x", [1, 40]), ("y", [1, 10]), inits)


def test_a_log_softmax_tail_runs_int16_where_it_gains_with_an_int16_output_port(tmp_path):
    path = save(_classifier(), tmp_path)
    rng = np.random.default_rng(4)
    calib = rng.uniform(-1, 1, (16, 40)).astype(np.float32)
    res = api.calibrate(path, calib, sensitivity_samples=0)
    s8, s16 = map(float, re.search(r"samples (-?[\d.]+) dB int8, (-?[\d.]+) dB int16", res.tail).groups())
    assert s16 > s8 + fixes.MIN_GAIN_DB and res.tail.startswith("output tail int16"), res.tail
    g = res.graph
    assert [(op.kind, g.tensors[op.output].dtype) for op in g.ops][-2:] == [("fully_connected", "int16"),
                                                                           ("log_softmax", "int16")]
    assert res.options.tail_int16 is True
    int8 = api.calibrate(path, calib, sensitivity_samples=0, tail_int16=False)
    assert int8.tail == "" and int8.graph.tensors[int8.graph.output].dtype == "int8"
    x = rng.uniform(-1, 1, (12, 1, 40)).astype(np.float32)
    snr = snr_against_ort(path, x)
    assert snr(res) > snr(int8) + 3, (snr(res), snr(int8))
    check_generated_c_gcc_and_clang(g, x, tmp_path)
    out = tmp_path / "h"
    cmodel.generate(g, planner.plan(g), out, "tail")
    header = (out / "tail.h").read_text()
    assert "int16" in header and "OUTPUT" in header


def test_asked_either_way_the_tail_is_that_and_no_choice_is_reported(tmp_path):
    path = save(_classifier(), tmp_path)
    calib = np.random.default_rng(5).normal(size=(16, 40)).astype(np.float32)
    for forced in (True, False):
        r = api.calibrate(path, calib, sensitivity_samples=0, tail_int16=forced)
        assert r.tail == "" and r.graph.tensors[r.graph.output].dtype == ("int16" if forced else "int8")
    q = ptq.QuantOptions(sensitivity_samples=0, weights="int4")        # int4 weights: the tail stays int8
    np.savez(tmp_path / "calib.npz", x=calib)
    r = api.calibrate_model(path, tmp_path / "calib.npz", q)[1]
    assert r.tail == "" and r.graph.tensors[r.graph.output].dtype == "int8"


def test_a_tail_whose_int16_variant_does_not_quantize_keeps_the_int8_one(tmp_path, monkeypatch):
    """Where the int16 variant cannot be quantized (its kernel's multipliers out of range: here made to fail), the
    default keeps the int8 tail and says why, where forcing the int16 one is that error."""
    import pytest
    from edgec.errors import EdgecError
    from edgec.ops.softmax import log_softmax16

    def refuse(op, *_):
        raise EdgecError(f"node '{op.name}': no int16 LogSoftmax here")
    monkeypatch.setattr(log_softmax16, "quantize", refuse)
    path = save(_classifier(), tmp_path)
    calib = np.random.default_rng(4).uniform(-1, 1, (16, 40)).astype(np.float32)
    res = api.calibrate(path, calib, sensitivity_samples=0)
    assert res.tail.startswith("output tail int8: its int16 variant does not quantize (node 'logp'"), res.tail
    assert res.graph.tensors[res.graph.output].dtype == "int8"
    with pytest.raises(EdgecError, match="node 'logp'"):
        api.calibrate(path, calib, sensitivity_samples=0, tail_int16=True)


def _two_heads(head: str = "Softplus", outputs=("mu", "s"), **attrs):
    """x[1, 32] -> Gemm 32->16 -> Relu -> two heads: Gemm 16->8 (the mean) and Gemm 16->8 -> `head` (a VAE's scale):
    the head's int8 output grid (its range from 0) is coarser than the Gemm's int8 grid it reads."""
    from onnx import TensorProto, numpy_helper
    from edgec.frontend import loader
    r = np.random.default_rng(7)
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["h0"], transB=1, name="fc"),
             helper.make_node("Relu", ["h0"], ["h"], name="relu"),
             helper.make_node("Gemm", ["h", "w1", "b1"], ["mu"], transB=1, name="mu"),
             helper.make_node("Gemm", ["h", "w2", "b2"], ["z"], transB=1, name="sd"),
             helper.make_node(head, ["z", *(["e"] if head == "Pow" else [])], ["s"], name="head", **attrs)]
    inits = {"w0": r.normal(0, 0.3, (16, 32)), "b0": r.normal(0, 0.1, 16), "w1": r.normal(0, 0.3, (8, 16)),
             "b1": r.normal(0, 0.1, 8), "w2": r.normal(0, 0.3, (8, 16)), "b2": r.normal(0, 0.1, 8), "e": [2.0]}
    out = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8]) for n in outputs]
    graph = helper.make_graph(nodes, "heads", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])], out,
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return loader.prepare(model)


def test_a_smooth_table_ending_one_of_two_outputs_runs_int16_where_that_output_gains(tmp_path):
    """A Softplus (any smooth `lut`: lut.SMOOTH16) writing a graph output is an int16 tail too: the Gemm feeding it
    16x8, the 513-entry int16 table (edgec_lut16_s16), an int16 output port; judged on the output it writes (the
    model's worst output, the other head, is the same either way), and kept as it gains there."""
    from edgec import ports
    path = save(_two_heads(), tmp_path)
    rng = np.random.default_rng(8)
    calib = rng.normal(size=(16, 32)).astype(np.float32)
    res = api.calibrate(path, calib, sensitivity_samples=0)
    assert res.tail.startswith("output tail int16") and "outputs it writes" in res.tail, res.tail
    g = res.graph
    kinds = {op.name: (op.kind, g.tensors[op.output].dtype) for op in g.ops}
    assert kinds["sd"] == ("fully_connected", "int16") and kinds["head"] == ("lut", "int16"), kinds
    assert kinds["mu"] == ("fully_connected", "int8")
    assert [p.name for p in ports.outputs(g)] == ["mu", "s"] and g.tensors["s"].dtype == "int16"
    int8 = api.calibrate(path, calib, sensitivity_samples=0, tail_int16=False)
    x = rng.normal(size=(12, 1, 32)).astype(np.float32)
    snr_s, snr_mu = snr_against_ort(path, x, slice(8, 16)), snr_against_ort(path, x, slice(0, 8))
    assert snr_s(res) > snr_s(int8) + 3, (snr_s(res), snr_s(int8))
    assert snr_mu(res) == snr_mu(int8)          # the other head: bit for bit the same
    one = api.calibrate(save(_two_heads(outputs=("s",)), tmp_path, "one.onnx"), calib, sensitivity_samples=0)
    assert one.tail.startswith("output tail int16") and one.graph.tensors["s"].dtype == "int16", one.tail
    check_generated_c_gcc_and_clang(one.graph, x, tmp_path)          # (the C: one output, the test driver's)


def test_only_a_smooth_table_or_a_whole_power_is_an_int16_tail():
    """Floor (a step) and Pow by 2.5 stay int8 outputs: the int16 table's interpolation is for continuous
    functions, and x^2.5 of a negative value is NaN; Tanh and a square (Pow 2: a squared error) are tails."""
    from edgec.frontend import canonicalize
    from edgec.quant import int16
    for head, attrs, exp, tail in (("Floor", {}, 2.0, False), ("Pow", {}, 2.5, False), ("Pow", {}, 2.0, True),
                                   ("Tanh", {}, 2.0, True)):
        m = _two_heads(head, **attrs)
        for init in m.graph.initializer:
            if init.name == "e":
                init.CopyFrom(helper.make_tensor("e", 1, [1], [exp]))
        names, outs = int16.tail_default(canonicalize.canonicalize(m, "heads"))
        assert (names == ["sd", "head"] and outs == ["s"]) if tail else (names, outs) == ([], []), (head, exp)


def _tcn_score():
    """A TCN anomaly score (torch_tcn_ad_batch_none_op12's tail): Conv1d -> Elu -> mean over time (the feature) ->
    Gemm -> Tanh -> Gemm (its reconstruction) -> Sub (reconstruction - feature) -> Pow 2 -> mean: the score."""
    r = np.random.default_rng(9)
    nodes = [helper.make_node("Conv", ["x", "wc", "bc"], ["c"], pads=[1, 1], name="conv"),
             helper.make_node("Elu", ["c"], ["e"], name="elu"),
             helper.make_node("ReduceMean", ["e"], ["m"], axes=[2], keepdims=0, name="feature"),
             helper.make_node("Gemm", ["m", "w0", "b0"], ["z"], transB=1, name="enc"),
             helper.make_node("Tanh", ["z"], ["t"], name="tanh"),
             helper.make_node("Gemm", ["t", "w1", "b1"], ["rec"], transB=1, name="dec"),
             helper.make_node("Sub", ["rec", "m"], ["d"], name="diff"),
             helper.make_node("Pow", ["d", "two"], ["d2"], name="square"),
             helper.make_node("ReduceMean", ["d2"], ["y"], axes=[1], keepdims=1, name="score")]
    inits = {"wc": r.normal(0, 0.4, (8, 2, 3)), "bc": r.normal(0, 0.1, 8), "w0": r.normal(0, 0.5, (3, 8)),
             "b0": np.zeros(3), "w1": r.normal(0, 0.5, (8, 3)), "b1": r.normal(0, 0.1, 8), "two": np.array(2.0)}
    return make_model(nodes, ("x", [1, 2, 32]), ("y", [1, 1]), inits)


def test_a_tail_reading_a_difference_takes_the_reconstruction_and_its_target_with_it(tmp_path):
    """int16.difference_head: a squared error's tail (Pow 2 of a Sub, then a mean) runs int16 back to the last
    convolution: the Sub (Int16.between), the decoder's Gemm -> Tanh -> Gemm, the mean feature and the Elu before it
    (its int16 table), so the reconstruction and its target are subtracted on int16 grids. Chosen by the default where
    it gains; the score leaves as an int16 port; the C bit-exact with the reference (gcc; clang with sanitizers)."""
    path = save(_tcn_score(), tmp_path)
    rng = np.random.default_rng(10)
    calib = rng.normal(size=(16, 2, 32)).astype(np.float32)
    res = api.calibrate(path, calib, sensitivity_samples=0)
    assert res.tail.startswith("output tail int16"), res.tail
    g = res.graph
    dtypes = {op.name: (op.kind, g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in g.ops}
    assert dtypes["conv"][2] == "int8" and dtypes["score"] == ("reduce", "int16", "int16"), dtypes
    assert all(dtypes[n][1:] == ("int16", "int16") for n in ("elu", "feature", "enc", "tanh", "dec", "diff", "square")), dtypes
    assert g.tensors[g.output].dtype == "int16"
    int8 = api.calibrate(path, calib, sensitivity_samples=0, tail_int16=False)
    x = rng.normal(size=(12, 2, 32)).astype(np.float32)
    snr = snr_against_ort(path, x[:, None])
    assert snr(res) > snr(int8) + 1, (snr(res), snr(int8))
    check_generated_c_gcc_and_clang(g, x[:, None], tmp_path)


def test_an_int16_tail_that_does_not_fit_the_ram_falls_back_to_int8(tmp_path):
    """The tail the calibration set chose int16 (its output port twice the bytes) that does not fit --ram-budget:
    inspect --board (as build and export, pipeline.fit_or_int8) plans the int8 tail and says so in one line."""
    path = save(_classifier(), tmp_path)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(4).uniform(-1, 1, (16, 40)).astype(np.float32))
    plain = dict(sensitivity_samples=0, method="minmax", equalize=False, bias_correction=False, saturation=False,
                 unseen_ranges=False)

    def ram(tail, budget=1 << 20, log=lambda _: None):
        return api.inspect_board(path, "qemu-cortex-m4", calib, ram_budget=budget, log=log, **plain, tail_int16=tail)
    wide, narrow = ram(True)["budget_ram_bytes"], ram(False)["budget_ram_bytes"]
    assert narrow < wide
    said = []
    info = ram(None, (narrow + wide) // 2, said.append)
    assert info["fits"] and info["budget_ram_bytes"] == narrow, info
    assert [s for s in said if "not int16" in s][0].startswith("output tail int8, not int16 as the calibration set")
    assert any(s.startswith("output tail int16") for s in said)       # (what it chose before the plan)


def _softmax_classifier():
    """x[1, 40] -> Gemm 40->12 -> Softmax: logits a few units apart, so the probabilities are sensitive to the
    logits' int8 rounding (a probability's error is p times the logits' error), the grid an int16 Gemm removes."""
    r = np.random.default_rng(7)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["z"], transB=1, name="fc"),
             helper.make_node("Softmax", ["z"], ["y"], axis=-1, name="probs")]
    inits = {"w": r.normal(0, 0.6, (12, 40)), "b": r.normal(0, 0.5, 12)}
    return make_model(nodes, ("x", [1, 40]), ("y", [1, 12]), inits)


def test_a_softmax_tail_runs_int16_inside_and_keeps_the_int8_port_of_the_int8_model(tmp_path):
    """An output Softmax is a tail kind whose port stays int8 (Int16.tail8): where the calibration samples gain, the
    Gemm and the Softmax run int16 and the Q0.15 probabilities are rounded once to the int8 model's own grid (1/256,
    zero point -128): the C API (int8_t, its scale and zero point) is the int8 model's. Fails on main, where a plain
    Softmax is no tail kind (h49-lstm's int16 port was reverted: it changed the output type)."""
    path = save(_softmax_classifier(), tmp_path)
    rng = np.random.default_rng(8)
    calib = rng.uniform(-1, 1, (16, 40)).astype(np.float32)
    res = api.calibrate(path, calib, sensitivity_samples=0)
    assert res.tail.startswith("output tail int16"), res.tail
    g = res.graph
    assert [(op.kind, g.tensors[op.output].dtype) for op in g.ops][-3:] == [
        ("fully_connected", "int16"), ("softmax", "int16"), ("requantize", "int8")]
    int8 = api.calibrate(path, calib, sensitivity_samples=0, tail_int16=False)
    port, port8 = g.tensors[g.output], int8.graph.tensors[int8.graph.output]
    assert (port.dtype, port.scale, port.zero_point) == (port8.dtype, port8.scale, port8.zero_point) \
        == ("int8", 1.0 / 256.0, -128)
    x = rng.uniform(-1, 1, (12, 1, 40)).astype(np.float32)
    snr = snr_against_ort(path, x)
    assert snr(res) > snr(int8) + 1, (snr(res), snr(int8))
    check_generated_c_gcc_and_clang(g, x, tmp_path)
    out = tmp_path / "h"
    cmodel.generate(g, planner.plan(g), out, "tail")
    assert "int16_t" not in re.sub(r"/\*.*?\*/", "", (out / "tail.h").read_text(), flags=re.S)


def test_a_softmax_named_int16_leaves_on_its_own_int8_grid(tmp_path):
    """`--int16` on a Softmax: its int8 output after the conversion is the kind's fixed grid (1/256), not the
    calibrated range of the probabilities (which clipped a probability above the calibration set's largest)."""
    path = save(_softmax_classifier(), tmp_path)
    calib = np.random.default_rng(9).uniform(-1, 1, (16, 40)).astype(np.float32)
    g = api.calibrate(path, calib, sensitivity_samples=0, int16=("probs",), tail_int16=False).graph
    port = g.tensors[g.output]
    assert (port.dtype, port.scale, port.zero_point) == ("int8", 1.0 / 256.0, -128)
