"""Models with several inputs and outputs (edgec/ports.py): each stage on a two-input, two-output model, the
generated C's per-name API bit-exact on every output (also fed its own state back, as a stateful model is
run), the data files' x_<name> / y_<name> arrays and their one-line errors, and one emulated Cortex-M4 bench
that compares each output."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import assert_clean_error, host_compiler, library_sources, save
from edgec import api, pipeline, ports
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader
from edgec.plan import arena_run
from edgec.ir import Graph
from edgec.quant import calibrate, reference, sensitivity

F = TensorProto.FLOAT


def stateful_model(seed: int = 0) -> onnx.ModelProto:
    """features [1,8] and state [1,4] in; class probabilities [1,3] and the next state [1,4] out (a recurrent
    cell unrolled by its caller: the state output is fed back as the state input)."""
    rng = np.random.default_rng(seed)
    w = {"Wf": rng.normal(0, 0.4, (8, 16)), "Ws": rng.normal(0, 0.4, (4, 16)), "b": rng.normal(0, 0.1, 16),
         "Wc": rng.normal(0, 0.4, (16, 3)), "Wn": rng.normal(0, 0.4, (16, 4))}
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in w.items()]
    nodes = [helper.make_node("MatMul", ["features", "Wf"], ["a"], name="fc_features"),
             helper.make_node("Gemm", ["state", "Ws", "b"], ["s"], name="fc_state"),
             helper.make_node("Add", ["a", "s"], ["h0"], name="mix"),
             helper.make_node("Relu", ["h0"], ["h"], name="relu"),
             helper.make_node("MatMul", ["h", "Wc"], ["logits"], name="head_class"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
             helper.make_node("MatMul", ["h", "Wn"], ["n"], name="head_state"),
             helper.make_node("Tanh", ["n"], ["next_state"], name="tanh")]
    graph = helper.make_graph(nodes, "stateful", [helper.make_tensor_value_info("features", F, [1, 8]),
                                                  helper.make_tensor_value_info("state", F, [1, 4])],
                              [helper.make_tensor_value_info("probs", F, [1, 3]),
                               helper.make_tensor_value_info("next_state", F, [1, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def data_file(path, n=48, seed=1, **override):
    rng = np.random.default_rng(seed)
    arrays = {"x_features": rng.normal(0, 3.0, (n, 8)).astype(np.float32),     # wide range
              "x_state": rng.uniform(-0.5, 0.5, (n, 4)).astype(np.float32),    # narrow range
              "y_probs": rng.integers(0, 3, n)}
    arrays.update(override)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(folder, quantized graph, plan, float model) of the stateful model, quantized once, its next_state output
    and its state input quantized alike (--state next_state=state)."""
    from edgec.quant.ptq import QuantOptions
    d = tmp_path_factory.mktemp("multi_io")
    path = save(stateful_model(), d)
    model, graph, plan = pipeline.compile_model(path, data_file(d / "calib.npz"),
                                                options=QuantOptions(state=("next_state=state",)))
    return d, graph, plan, model


def test_loader_keeps_every_input_and_output_by_name(tmp_path):
    g = canonicalize.canonicalize(loader.load_model(save(stateful_model(), tmp_path)), "m")
    assert [g.port_names[t] for t in g.inputs] == ["features", "state"]
    assert [g.port_names[t] for t in g.outputs] == ["probs", "next_state"]
    assert [g.onnx_shape(t) for t in g.inputs + g.outputs] == [(1, 8), (1, 4), (1, 3), (1, 4)]
    assert [p.start for p in ports.outputs(g)] == [0, 3]


def test_quantization_gives_each_input_and_output_its_own_scale(built):
    _, g, _, _ = built
    f, s = (g.tensors[t] for t in g.inputs)
    assert f.scale > 5 * s.scale            # features span about +-10, the state +-0.5
    probs, state = (g.tensors[t] for t in g.outputs)
    assert (probs.scale, probs.zero_point) == (1 / 256, -128)      # softmax's fixed quantization
    assert state.scale < 2 / 255 * 1.01                              # tanh's range
    assert (state.scale, state.zero_point) == (s.scale, s.zero_point)   # --state next_state=state


def test_state_pairs_are_checked_before_calibration(tmp_path):
    from edgec.quant.ptq import QuantOptions
    path = save(stateful_model(), tmp_path)
    for spec, needle in (("next=state", "expected OUTPUT=INPUT naming an output and an input of the model "
                                        "(outputs: probs, next_state; inputs: features, state)"),
                         ("probs=state", "output probs is [1, 3] but input state is [1, 4]")):
        with pytest.raises(EdgecError, match=re.escape(needle)):
            pipeline.calibrate_model(path, tmp_path / "absent.npz", QuantOptions(state=(spec,)))


def test_reference_matches_float_on_every_output(built):
    d, g, _, model = built
    data = ports.load_data(d / "calib.npz", g)
    want = calibrate.run_float(model, data.x)
    got = ports.dequantize_outputs(g, np.stack([reference.run(g, q) for q in ports.quantize_inputs(g, data.x)]))
    assert got.shape == want.shape == (48, 7)
    for p in ports.outputs(g):
        err = np.abs(got[:, p.start:p.start + p.size] - want[:, p.start:p.start + p.size]).max()
        assert err < 0.1 * 255 * g.tensors[p.tensor].scale, (p.name, err)     # within 10 % of its full scale


def test_plan_keeps_outputs_apart_and_the_planned_calls_match_the_reference(built):
    d, g, plan, _ = built
    spans = [(plan.offsets[t], plan.offsets[t] + g.tensors[t].nbytes) for t in g.outputs]
    assert spans[0][1] <= spans[1][0] or spans[1][1] <= spans[0][0], spans
    xq = ports.quantize_inputs(g, ports.load_data(d / "calib.npz", g).x)
    for q in xq[:8]:
        assert np.array_equal(arena_run.run(g, plan, q), reference.run(g, q))
    # both inputs are written before the first call: neither may share bytes with the other
    a, b = ([plan.offsets[t], plan.offsets[t] + g.tensors[t].nbytes] for t in g.inputs)
    assert a[1] <= b[0] or b[1] <= a[0]


DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "%(name)s.h"
/* stdin: the initial state, then per step the features; stdout: per step probs then next_state. The state
   output goes back into the state input, as a stateful model is run. */
int main(void)
{
    int8_t state[%(NAME)s_INPUT_STATE_BYTES];
    if (fread(state, 1, sizeof state, stdin) != sizeof state) return 3;
    for (;;) {
        size_t got = fread(%(name)s_input_features(), 1, %(NAME)s_INPUT_FEATURES_BYTES, stdin);
        if (got == 0) return 0;
        if (got != %(NAME)s_INPUT_FEATURES_BYTES) return 3;
        memcpy(%(name)s_input_state(), state, sizeof state);
        if (%(name)s_invoke() != 0) return 4;
        fwrite(%(name)s_output_probs(), 1, %(NAME)s_OUTPUT_PROBS_BYTES, stdout);
        fwrite(%(name)s_output_next_state(), 1, %(NAME)s_OUTPUT_NEXT_STATE_BYTES, stdout);
        memcpy(state, %(name)s_output_next_state(), sizeof state);
    }
}
"""


def test_generated_c_api_by_name_is_bit_exact_on_every_output_with_its_state_fed_back(built, tmp_path):
    """The per-name C API of a stateful model, run 48 steps with the state output's bytes copied into the state
    input (one quantization: --state next_state=state): bit-exact with the reference stepped the same way, and
    close to the float model stepped in float."""
    d, g, plan, model = built
    lib = tmp_path / "lib"
    cmodel.generate(g, plan, lib, "stateful")
    header = (lib / "stateful.h").read_text()
    f, s = ports.inputs(g)
    assert re.search(rf"#define STATEFUL_INPUT_FEATURES_SCALE {re.escape(repr(float(g.tensors[f.tensor].scale)))}f", header)
    assert "#define STATEFUL_OUTPUT_COUNT 2u" in header and "int8_t *stateful_output_next_state(void);" in header
    (tmp_path / "driver.c").write_text(DRIVER % {"name": "stateful", "NAME": "STATEFUL"})
    exe = tmp_path / "driver"
    called = set(re.findall(r"\b(edgec_\w+)\(", (lib / "stateful.c").read_text()))
    sources = [f for f in library_sources(lib) if f.endswith(("stateful.c", "edgec_runtime.c")) or     # only the kernel files it calls
               any(re.search(rf"^\S.*\b{c}\(", Path(f).read_text(), re.M) for c in called)]
    subprocess.run([host_compiler(), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-I", str(lib),
                    *sources, str(tmp_path / "driver.c"), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    xq = ports.quantize_inputs(g, ports.load_data(d / "calib.npz", g).x)
    state, want = xq[0, 8:].copy(), []
    for q in xq:                               # the reference, stepped the same way
        out = reference.run(g, np.concatenate([q[:8], state]))
        want.append(out)
        state = out[3:].copy()
    stdin = xq[0, 8:].tobytes() + b"".join(q[:8].tobytes() for q in xq)
    proc = subprocess.run([str(exe)], input=stdin, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    got = np.frombuffer(proc.stdout, np.int8).reshape(len(xq), 7)
    assert np.array_equal(got, np.stack(want))
    assert len({tuple(w[3:]) for w in want}) > 10      # the state really changes from step to step
    x = ports.load_data(d / "calib.npz", g).x
    h, probs = x[0, 8:], []
    for row in x:                                      # the float model, its state fed back in float
        y = calibrate.run_float(model, np.concatenate([row[:8], h])[None])[0]
        probs.append(y[:3])
        h = y[3:]
    deq = ports.dequantize_outputs(g, got)
    # 0.015 here; the same bytes copied between an output and an input quantized apart drift to 0.047
    assert np.abs(deq[:, :3] - np.stack(probs)).mean() < 0.03


def test_c_export_carries_the_per_name_api_and_its_example_checks_every_output(tmp_path):
    path = save(stateful_model(), tmp_path)
    m = api.export(path, data_file(tmp_path / "c.npz"), "host", "c", tmp_path / "lib", name="stateful")
    lib = tmp_path / "lib"
    readme = (lib / "README.md").read_text()
    for port in ("input `features`", "input `state`", "output `probs`", "output `next_state`"):
        assert port in readme, port
    assert "`stateful_output_next_state()`" in readme
    called, sources = set(re.findall(r"\b(edgec_\w+)\(", (lib / "stateful.c").read_text())), []
    while True:         # the files defining what the model calls, and what those call in turn
        more = [f for f in library_sources(lib) if f not in sources and (
            f.endswith(("stateful.c", "edgec_runtime.c")) or
            any(re.search(rf"^\S.*\b{c}\(", Path(f).read_text(), re.M) for c in called))]
        if not more:
            break
        sources += more
        called |= {c for f in more for c in re.findall(r"\b(edgec_\w+)\(", Path(f).read_text())}
    objects = tmp_path / "obj"
    objects.mkdir()
    subprocess.run([host_compiler(), "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-c", "-I", str(lib), *sources],
                   cwd=objects, check=True, capture_output=True, text=True)
    exe = tmp_path / "example"

    def run_example() -> subprocess.CompletedProcess:
        subprocess.run([host_compiler(), "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(lib), str(lib / m["example"]),
                        *map(str, objects.glob("*.o")), "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
        return subprocess.run([str(exe)], capture_output=True, text=True)
    proc = run_example()
    assert proc.returncode == 0 and "identical to the reference" in proc.stdout, proc.stdout
    # the example data is packed: a byte changed in the second output's expected values is noticed
    data = lib / "example" / "stateful_example_data.h"
    text = data.read_text()
    last = re.findall(r"-?\d+", text.split("stateful_example_expected")[1])[-1]
    data.write_text(text[:text.rindex(last)] + str((int(last) + 1) % 100) + text[text.rindex(last) + len(last):])
    assert run_example().returncode == 2


def test_single_io_models_keep_their_api_and_record(tmp_path):
    """A one-input, one-output model declares none of the per-name API and its quantized record has no ports."""
    from conftest import make_model
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    path = save(make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], ("x", [1, 4]), ("y", [1, 3]), {"w": w}),
                tmp_path)
    np.savez(tmp_path / "c.npz", x=np.random.default_rng(1).normal(size=(16, 4)).astype(np.float32))
    _, g, plan = pipeline.compile_model(path, tmp_path / "c.npz")
    assert not ports.multi(g)
    cmodel.generate(g, plan, tmp_path / "lib", "single")
    assert "_INPUT_COUNT" not in (tmp_path / "lib" / "single.h").read_text()
    from edgec.quant import artifact
    assert "ports" not in artifact.graph_to_json(g)


def test_data_file_of_several_inputs(built, tmp_path):
    d, g, _, _ = built
    good = ports.load_data(data_file(tmp_path / "ok.npz", y_next_state=np.zeros((48, 4), np.float32)), g,
                           float_labels=True)
    assert good.x.shape == (48, 12) and set(good.ys) == {"probs", "next_state"}
    for override, needle in (({"x_state": None}, "has no array 'x_state' for the model input 'state'"),
                             ({"x_state": np.zeros((48, 5), np.float32)}, "x_state has shape [48, 5] but the model takes [1, 4]"),
                             ({"x_state": np.zeros((40, 4), np.float32)}, "x_state has 40 samples but x_features has 48"),
                             ({"y_probs": np.zeros(7, np.int64)}, "y_probs has 7 rows but the inputs have 48")):
        with pytest.raises(EdgecError, match=re.escape(needle)):
            ports.load_data(data_file(tmp_path / "bad.npz", **override), g)


def test_a_mismatched_data_file_is_a_one_line_error_before_anything_is_written(tmp_path, capsys):
    from types import SimpleNamespace
    from edgec import cli
    path = save(stateful_model(), tmp_path)
    bad = data_file(tmp_path / "bad.npz", x_features=None, x=np.zeros((48, 8), np.float32))
    code = cli.main(["build", str(path), "--calib", str(bad), "--board", "host", "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    proc = SimpleNamespace(returncode=code, stdout=out, stderr=err)      # the CLI in-process: no interpreter start
    assert_clean_error(proc, "has no array 'x_features' for the model input 'features'", "x_features=..., x_state=...")
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_an_input_or_another_output_is_refused(tmp_path):
    m = stateful_model()
    m.graph.node.append(helper.make_node("Identity", ["state"], ["state_copy"], name="passthrough"))
    m.graph.output.append(helper.make_tensor_value_info("state_copy", F, [1, 4]))
    with pytest.raises(EdgecError, match="output 'state_copy' is the input itself"):
        canonicalize.canonicalize(loader.load_model(save(m, tmp_path)), "m")


def test_options_that_judge_one_output_refuse_several(tmp_path):
    from edgec.quant.ptq import QuantOptions
    path = save(stateful_model(), tmp_path)
    with pytest.raises(EdgecError, match="this model has 2 inputs and 2 outputs: use --calibration minmax"):
        pipeline.calibrate_model(path, data_file(tmp_path / "c.npz"), QuantOptions(method="auto"))


def test_output_names_that_collide_in_c_are_refused(tmp_path):
    m = stateful_model()
    for node in m.graph.node:
        node.output[:] = ["Probs" if o == "next_state" else o for o in node.output]
    m.graph.output[1].name = "Probs"        # 'probs' and 'Probs' are both stateful_output_probs() in C
    g = canonicalize.canonicalize(loader.load_model(save(m, tmp_path)), "m")
    with pytest.raises(EdgecError, match="outputs 'probs' and 'Probs' both become the C name 'probs'"):
        ports.c_context(g, lambda t: "p")


@pytest.fixture(scope="module")
def m4_build(tmp_path_factory):
    """The example two-input, two-head model built for the emulated Cortex-M4 once: (build folder, bench report)."""
    example = Path(__file__).resolve().parent.parent / "examples" / "diabetes_multitask"
    out = tmp_path_factory.mktemp("m4") / "build"
    api.build(example / "model.onnx", example / "calib.npz", "qemu-cortex-m4", out)
    return out, api.bench(out, example / "test.npz", limit=24, report_dir=out)


def test_emulated_board_bench_compares_each_output(m4_build):
    r = m4_build[1]
    assert r["task"] == "multi-output" and set(r["outputs"]) == {"risk", "progress"}
    risk, progress = r["outputs"]["risk"], r["outputs"]["progress"]
    assert risk["agreement"]["device_vs_reference"] == 1.0 and progress["agreement"]["device_vs_reference"] == 1.0
    assert risk["task"] == "classification" and risk["accuracy"]["device"] > 0.6
    assert abs(risk["accuracy"]["device"] - risk["accuracy"]["float"]) <= 0.05
    assert progress["task"] == "regression" and progress["error"]["against"] == "labels"
    assert progress["error"]["device"]["mse"] < 1.0            # better than predicting the mean
    assert r["latency"]["median"] > 0
    from edgec.bench.report import summary_lines
    lines = summary_lines(r)
    assert any(line.startswith("output risk (classification): accuracy") for line in lines)
    assert any(line.startswith("output progress: device identical to the int8 reference on 100.00%") for line in lines)
    html = (m4_build[0] / "report.html").read_text()
    assert "risk: device top-1" in html and "progress: device MSE vs labels" in html


def test_model_device_takes_and_returns_each_input_and_output_by_name(m4_build):
    from edgec.testing import ModelDevice
    example = Path(__file__).resolve().parent.parent / "examples" / "diabetes_multitask"
    with np.load(example / "test.npz") as d:
        sample = {"clinical": d["x_clinical"][3], "serum": d["x_serum"][3]}
    with ModelDevice(m4_build[0]) as dev:
        got, want, fl = dev.run(sample), dev.reference(sample), dev.float_model(sample)
        with pytest.raises(EdgecError, match="inputs clinical, serum"):
            dev.run({"clinical": sample["clinical"]})
    assert set(got.int8) == {"risk", "progress"} and got.int8["progress"].shape == (1,)
    for name in ("risk", "progress"):
        assert np.array_equal(got.int8[name], want.int8[name])
        assert np.abs(got.float[name] - fl[name]).max() < 0.1


def test_port_names_are_read_without_needing_the_tensor():
    """A port known by name needs no graph tensor (the name's default is evaluated only when it is missing)."""
    g = Graph("m", {}, (), "in0", "out0", more_inputs=("in1",), port_names={"in0": "a", "in1": "b", "out0": "y"},
              port_shapes={"in0": (1, 2), "in1": (1, 3), "out0": (1, 4)})
    assert [(p.name, p.start, p.size) for p in ports.inputs(g)] == [("a", 0, 2), ("b", 2, 3)]
    assert [p.name for p in ports.outputs(g)] == ["y"]


def test_sensitivity_reports_each_layers_effect_on_each_output(built, tmp_path):
    """Each layer's SQNR at each output on its own (a head touches only its output) and, as the row's value,
    the worst output's; the table shows every output's column."""
    _, graph, _, _ = built
    x = np.random.default_rng(3).normal(0, 1, (4, 12)).astype(np.float32)
    rows = {r["layer"]: r for r in sensitivity.analyse(graph, x)}
    for r in rows.values():
        assert set(r["outputs"]) == {"probs", "next_state"}
        assert r["isolated_output_db"] == min(o["isolated_output_db"] for o in r["outputs"].values())
    assert rows["head_class"]["outputs"]["next_state"]["isolated_output_db"] == sensitivity.MAX_DB
    assert rows["head_state"]["outputs"]["probs"]["isolated_output_db"] == sensitivity.MAX_DB
    assert rows["head_state"]["outputs"]["next_state"]["isolated_output_db"] < 60
    assert rows["head_state"]["outputs"]["next_state"]["int4_output_db"] < \
        rows["head_state"]["outputs"]["next_state"]["isolated_output_db"]
    text = sensitivity.table(list(rows.values()))
    assert "-> probs dB" in text and "-> next_state dB" in text
    sensitivity.write_svg(list(rows.values()), tmp_path / "s.svg", "m")
    assert "worst of the outputs probs, next_state" in (tmp_path / "s.svg").read_text()
