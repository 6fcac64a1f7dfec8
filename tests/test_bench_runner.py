"""The bench stage on real firmware: metrics, the per-layer profile, the divergence finder against a
deliberately broken layer, the user's --score, non-classifier error metrics, report.html (rendered in
headless Chromium when it is installed) and the CLI's --json -."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from onnx import helper

from conftest import EXAMPLES, REPO, make_model, require, save
from edgec import api
from edgec.quant import artifact
from edgec.bench import runner as bench
from edgec.bench import report
from edgec.targets.boards import load_board
from edgec.errors import EdgecError
from edgec.targets.firmware import build_firmware
from edgec.settings import Settings

DIGITS = EXAMPLES / "digits_cnn"


@pytest.fixture(scope="module")
def builds(example_build):
    """builds(board) -> the digits example's build folder, once per run (conftest.example_build: the builds
    tests/test_examples.py benches)."""
    return lambda board: example_build("digits_cnn", board)[1]


def test_profile_sums_to_the_whole_inference_on_qemu(builds, tmp_path):
    """Per-layer times (PROFILE, exact under -icount) sum to within 5% of the plain INVOKE's time;
    the stack high-water mark is measured by painting."""
    r = api.bench(builds("qemu-cortex-m4"), DIGITS / "test.npz", limit=8, profile=True)
    p = r["profile"]
    graph = artifact.load_graph(builds("qemu-cortex-m4"))
    assert [x["name"] for x in p["layers"]] == [op.name for op in bench.layers(graph)]
    assert all(x["units"] > 0 for x in p["layers"])
    assert abs(p["sum_over_whole"] - 1) <= 0.05, p["sum_over_whole"]
    assert abs(sum(x["units"] for x in p["layers"]) - p["whole_units"]) <= 0.05 * p["whole_units"]
    assert abs(sum(x["share"] for x in p["layers"]) - 1) < 1e-9
    conv = max(p["layers"], key=lambda x: x["macs"])
    assert conv["units"] == max(x["units"] for x in p["layers"])     # the biggest conv dominates
    m = r["memory"]
    assert 0 < m["stack_used_bytes"] < m["stack_reserved_bytes"] == 8192
    assert m["total_ram_bytes"] == m["static_ram_bytes"] + m["stack_used_bytes"] and "stack_used_note" not in m
    lat = r["latency"]
    assert lat["ms"]["median"] == pytest.approx(lat["median"] / 25e6 * 1e3)
    assert "estimate" in lat["ms"]["basis"]
    table = report.profile_table(r)
    assert all(x["name"] in table for x in p["layers"]) and "#" in table


def _break_one_weight(build, layer_index):
    """Flip the first weight of one layer in the generated C and rebuild the firmware: that layer (and
    only on the device) computes something else.  Returns the broken layer's name."""
    rep = json.loads((build / "build-report.json").read_text())
    graph = artifact.load_graph(build)
    op = bench.layers(graph)[layer_index]
    src = build / "project" / "src" / f"{rep['model']}.c"
    text = src.read_text()
    i = graph.ops.index(op)
    # the portable kernels' int8 weights, or the fast kernels' packed words (4 weights each)
    m = re.search(rf"static const (?:int8_t op{i}_weights|uint32_t op{i}_fw)\[\d+\] = {{\n\s*(-?\d+)", text)
    assert m, "weights array not found in the generated C"
    if "_fw[" in m.group(0):
        new = str(int(m.group(1)) ^ 0x40)                            # flips bit 6 of the first weight
    else:
        new = "-127" if int(m.group(1)) >= 0 else "127"
    src.write_text(text[:m.start(1)] + new + text[m.end(1):])
    fw = build_firmware(build / "project", load_board(rep["board"]), Settings.from_environment(), log=None)
    assert (build / rep["firmware"]).resolve() == fw.elf.resolve()
    return op.name


def test_divergence_finder_names_the_broken_layer(builds, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(builds("host"), broken)
    name = _break_one_weight(broken, 1)
    r = api.bench(broken, DIGITS / "test.npz", limit=6)             # no flag: found automatically
    assert r["agreement"]["device_vs_reference"] < 1
    div = r["divergence"]
    assert div["sample"] == r["agreement"]["mismatched_samples"][0]
    first = div["first_divergent_layer"]
    assert first["name"] == name and first["index"] == 1 and first["max_abs_diff"] > 0
    assert div["layers"][0]["differing"] == 0                        # the layer before it is bit-exact
    assert "first differing layer is #1" in bench.describe_divergence(div)


def test_bench_report_score_and_compare_layers_on_host(builds, tmp_path):
    metric = tmp_path / "metric.py"
    metric.write_text("import numpy as np\n"
                      "def confidence(outputs, labels, inputs):\n"
                      "    assert outputs.shape == (len(inputs), 10) and labels is not None\n"
                      "    return {'mean_top': float(outputs.max(1).mean()), 'n': len(inputs)}\n")
    r = api.bench(builds("host"), DIGITS / "test.npz", limit=30, compare_layers=True, profile=True,
                  score=f"{metric}:confidence", report_dir=tmp_path / "rep")
    assert r["task"] == "classification"
    assert r["accuracy"]["device"] == r["accuracy"]["int8_reference"]
    conf = np.array(r["confusion"]["matrix"])
    assert conf.shape == (10, 10) and conf.sum() == 30
    assert np.trace(conf) == round(r["accuracy"]["device"] * 30)
    assert r["score"]["device"] == r["score"]["int8_reference"] and r["score"]["device"]["n"] == 30
    assert r["divergence"]["first_divergent_layer"] is None
    assert r["memory"]["stack_used_bytes"] is None                   # host: not measured, said so
    assert r["memory"]["total_ram_bytes"] is None and "host" in r["memory"]["stack_used_note"]
    assert r["latency"]["ms"]["basis"] == "host wall clock"
    assert r["link"]["throughput_bytes_per_s"] > 0 and r["link"]["retransmissions"] == 0
    saved = json.loads((tmp_path / "rep" / "bench-report.json").read_text())
    assert saved["samples"] == 30
    html = (tmp_path / "rep" / "report.html").read_text()
    svgs = re.findall(r"<svg .*?</svg>", html, re.S)
    for svg in svgs:
        ET.fromstring(svg)                                           # well-formed
    titles = re.findall(r'<svg [^>]*aria-label="([^"]+)"', html)
    assert any(t.startswith("Latency of 30") for t in titles) and any(t.startswith("Time per layer") for t in titles)
    assert any(t.startswith("Confusion") for t in titles)
    assert "arena over time</title>" in html                         # the build's memory.svg, inlined
    assert any(t.startswith("Max |device") for t in titles)
    assert "src=" not in html and "<script" not in html               # self-contained
    _screenshot_check(tmp_path / "rep" / "report.html", tmp_path / "shot.png")


def _screenshot_check(html, png):
    script = REPO / "scripts" / "screenshot_report.py"
    spec = importlib.util.spec_from_file_location("screenshot_report", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    require(mod.chromium() is not None, "chromium (report.html not rendered)", "scripts/setup.sh installs it")
    mod.screenshot(html, png)
    counts = mod.colour_counts(png, mod.PLOT_COLOURS)
    assert all(v > 50 for v in counts.values()), counts      # bars and the latency plot's median marks


def test_regression_model_error_metrics_and_cli_json(tmp_path):
    """A non-classifier: MSE / max error against float targets and against the float model."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1, name="fc2")]
    inits = {"w": rng.standard_normal((16, 8)) * 0.4, "b": rng.standard_normal(16) * 0.1,
             "w2": rng.standard_normal((4, 16)) * 0.4, "b2": rng.standard_normal(4) * 0.1}
    model = save(make_model(nodes, ("x", [1, 8]), ("y", [1, 4]), inits), tmp_path, "regress.onnx")
    x = rng.standard_normal((40, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    y = rng.standard_normal((40, 4)).astype(np.float32)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    np.savez(tmp_path / "nolabels.npz", x=x)
    out = tmp_path / "b"
    api.build(model, tmp_path / "calib.npz", "host", out)
    r = api.bench(out, tmp_path / "test.npz")
    assert r["task"] == "regression" and "accuracy" not in r
    e = r["error"]
    assert e["against"] == "labels" and e["device"] == e["int8_reference"]
    assert e["device"]["mse"] == pytest.approx(e["float"]["mse"], rel=0.1)
    proc = subprocess.run([sys.executable, "-m", "edgec", "bench", str(out), "--data", str(tmp_path / "nolabels.npz"),
                           "--json", "-", "--no-report"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    j = json.loads(proc.stdout)                                      # stdout is only the JSON
    assert j["error"]["against"] == "float model" and 0 < j["error"]["device"]["mse"] < 0.05
    assert "error against the float model" in proc.stderr
    assert not (out / "report.html").exists()


def test_score_spec_errors(tmp_path):
    for spec, needle in [("nocolon", "expected module:function"), (f"{tmp_path}/none.py:f", "does not exist"),
                         ("edgec_no_such_module:f", "cannot import"), ("json:no_such_function", "has no function")]:
        with pytest.raises(EdgecError, match=needle):
            bench.load_score(spec)
    assert bench.load_score("json:dumps") is json.dumps


def test_cycle_scratch_is_removed_when_the_device_fails(tmp_path, monkeypatch):
    """The cycle plugin's edgec-cycles-* folder goes on every exit path (it stayed after a failed run)."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    board = load_board("qemu-cortex-m3")
    with pytest.raises(EdgecError):
        bench._run_over_link(tmp_path, {}, None, board, tmp_path / "missing.elf", None, None,
                             np.zeros((1, 4), np.int8), np.zeros((1, 2), np.int8), False, False, {}, None,
                             lambda m: None, Settings.from_environment())
    assert list(tmp_path.glob("edgec-cycles-*")) == []


def test_bench_over_a_noisy_link_records_only_right_samples(builds, monkeypatch):
    """The real host firmware behind a link that flips, drops, duplicates and inserts bytes: the bench
    retries, and every recorded output is still bit-identical to the reference."""
    from faulty_serial import FaultySerial
    from edgec.device import device

    real_open = device.open_device
    wrapped = []

    def noisy_open(*args, **kwargs):
        dev = real_open(*args, **kwargs)
        dev.link.ser = FaultySerial(dev.link.ser, rate=0.002, seed=7)
        dev.link.timeout, dev.link.retries = 0.2, 12
        wrapped.append(dev.link)
        return dev
    monkeypatch.setattr(device, "open_device", noisy_open)
    r = api.bench(builds("host"), DIGITS / "test.npz", limit=60)
    assert wrapped[0].ser.faults > 20 and r["link"]["retransmissions"] > 0
    assert r["agreement"]["device_vs_reference"] == 1.0


def test_device_that_dies_or_hangs_mid_bench(builds):
    import os
    import signal
    from edgec.device.device import open_device

    _, board, firmware = api.load_build(builds("host"))
    x = bytes(64)
    with open_device(board, firmware) as dev:          # hangs: stopped, the socket stays open
        dev.link.run(x)
        dev.link.timeout, dev.link.retries, dev.link.invoke_timeout = 0.1, 2, 0.1
        reaper = dev._process.proc.pid                 # edgec.children.spawn: the device runs under a reaper,
        with open(f"/proc/{reaper}/task/{reaper}/children") as f:      # in a process group of its own
            device = int(f.read().split()[0])
        os.killpg(device, signal.SIGSTOP)
        with pytest.raises(EdgecError, match=r"stopped answering: no valid reply to WRITE_INPUT .* after 3 tries"):
            dev.link.run(x)
        os.killpg(device, signal.SIGCONT)
    with open_device(board, firmware) as dev:          # dies: the connection is lost
        dev.link.run(x)
        dev._process.kill()
        with pytest.raises(EdgecError, match=r"connection to board 'host' was lost"):
            dev.link.run(x)


def test_report_reads_sensitivity_and_memory_pictures(tmp_path):
    """sensitivity.json as edgec's quantization analysis writes it (worst first, SQNR in dB), and a
    memory.svg in the build folder, are picked up by the report."""
    rows = [{"index": 3, "layer": "conv2", "kind": "conv2d", "tensor": "t3", "cumulative_db": 20.5,
             "isolated_db": 30.1, "isolated_output_db": 25.0},
            {"index": 0, "layer": "conv1", "kind": "conv2d", "tensor": "t0", "cumulative_db": 40.0,
             "isolated_db": 41.0, "isolated_output_db": 38.5}]
    (tmp_path / "sensitivity.json").write_text(json.dumps(rows))
    pairs, label = report.sensitivity(tmp_path)
    assert pairs == [("conv2", 25.0), ("conv1", 38.5)] and "SQNR" in label
    svg = report._sensitivity_plot(tmp_path)["svg"]
    ET.fromstring(svg)
    assert "conv2" in svg and "25" in svg
    (tmp_path / "memory.svg").write_text('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>')
    assert report._memory_plot(tmp_path)["svg"].startswith("<svg")
    assert report.sensitivity(tmp_path / "nowhere") is None


def test_cycles_become_milliseconds_at_the_clock_the_firmware_reports():
    """A DWT board's firmware reports SystemCoreClock in its hello: the H743 runs at 480 MHz under
    STM32duino 2.12, so 480,000 cycles are 1 ms whatever the profile's clock_hz says."""
    from edgec.bench.runner import device_clock, latency_stats

    h743 = dataclasses.replace(load_board("nucleo-h743zi2"), clock_hz=400_000_000, tick_hz=400_000_000)
    notes = []
    board = device_clock(h743, {"tick_hz": 480_000_000}, notes.append)
    assert (board.clock_hz, board.tick_hz) == (480_000_000, 480_000_000) and "480 MHz" in notes[0]
    assert latency_stats(np.array([480_000.0]), board)["ms"]["median"] == pytest.approx(1.0)
    assert device_clock(h743, {"tick_hz": 0}) is h743                     # no report: the profile's number
    qemu = load_board("qemu-cortex-m4")                                  # instruction counts are not cycles
    assert device_clock(qemu, {"tick_hz": 1}) is qemu


def test_the_first_inference_waits_for_the_models_size_not_an_hour():
    """A device that never answers the first inference: all tries together stay within ten minutes (it used
    to be 600 s per try, six tries), and a small model is given up on in about a minute."""
    from edgec.bench.runner import first_invoke_timeout
    assert first_invoke_timeout({"macs": 10_000}, 5) * 6 <= 62
    assert first_invoke_timeout({"macs": 10**12}, 5) * 6 <= 600
    assert first_invoke_timeout({"macs": 10**8}, 5) > first_invoke_timeout({"macs": 10**4}, 5)
    assert first_invoke_timeout({}, 5) == 10.0


def test_float_tail_outputs_agree_within_the_stated_ulps():
    """A float tail's float32 outputs (edgec/ops/float_tail): the device's C library's exp and log may round a
    last bit otherwise than the host's (newlib's on the M4: 1 ulp on the corpus's LeNet), so the bench counts
    them equal within `ulps`; everything else bit for bit (-0.0 is not 0.0)."""
    a = np.array([[-0.01202736, 1.5], [0.0, 2.0]], np.float32)
    b = a.copy()
    b[0, 0] = np.nextafter(a[0, 0], np.float32(0))
    b[1, 0] = np.float32(-0.0)
    assert bench.same_rows(a, b).tolist() == [False, False]
    assert bench.same_rows(a, b, ulps=1).tolist() == [True, False]
    assert bench.same_rows(a, a).tolist() == [True, True]


def test_a_vector_input_and_an_int32_output_beside_an_int8_one(tmp_path):
    """A .tflite taking one vector [6] (rank 1, no batch axis; the data file's samples 1-D) with two outputs of
    different types: SOFTMAX int8 -> int16, QUANTIZE int16 -> int32 (keyword_scrambled_8bit's tail), and an int8
    requantization. The bench took the vector as [1] ("x must be (N, )"), and stopped with a traceback comparing
    TFLite Micro's values with the link's bytes; now the device, the reference and TFLite Micro agree on each
    output, read in its own type, and the per-name C API declares the int32 output."""
    import tflite_oracle as oracle
    T, Node = oracle.T, oracle.Node
    tensors = [T((6,), [0.1], [3]), T((6,), [1 / 65536], [-32768], 7), T((6,), [1 / 32767], [0], oracle.INT32),
               T((6,), [0.05], [-2])]
    nodes = [Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=1.0))), Node("QUANTIZE", [1], 2),
             Node("QUANTIZE", [0], 3)]
    model = tmp_path / "two.tflite"
    model.write_bytes(oracle.write(oracle.Case("two", tensors, nodes, 0, [2, 3])))
    x = ((np.random.default_rng(5).integers(-128, 128, (12, 6)) - 3) * 0.1).astype(np.float32)
    np.savez(tmp_path / "test.npz", x=x)
    out = tmp_path / "b"
    api.build(model, None, "host", out)
    assert re.search(r"output 't2': int32, shape \[1, 6\]", (out / "model" / "two.h").read_text())
    r = api.bench(out, tmp_path / "test.npz")
    assert r["task"] == "multi-output" and r["input_saturated_samples"] == 0
    assert r["agreement"]["device_vs_reference"] == 1.0 and r["tflite"]["reference_vs_interpreter"] == 1.0
    assert {p["agreement"]["device_vs_reference"] for p in r["outputs"].values()} == {1.0}


def _pair_model(tmp_path):
    """A .tflite with two inputs (t0 int8 [1,5], t1 uint8 [1,4]) and two outputs (t2: t0 QUANTIZEd to another
    scale, t3: t1 QUANTIZEd to int8), 10 samples of real values (x_t0, x_t1, and y_t3 = x_t1 as targets), and a
    score function that checks what it gets by name."""
    import tflite_oracle as oracle
    T, Node = oracle.T, oracle.Node
    tensors = [T((1, 5), [0.1], [0]), T((1, 4), [0.02], [128], 3), T((1, 5), [0.05], [1]), T((1, 4), [0.02], [0])]
    nodes = [Node("QUANTIZE", [0], 2), Node("QUANTIZE", [1], 3)]
    model = tmp_path / "pair.tflite"
    model.write_bytes(oracle.write(oracle.Case("pair", tensors, nodes, [0, 1], [2, 3])))
    rng = np.random.default_rng(29)
    x0 = (rng.integers(-50, 50, (10, 5)) * 0.1).astype(np.float32)
    x1 = ((rng.integers(0, 256, (10, 4)) - 128) * 0.02).astype(np.float32)
    np.savez(tmp_path / "test.npz", x_t0=x0, x_t1=x1, y_t3=x1)
    metric = tmp_path / "metric.py"
    metric.write_text(
        "import numpy as np\n"
        "def score(outputs, labels, x):\n"
        "    assert sorted(outputs) == ['t2', 't3'] and sorted(x) == ['t0', 't1'] and sorted(labels) == ['t3']\n"
        "    assert outputs['t2'].shape == x['t0'].shape == (10, 5) and outputs['t3'].shape == (10, 4)\n"
        "    return {'mse_t2': float(np.mean((outputs['t2'] - x['t0']) ** 2)),\n"
        "            'max_t3': float(np.max(np.abs(outputs['t3'] - labels['t3'])))}\n")
    return model, metric


def test_score_gets_every_output_and_input_by_name(tmp_path):
    """--score on a model with several inputs and outputs (refused before: "a score function takes one output"):
    the function gets {output name: floats}, {output name: labels} and {input name: floats}, each in its sample
    shape, for the float model, the reference and the device (here the reference's values on all three)."""
    from edgec import ports
    from edgec.bench.score import load_score
    from edgec.data import Dataset
    from edgec.frontend import tflite as importer
    from edgec.quant import reference
    model, metric = _pair_model(tmp_path)
    g = importer.load(model, "pair")
    z = np.load(tmp_path / "test.npz")
    data = Dataset(x=np.concatenate([z["x_t0"], z["x_t1"]], axis=1), y=None, path=tmp_path / "test.npz",
                   ys={"t3": z["y_t3"]})
    ref = reference.run_sequence(g, ports.quantize_inputs(g, data.x), reset_each=True)
    spec = f"{metric}:score"
    q = bench._quality_per_output(g, data, ports.dequantize_outputs(g, ref), ref, ref, spec, load_score(spec))
    s = q["score"]
    assert s["name"] == spec and s["float"] == s["int8_reference"] == s["device"]
    # t2 requantizes t0 (step 0.1) to step 0.05: exact; t3 takes t1's values (the same scale): exact
    assert s["device"]["mse_t2"] < 1e-10 and s["device"]["max_t3"] < 1e-6


@pytest.mark.sweep
def test_score_on_a_model_with_several_inputs_and_outputs_end_to_end(tmp_path):
    """The same through `edgec bench --score` on the host board (about 9 s: a firmware build)."""
    model, metric = _pair_model(tmp_path)
    out = tmp_path / "b"
    api.build(model, None, "host", out)
    r = api.bench(out, tmp_path / "test.npz", score=f"{metric}:score", report_dir=None)
    s = r["score"]
    assert r["task"] == "multi-output" and s["name"] == f"{metric}:score"
    assert s["device"] == s["int8_reference"]
    # t2 requantizes t0 (step 0.1) to step 0.05: exact; t3 takes t1's values (the same scale): exact
    assert s["device"]["mse_t2"] < 1e-10 and s["device"]["max_t3"] < 1e-6
    assert any(line.startswith("score ") for line in report.summary_lines(r))


@pytest.mark.sweep
def test_dataset_in_flash_on_a_model_with_several_inputs_and_outputs(tmp_path):
    """--dataset-in-flash on the host board with two inputs (int8, uint8) and two outputs (refused before: "runs
    models with one input and one output"): the images hold each sample's inputs one after the other, the
    firmware fills every input and sends every output back; the same outputs as the bench over the link."""
    model, _ = _pair_model(tmp_path)
    out = tmp_path / "b"
    api.build(model, None, "host", out)
    flash = api.bench(out, tmp_path / "test.npz", dataset_in_flash=True, report_dir=None)
    link = api.bench(out, tmp_path / "test.npz", report_dir=None)
    assert flash["link"]["mode"] == "dataset-in-flash" and flash["samples"] == 10
    assert flash["link"]["input_bytes_in_images"] == 10 * (5 + 4)
    assert flash["agreement"]["device_vs_reference"] == 1.0
    assert {p["agreement"]["device_vs_reference"] for p in flash["outputs"].values()} == {1.0}
    assert flash["outputs"] == link["outputs"]
