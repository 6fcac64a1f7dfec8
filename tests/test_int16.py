"""The int16 escape hatch (--int16, TFLite 16x8): a deliberately sensitive layer gets its accuracy back,
the graph rewrite converts only at the ends of int16 chains, tensors take 2 bytes in the arena, the
fast kernels leave int16 layers alone, and the generated C matches the reference bit for bit on the
host (gcc, clang + sanitizers) and on the emulated Cortex-M4."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

from conftest import REPO, SANITIZE, make_model, run_generated_c, save
from edgec import api
from edgec.quant import artifact
from edgec.quant import calibrate
from edgec.codegen import cmodel as codegen
from edgec import pipeline
from edgec.plan import planner
from edgec.quant import ptq
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.errors import EdgecError

CHAINS = [("convA", "dw"), ("dw",), ("pw", "fc"), ("convA", "dw", "pw", "fc")]


def _sensitive():
    """x[1,3,6,6] -> convA+ReLU -> depthwise+ReLU -> pw(1x1) -> Flatten -> Gemm[4].

    convA's channel 0 is 100x louder than the others and the depthwise scales it back down: the float
    function is ordinary, but one int8 scale for convA's output rounds its 7 quiet channels coarsely."""
    r = np.random.default_rng(5)
    wa, ba = (r.standard_normal((8, 3, 3, 3)) * 0.4).astype(np.float32), np.full(8, 0.1, np.float32)
    wa[0] *= 100
    ba[0] = 5.0
    wd = (r.standard_normal((8, 1, 3, 3)) * 0.5).astype(np.float32)
    wd[0] /= 100
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1], name="convA"),
             helper.make_node("Relu", ["a"], ["ra"], name="reluA"),
             helper.make_node("Conv", ["ra", "wd", "bd"], ["d"], group=8, pads=[1, 1, 1, 1], name="dw"),
             helper.make_node("Relu", ["d"], ["rd"], name="reluD"),
             helper.make_node("Conv", ["rd", "wp", "bp"], ["p"], name="pw"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    inits = {"wa": wa, "ba": ba, "wd": wd, "bd": np.full(8, 0.05, np.float32),
             "wp": (r.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32), "bp": np.zeros(8, np.float32),
             "wf": (r.standard_normal((4, 8 * 6 * 6)) * 0.1).astype(np.float32), "bf": np.zeros(4, np.float32)}
    return make_model(nodes, ("x", [1, 3, 6, 6]), ("y", [1, 4]), inits)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def files(tmp_path):
    model = _sensitive()
    path = save(model, tmp_path, "sensitive.onnx")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=np.random.default_rng(2).random((64, 3, 6, 6), dtype=np.float32))
    test = tmp_path / "test.npz"
    np.savez(test, x=np.random.default_rng(3).random((24, 3, 6, 6), dtype=np.float32))
    return model, path, calib, test


def _quantize(path, calib, wide=(), samples=8):
    return api.calibrate_model(path, calib, ptq.QuantOptions.plain(sensitivity_samples=samples, int16=wide))[1]


def test_int16_on_the_sensitive_layers_raises_output_sqnr(files):
    model, path, calib, test = files
    x = np.load(test)["x"]
    y = calibrate.run_float(model, x)
    base = _quantize(path, calib)
    wide = _quantize(path, calib, ("convA", "dw"))
    before, after = ptq.output_sqnr(base.graph, x, y), ptq.output_sqnr(wide.graph, x, y)
    assert after > before + 10.0, (before, after)
    # the sensitivity report shows it too: the layers that were worst are no longer
    rows = {r["layer"]: r for r in base.sensitivity}
    rows16 = {r["layer"]: r for r in wide.sensitivity}
    assert base.sensitivity[0]["layer"] in ("convA", "dw")
    for name in ("convA", "dw"):
        assert rows16[name]["isolated_output_db"] > rows[name]["isolated_output_db"] + 10.0
        assert rows16[name]["cumulative_db"] > rows[name]["cumulative_db"] + 5.0
    # int16 on a layer that was not the problem changes little
    other = _quantize(path, calib, ("fc",), samples=0)
    assert abs(ptq.output_sqnr(other.graph, x, y) - before) < 3.0


def test_rewrite_converts_only_at_chain_ends_and_plans_bytes(files):
    _, path, calib, _ = files
    g = _quantize(path, calib, ("convA", "dw", "pw", "fc"), samples=0).graph
    g = pipeline.lower(g)                                 # (the build's next step)
    conv = [op for op in g.ops if op.kind == "requantize"]
    assert [(g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in conv] == \
        [("int8", "int16"), ("int16", "int8")]
    assert conv[-1].output == g.output and g.tensors[g.input].dtype == g.tensors[g.output].dtype == "int8"
    view = next(op for op in g.ops if op.kind == "reshape")          # the Flatten stays int16 inside the chain
    assert g.tensors[view.inputs[0]].dtype == g.tensors[view.output].dtype == "int16"
    for op in g.ops:
        if op.kind in ("conv2d", "depthwise_conv2d", "fully_connected"):
            t = g.tensors[op.output]
            assert t.dtype == "int16" and t.zero_point == 0 and op.arrays["bias"].dtype == np.int64
            assert op.lowering.kernel.precision == "int16"        # an int16 layer runs a 16x8 kernel
    plan = planner.plan(g)
    by_tensor = {t: b for b in plan.buffers for t in b.tensors}
    for name, t in g.tensors.items():
        if name in by_tensor:
            assert by_tensor[name].size >= t.size * (2 if t.dtype == "int16" else 1)
    # the int8 layers of a partly int16 model keep their fast kernels
    g2 = _quantize(path, calib, ("dw",), samples=0).graph
    g2 = pipeline.lower(g2)
    assert [op.lowering.kernel.role != "reference" for op in g2.ops if op.name == "pw"] == [True]
    # its int16 one the fast 16x8 kernel (edgec/ops/conv/s16.py: its int32 sum provably exact here)
    assert [op.lowering.kernel.name for op in g2.ops if op.name == "dw"] == ["edgec_depthwise_conv2d_fast_s16"]


def test_bad_names_give_one_clear_error_listing_the_valid_ones(files):
    _, path, calib, _ = files
    for wide, why in ((("nope",), "'nope' \\(no such node\\)"), (("flat",), "'flat' \\(reshape: no int16 kernel\\)")):
        with pytest.raises(EdgecError, match=why + ".*: convA, dw, pw, fc$"):
            _quantize(path, calib, wide)
    proc = subprocess.run([sys.executable, "-m", "edgec", "calibrate", str(path), "--calib", str(calib),
                           "--int16", "convA,bogus"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "'bogus'" in proc.stderr, proc.stderr


# the whole chain and a lone depthwise in the default run; the partial chains with the sweeps
@pytest.mark.parametrize("wide", [c if c in (("dw",), CHAINS[-1]) else pytest.param(c, marks=pytest.mark.sweep)
                                  for c in CHAINS], ids=["+".join(c) for c in CHAINS])
def test_generated_c_bit_exact_with_int16_layers(files, tmp_path, wide):
    _, path, calib, test = files
    g = _quantize(path, calib, wide, samples=0).graph
    g = g.replace_ops(planner.schedule(g))
    plan = planner.plan(g)
    planner.check_plan(g, plan)
    x = np.load(test)["x"]
    xq = scheme.quantize_input(g.tensors[g.input], x)
    want = np.stack([reference.run(g, q).reshape(-1) for q in xq])
    for cc, flags in (("gcc", ("-O2",)), ("clang", SANITIZE)):
        lib = tmp_path / cc
        files_written = {p.name for p in codegen.generate(g, plan, lib, g.name)}
        assert "edgec_convert.c" in files_written and "_s16(" in (lib / f"{g.name}.c").read_text()
        got = run_generated_c(lib, g.name, xq.reshape(len(xq), -1), want.shape[1], cc=cc, flags=flags)
        assert np.array_equal(got, want), f"{cc}: samples {np.flatnonzero(np.any(got != want, axis=1))} differ"
    # the saved record runs the same reference
    artifact.save_graph(g, tmp_path)
    again = artifact.load_graph(tmp_path)
    assert np.array_equal(np.stack([reference.run(again, q).reshape(-1) for q in xq]), want)


def test_int8_models_do_not_link_the_s16_kernels(files, tmp_path):
    """The s16 kernels sit in the family files next to the int8 ones: a model without int16 layers does not call
    them, and the linker drops them (-ffunction-sections -Wl,--gc-sections, as on the boards)."""
    _, path, calib, test = files
    g = _quantize(path, calib, samples=0).graph
    codegen.generate(g, planner.plan(g), tmp_path, g.name)
    assert "s16" not in (tmp_path / f"{g.name}.c").read_text()
    xq = scheme.quantize_input(g.tensors[g.input], np.load(test)["x"][:2])
    run_generated_c(tmp_path, g.name, xq.reshape(len(xq), -1), g.tensors[g.output].size,
                    flags=("-O2", "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections"))
    symbols = subprocess.run(["nm", str(tmp_path / "driver_gcc")], capture_output=True, text=True, check=True).stdout
    assert any(k in symbols for k in ("edgec_conv2d_s8", "edgec_conv2d_im2col_s8", "edgec_conv2d_blocked_s8",
                                         "edgec_conv2d_window_s8"))
    assert not [s for s in symbols.split() if s.startswith("edgec_") and "s16" in s], symbols


def test_build_and_bench_on_qemu_with_int16_layers(files, tmp_path):
    _, path, calib, test = files
    out = tmp_path / "build"
    report = api.build(path, calib, "qemu-cortex-m4", out,
                       options=ptq.QuantOptions(int16=("convA", "dw"), sensitivity_samples=4))
    quant = json.loads((out / "quant.json").read_text())
    assert quant["options"]["int16"] == ["convA", "dw"]
    assert {t["dtype"] for t in quant["tensors"].values()} == {"int8", "int16"}
    assert report["input"]["bytes"] == 3 * 6 * 6 and report["output"]["bytes"] == 4
    r = api.bench(out, test, compare_layers=True)
    assert r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]
    assert r["divergence"]["first_divergent_layer"] is None
    sizes = {row["name"]: row["size"] for row in r["divergence"]["layers"]}
    assert sizes["convA"] == 8 * 6 * 6          # int16 layer outputs read back whole (2 bytes each)


def test_export_takes_int16_and_ships_the_s16_kernels(files, tmp_path):
    _, path, calib, _ = files
    proc = subprocess.run([sys.executable, "-m", "edgec", "export", str(path), "--calib", str(calib), "--board",
                           "qemu-cortex-m4", "--format", "c", "-o", str(tmp_path / "lib"), "--int16", "convA",
                           "--int16", "dw", "--sensitivity-samples", "0"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "lib" / "edgec-export.json").read_text())
    assert "edgec_convert.c" in manifest["runtime_files"]
    assert "edgec_conv2d_fast_s16(" in (tmp_path / "lib" / "sensitive.c").read_text()


def test_int16_softmax_is_bit_exact(tmp_path):
    """--int16 on a Softmax: its input converted to int16, Q0.15 probabilities out (converted back for the int8
    reader), the generated C bit-exact with the reference and closer to float than the int8 softmax; the accuracy
    budget still chooses among the weighted layers only."""
    from conftest import check_generated_c
    from edgec.quant import floatref, int16

    rng = np.random.default_rng(4)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="attn"),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="ctx")]
    model = make_model(nodes, ("x", [1, 6, 8]), ("y", [1, 6, 4]), {"w": rng.normal(size=(8, 16)),
                                                                    "v": rng.normal(size=(16, 4))})
    path = save(model, tmp_path)
    calib, x = tmp_path / "calib.npz", rng.normal(size=(48, 6, 8)).astype(np.float32)
    np.savez(calib, x=x[:32])
    graphs = {wide: api.calibrate_model(path, calib, ptq.QuantOptions(int16=wide))[1].graph for wide in ((), ("attn",))}
    graph = graphs[("attn",)]
    soft = next(op for op in graph.ops if op.name == "attn")
    out = graph.tensors[soft.output]
    assert graph.tensors[soft.inputs[0]].dtype == out.dtype == "int16"
    assert (out.scale, out.zero_point) == (1 / 32768, 0) and set(soft.arrays) == {"exp_hi", "exp_lo"}
    assert [op.kind for op in graph.ops].count("requantize") == 2 and int16.candidates(graph) == []
    check_generated_c(graph, x[32:], tmp_path / "c")
    err = {}
    for wide, g in graphs.items():
        xq = scheme.quantize_input(g.tensors[g.input], x[32:])
        got = np.stack([scheme.dequantize(g.tensors[g.output], reference.run(g, q)) for q in xq])
        err[wide] = np.abs(got.reshape(16, -1) - np.stack([floatref.output(g, s[None]).reshape(-1) for s in x[32:]])).mean()
    assert err[("attn",)] < err[()]


def _pooled():
    """x[1,3,8,8] -> convA -> MaxPool 3x3/2 (padded) -> Pad (reflect) -> convB -> AveragePool 2x2 (padded,
    count_include_pad 0) -> Flatten -> Gemm[4]: pools and a remap between the int16 layers, negative values
    through them."""
    r = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1], name="convA"),
             helper.make_node("MaxPool", ["a"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              name="maxpool"),
             helper.make_node("Pad", ["m", "pads"], ["mp"], mode="reflect", name="pad"),
             helper.make_node("Conv", ["mp", "wb", "bb"], ["b"], name="convB"),
             helper.make_node("AveragePool", ["b"], ["p"], kernel_shape=[2, 2], strides=[1, 1], pads=[1, 1, 0, 0],
                              name="avgpool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    inits = {"wa": r.standard_normal((6, 3, 3, 3)) * 0.5, "ba": r.standard_normal(6) * 0.1,
             "wb": r.standard_normal((5, 6, 3, 3)) * 0.3, "bb": r.standard_normal(5) * 0.1,
             "wf": r.standard_normal((4, 5 * 4 * 4)) * 0.2, "bf": np.zeros(4),
             "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 4]), inits)


def test_pools_between_int16_layers_stay_int16_and_are_bit_exact(tmp_path):
    """A max and an average pool and a remap (the Pad) between int16 layers run their s16 kernels (no conversion
    around them), the
    accuracy budget's reader groups look through them, and the generated C matches the reference bit for bit."""
    from conftest import check_generated_c_gcc_and_clang
    from edgec.quant import int16

    path = save(_pooled(), tmp_path)
    x = np.random.default_rng(8).standard_normal((40, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    res = api.calibrate_model(path, tmp_path / "calib.npz",
                              ptq.QuantOptions.plain(int16=("convA", "convB", "fc"), sensitivity_samples=0))[1]
    g = pipeline.lower(res.graph)
    kernels = {op.name: op.lowering.kernel.name for op in g.ops if op.lowering}
    assert kernels["maxpool"] == "edgec_max_pool_s16" and kernels["avgpool"] == "edgec_avg_pool_s16"
    assert kernels["pad"] == "edgec_remap_s16", kernels
    conv = [op for op in g.ops if op.kind == "requantize"]
    assert [(g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in conv] == \
        [("int8", "int16"), ("int16", "int8")]
    for name in ("maxpool", "pad", "avgpool"):
        op = next(op for op in g.ops if op.name == name)
        assert g.tensors[op.inputs[0]].scale == g.tensors[op.output].scale and g.tensors[op.output].zero_point == 0
    float_graph = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0))[1]
    assert int16.layers_reading(res.graph, "convA") == ["convB"]
    assert int16.layers_reading(float_graph.graph, "convB") == ["fc"]
    check_generated_c_gcc_and_clang(res.graph, x[32:], tmp_path)
    # a pool whose output an int8 layer reads stays int8: convA int16 alone converts after convA
    alone = api.calibrate_model(path, tmp_path / "calib.npz",
                                ptq.QuantOptions.plain(int16=("convA",), sensitivity_samples=0))[1].graph
    pool = next(op for op in alone.ops if op.name == "maxpool")
    assert alone.tensors[pool.output].dtype == "int8"


def _residual_concat():
    """x[1,3,8,8] -> convA+Relu -> convB -> Add(convA's, convB's) -> Concat(that, convC(x)) -> convD -> Flatten
    -> Gemm[4]: a residual add and a concat between int16 layers, the concat's other part an int8 layer's."""
    r = np.random.default_rng(9)
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1], name="convA"),
             helper.make_node("Relu", ["a"], ["ra"], name="reluA"),
             helper.make_node("Conv", ["ra", "wb", "bb"], ["b"], pads=[1, 1, 1, 1], name="convB"),
             helper.make_node("Add", ["ra", "b"], ["s"], name="add"),
             helper.make_node("Conv", ["x", "wc", "bc"], ["c"], pads=[1, 1, 1, 1], name="convC"),
             helper.make_node("Concat", ["s", "c"], ["k"], axis=1, name="concat"),
             helper.make_node("Conv", ["k", "wd", "bd"], ["d"], strides=[2, 2], name="convD"),
             helper.make_node("Flatten", ["d"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    inits = {"wa": r.standard_normal((6, 3, 3, 3)) * 0.5, "ba": r.standard_normal(6) * 0.1,
             "wb": r.standard_normal((6, 6, 3, 3)) * 4.0, "bb": r.standard_normal(6),      # the branch ~20x the skip
             "wc": r.standard_normal((2, 3, 3, 3)) * 0.2, "bc": np.zeros(2),
             "wd": r.standard_normal((4, 8, 2, 2)) * 0.3, "bd": np.zeros(4),
             "wf": r.standard_normal((4, 4 * 4 * 4)) * 0.2, "bf": np.zeros(4)}
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, 4]), inits)


def test_add_and_concat_between_int16_layers_stay_int16_and_are_bit_exact(tmp_path):
    """A residual Add and a Concat between int16 layers run their s16 kernels (edgec_add_s16: TFLite's 16x8 Add;
    edgec_concat_part_s16), the concat's int8 part converted up; the budget's reader groups look through them; the
    generated C matches the reference bit for bit (gcc, clang with sanitizers)."""
    from conftest import check_generated_c_gcc_and_clang
    from edgec.quant import int16

    path = save(_residual_concat(), tmp_path)
    x = np.random.default_rng(10).standard_normal((40, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    res = api.calibrate_model(path, tmp_path / "calib.npz",
                              ptq.QuantOptions.plain(int16=("convA", "convB", "convD", "fc"), sensitivity_samples=0))[1]
    g = pipeline.lower(res.graph)
    kernels = {op.name: op.lowering.kernel.name for op in g.ops if op.lowering}
    assert kernels["add"] == "edgec_add_s16" and kernels["concat"] == "edgec_concat_part_s16", kernels
    conv = [(g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in g.ops if op.kind == "requantize"]
    assert sorted(conv) == [("int16", "int8"), ("int8", "int16"), ("int8", "int16")]   # x up, convC up, fc down
    plain = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions.plain(sensitivity_samples=0))[1]
    assert int16.layers_reading(plain.graph, "convB") == ["convD"]
    check_generated_c_gcc_and_clang(res.graph, x[32:], tmp_path)


def _bigru_head():
    """A bidirectional GRU (PyTorch's export: Transposes around a layout 0 GRU), its last step (Gather) and a Gemm."""
    r = np.random.default_rng(12)
    hid, n_in, steps = 6, 4, 9
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_time_major"),
             helper.make_node("GRU", ["xt", "W", "R", "B"], ["y"], hidden_size=hid, direction="bidirectional",
                              linear_before_reset=1, name="gru"),
             helper.make_node("Reshape", ["y", "shape"], ["ys"], name="flat"),
             helper.make_node("Gather", ["ys", "last"], ["h"], axis=0, name="last_step"),
             helper.make_node("Gemm", ["h", "wf", "bf"], ["out"], transB=1, name="fc")]
    inits = {"W": r.normal(0, 0.5, (2, 3 * hid, n_in)), "R": r.normal(0, 0.4, (2, 3 * hid, hid)),
             "B": r.normal(0, 0.2, (2, 6 * hid)), "shape": np.array([steps, 1, 2 * hid], np.int64),
             "last": np.array(steps - 1, np.int64), "wf": r.normal(0, 0.3, (3, 2 * hid)), "bf": np.zeros(3)}
    return make_model(nodes, ("x", [1, steps, n_in]), ("out", [1, 3]), inits, opset=14)


def test_recurrent_default_runs_a_grus_sequence_int16_into_its_reader_when_asked(tmp_path):
    """edgec/quant/int16.py recurrent_default: with recurrent_int16 (--int16-recurrence) a float model's GRU reads
    and writes int16 (edgec_recurrent_fast_s16) and the Gemm reading its last step through the concat and Gather
    reads it as int16; with recurrent_int16=False (--int8-recurrence) it stays int8; the generated C matches the reference bit for bit."""
    from conftest import check_generated_c_gcc_and_clang
    from edgec.quant import int16

    path = save(_bigru_head(), tmp_path)
    x = np.random.default_rng(13).uniform(-1, 1, (40, 9, 4)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    asked = api.calibrate_model(path, tmp_path / "calib.npz",
                                  ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=True))[1].graph
    off = api.calibrate_model(path, tmp_path / "calib.npz",
                              ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=False))[1].graph
    assert {asked.tensors[op.output].dtype for op in asked.ops if op.kind == "gru"} == {"int16"}
    assert [asked.tensors[op.inputs[0]].dtype for op in asked.ops if op.kind == "fully_connected"] == ["int16"]
    assert {off.tensors[op.output].dtype for op in off.ops if op.kind == "gru"} == {"int8"}
    g = pipeline.lower(asked)
    assert {op.lowering.kernel.name for op in g.ops if op.kind == "gru"} == {"edgec_recurrent_fast_s16"}
    check_generated_c_gcc_and_clang(asked, x[32:], tmp_path)


def _bilstm_mean():
    """A bidirectional LSTM (PyTorch's export), its sequence averaged over time (ReduceMean) and a Gemm: what
    torch_bilstm_audio_events_op14 does."""
    r = np.random.default_rng(21)
    hid, n_in, steps = 5, 4, 12
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_time_major"),
             helper.make_node("LSTM", ["xt", "W", "R", "B"], ["y"], hidden_size=hid, direction="bidirectional",
                              name="lstm"),
             helper.make_node("Reshape", ["y", "shape"], ["ys"], name="flat"),
             helper.make_node("ReduceMean", ["ys"], ["m"], axes=[0], keepdims=0, name="mean"),
             helper.make_node("Gemm", ["m", "wf", "bf"], ["out"], transB=1, name="fc")]
    inits = {"W": r.normal(0, 0.5, (2, 4 * hid, n_in)), "R": r.normal(0, 0.4, (2, 4 * hid, hid)),
             "B": r.normal(0, 0.2, (2, 8 * hid)), "shape": np.array([steps, 1, 2 * hid], np.int64),
             "wf": r.normal(0, 0.3, (3, 2 * hid)), "bf": np.zeros(3)}
    return make_model(nodes, ("x", [1, steps, n_in]), ("out", [1, 3]), inits, opset=14)


def test_an_int16_lstms_sequence_is_averaged_in_int16_and_read_by_a_16x8_gemm(tmp_path):
    """edgec/ops/reduce.py: an int16 chain passes through a mean over time (Int16.between; edgec_reduce_s16), so
    with recurrent_int16 an LSTM whose sequence a ReduceMean averages for a Gemm writes int16 and the Gemm reads
    the int16 mean: no int8 grid between the recurrence and the Gemm (before: the mean had no int16 path and the
    LSTM's output went back to int8 at once). The generated C matches the reference bit for bit."""
    from conftest import check_generated_c_gcc_and_clang
    from edgec.quant import int16

    path = save(_bilstm_mean(), tmp_path)
    x = np.random.default_rng(22).uniform(-1, 1, (40, 12, 4)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    plain = api.calibrate_model(path, tmp_path / "calib.npz",
                                ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=False))[1].graph
    assert int16.recurrent_default(plain) == ["lstm", "fc"]
    g = api.calibrate_model(path, tmp_path / "calib.npz",
                            ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=True))[1].graph
    kinds = {op.kind: (g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in g.ops}
    assert kinds["lstm"] == kinds["reduce"] == ("int16", "int16") and kinds["fully_connected"][0] == "int16", kinds
    low = pipeline.lower(g)
    assert {op.lowering.kernel.name for op in low.ops if op.kind == "reduce"} == {"edgec_reduce_s16"}
    check_generated_c_gcc_and_clang(g, x[32:], tmp_path)


def test_the_default_runs_a_recurrence_int16_only_where_it_gains_on_the_calibration_set(tmp_path):
    """ptq.recurrence_choice (recurrent_int16 None, the default): both variants quantized, the int16 one kept
    only when the worst output's SQNR on the calibration samples is more than fixes.MIN_GAIN_DB above the int8
    one's; the choice and both figures are in the result; the kept graph is that variant's."""
    from edgec.quant import fixes

    path = save(_bilstm_mean(), tmp_path)
    x = np.random.default_rng(22).uniform(-1, 1, (8, 12, 4)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    res = api.calibrate_model(path, tmp_path / "calib.npz", ptq.QuantOptions(sensitivity_samples=0))[1]
    s8, s16 = map(float, re.search(r"samples (-?[\d.]+) dB int8, (-?[\d.]+) dB int16", res.recurrence).groups())
    wide = s16 > s8 + fixes.MIN_GAIN_DB
    assert res.recurrence.startswith(f"recurrence {'int16' if wide else 'int8'}:"), res.recurrence
    dtype = {res.graph.tensors[op.output].dtype for op in res.graph.ops if op.kind == "lstm"}
    assert dtype == {"int16" if wide else "int8"}
    assert res.options.recurrent_int16 is wide
    for forced in (True, False):          # asked either way: no choice made, none reported
        r = api.calibrate_model(path, tmp_path / "calib.npz",
                                ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=forced))[1]
        assert r.recurrence == "" and {r.graph.tensors[op.output].dtype for op in r.graph.ops
                                       if op.kind == "lstm"} == {"int16" if forced else "int8"}


def _lstm_autoencoder():
    """An LSTM autoencoder (torch_lstm_autoencoder_ad_op15's shape): the encoder's last hidden state -> Gemm (the
    code) -> Tanh -> repeated over time (Expand) -> the decoder LSTM -> a MatMul over its [T, C] rows."""
    r = np.random.default_rng(23)
    hid, n_in, code, steps = 6, 4, 3, 10
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_time_major"),
             helper.make_node("LSTM", ["xt", "W", "R", "B"], ["", "h"], hidden_size=hid, name="enc"),
             helper.make_node("Reshape", ["h", "s_h"], ["hf"], name="flat"),
             helper.make_node("Gemm", ["hf", "wc", "bc"], ["c"], transB=1, name="code"),
             helper.make_node("Tanh", ["c"], ["ct"], name="tanh"),
             helper.make_node("Reshape", ["ct", "s_c"], ["c3"], name="unsq"),
             helper.make_node("Expand", ["c3", "s_e"], ["ce"], name="repeat"),
             helper.make_node("LSTM", ["ce", "W2", "R2", "B2"], ["y"], hidden_size=hid, name="dec"),
             helper.make_node("Reshape", ["y", "s_y"], ["ys"], name="squeeze"),
             helper.make_node("Transpose", ["ys"], ["yb"], perm=[1, 0, 2], name="to_batch"),
             helper.make_node("MatMul", ["yb", "wo"], ["o"], name="out"),
             helper.make_node("Add", ["o", "bo"], ["out"], name="out_bias")]
    inits = {"W": r.normal(0, 0.5, (1, 4 * hid, n_in)), "R": r.normal(0, 0.4, (1, 4 * hid, hid)),
             "B": r.normal(0, 0.2, (1, 8 * hid)), "s_h": np.array([1, hid], np.int64),
             "wc": r.normal(0, 0.5, (code, hid)), "bc": r.normal(0, 0.1, code),
             "s_c": np.array([1, 1, code], np.int64), "s_e": np.array([steps, 1, code], np.int64),
             "W2": r.normal(0, 0.5, (1, 4 * hid, code)), "R2": r.normal(0, 0.4, (1, 4 * hid, hid)),
             "B2": r.normal(0, 0.2, (1, 8 * hid)), "s_y": np.array([steps, 1, hid], np.int64),
             "wo": r.normal(0, 0.4, (hid, n_in)), "bo": r.normal(0, 0.1, n_in)}
    return make_model(nodes, ("x", [1, steps, n_in]), ("out", [1, steps, n_in]), inits, opset=14)


def test_an_int16_recurrence_chain_goes_through_a_tanh_and_ends_in_a_16x8_matmul_over_rows(tmp_path):
    """int16.recurrent_default: a smooth table between two layers of the chain (the code's Tanh: tables_between,
    its 513-entry int16 table edgec_lut16_s16) and a MatMul over the decoder's rows (fully_connected_rows, 16x8;
    not an accuracy-budget candidate) keep the chain int16 from the encoder to the output layer: before, the Tanh's
    int8 grid cut it and the decoder stayed int8 (no int16 reader). The generated C matches the reference."""
    from conftest import check_generated_c_gcc_and_clang
    from edgec.quant import int16

    path = save(_lstm_autoencoder(), tmp_path)
    x = np.random.default_rng(24).uniform(-1, 1, (40, 10, 4)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x[:32])
    plain = api.calibrate_model(path, tmp_path / "calib.npz",
                                ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=False))[1].graph
    assert set(int16.recurrent_default(plain)) == {"enc", "code", "tanh", "dec", "out"}, int16.recurrent_default(plain)
    assert "out" not in int16.candidates(plain)          # (the budget's candidates stay the 16x8 layers they were)
    g = api.calibrate_model(path, tmp_path / "calib.npz",
                            ptq.QuantOptions(sensitivity_samples=0, recurrent_int16=True))[1].graph
    chain = [(op.kind, g.tensors[op.inputs[0]].dtype, g.tensors[op.output].dtype) for op in g.ops
             if op.kind not in ("reshape", "remap")]
    assert chain == [("requantize", "int8", "int16"), ("lstm", "int16", "int16"), ("fully_connected", "int16", "int16"),
                     ("lut", "int16", "int16"), ("lstm", "int16", "int16"), ("fully_connected_rows", "int16", "int16"),
                     ("requantize", "int16", "int8")], chain      # int8 <-> int16 only at the model's two ends
    low = pipeline.lower(g)
    assert {op.lowering.kernel.name for op in low.ops if op.name == "tanh"} == {"edgec_lut16_s16"}
    check_generated_c_gcc_and_clang(g, x[32:], tmp_path)
