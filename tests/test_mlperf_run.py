"""The official MLCommons Tiny runner (../shared/mlperf-runner, unchanged upstream code) drives edgec's
--protocol mlperf firmware on qemu-cortex-m4 for KWS, IC, VWW and AD, with inputs in the benchmarks'
official encodings made from ../shared/models/mlperf_tiny/data (KWS int8 MFCCs at the reference model's
scale/zero point, IC/VWW uint8 pixels, AD float32 log-mel segments of 2,560 B).  Only the runner's device
discovery is replaced by a pyserial URL (tests/mlperf_runner_driver.py).  Every m-results line the runner
reads equals edgec's host twin: the device's conversion to the model's input quantization
(edgec.targets.mlperf_encoding), the NumPy INT8 reference, and the reference firmware's result format
(AD: the on-device anomaly score).  `edgec mlperf` runs the same flow from edgec itself.

One firmware per benchmark for the module; few samples (AD: short clips) to keep it fast.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import MLPERF, MLPERF_MODELS, edgec, mlperf_calibration, mlperf_samples, require_mlperf
from edgec import api
from edgec.targets import mlperf_encoding as enc
from edgec.device.mlperf import open_for_runner
from edgec.quant import artifact, reference

RUNNER = MLPERF.parent.parent / "mlperf-runner"
BOARD = "qemu-cortex-m4"
KEYS = ["kws", "ic", "vww", "ad"]
AD_FRAMES = 8            # frames per AD clip: 4 segments of 5 frames at a stride of 1 frame


def require_runner() -> None:
    if (RUNNER / "main.py").is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{RUNNER} is missing: CI expects ../shared/mlperf-runner (the MLCommons Tiny runner)")
    pytest.skip(f"the MLCommons Tiny runner is not at {RUNNER} (../shared/mlperf-runner); nothing to drive")


def official_samples(key: str) -> tuple[list[np.ndarray], list[int]]:
    """Float samples (NHWC) and labels: the real data where there is some, golden random rows otherwise.
    The runner's AUC (sklearn, one-vs-rest) needs every class in the labels: the random rows of KWS and IC
    carry the missing classes as placeholder labels (the test checks results, not accuracy)."""
    if key == "ad":
        a = np.load(MLPERF / "data" / "ad_normal_id_01_00000000_logmel_200x128.npy").astype(np.float32)
        clip = a[:AD_FRAMES]
        noisy = clip + np.random.default_rng(0).normal(0, 4.0, clip.shape).astype(np.float32)
        return [clip, noisy], [0, 1]
    x, y = mlperf_samples(key)
    golden = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"].astype(np.float32)
    if key == "kws":
        others = [c for c in range(12) if c not in (5, 11)]
        return [x[0], x[1]] + [golden[2 + i % 6] for i in range(10)], [5, 11] + others
    if key == "vww":
        return [x[0], golden[1]], [1, 0]
    return [golden[i % 8] for i in range(10)], list(range(10))


@pytest.fixture(scope="module")
def runner_build(tmp_path_factory):
    """runner_build(key) -> (build folder, graph, dataset folder): one MLPerf firmware per benchmark."""
    root = tmp_path_factory.mktemp("mlperf_runner")
    cache = {}

    def get(key: str):
        if key not in cache:
            path = MLPERF / f"{MLPERF_MODELS[key]}.onnx"
            require_mlperf(path)
            calib, out = root / f"{key}-calib.npz", root / f"{key}-build"
            np.savez(calib, x=mlperf_calibration(key))
            api.build(path, calib, BOARD, out, protocol="mlperf", mlperf_model=f"{key}01")
            samples, labels = official_samples(key)
            enc.write_dataset(root / "datasets", f"{key}01", samples, labels, classes={"kws": 12, "ic": 10}.get(key, 2))
            cache[key] = (out, artifact.load_graph(out), root / "datasets")
        return cache[key]
    return get


def expected_lines(graph, key: str, dataset: Path) -> list[str]:
    """Every m-results line the device must print, in the runner's order (AD: each segment of each file)."""
    model = f"{key}01"
    e = enc.OFFICIAL[model]
    t_in, t_out = graph.tensors[graph.input], graph.tensors[graph.output]
    channels = enc.chw_channels(graph.input_onnx_shape) if e.dtype != "float32" else 0
    lines = []
    for row in (dataset / model / "y_labels.csv").read_text().split():
        name, _, _, size, stride = row.split(",")
        data = (dataset / model / name).read_bytes()
        starts = range(0, len(data) - int(size) + 1, int(stride)) if key == "ad" else [0]
        for s in starts:
            raw = data[s:s + int(size)] if key == "ad" else data
            q = enc.to_model_input(raw, e, t_in.scale, t_in.zero_point, channels)
            lines.append(enc.results_line(reference.run(graph, q), t_out.scale, t_out.zero_point, e, raw))
    return lines


def as_floats(line: str) -> list[float]:
    return [float(v) for v in line[len("m-results-["):-1].split(",") if v.strip()]


def run_runner(tmp_path: Path, url: str, *runs) -> list[tuple[list, str]]:
    """The runner's flow for each (mode, tests yaml, dataset) in one process: [(results.json, results.txt)]."""
    args = [str(a) for run in runs for a in run]
    proc = subprocess.run([sys.executable, str(Path(__file__).parent / "mlperf_runner_driver.py"), str(RUNNER), url,
                           "115200", str(tmp_path), *args], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    session = sorted((tmp_path / "sessions").glob("*/log.txt"))
    log = session[-1].read_text() if session else ""
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:], log[-2000:])
    out = []
    for mode, _, _ in runs:
        result = json.loads((tmp_path / f"result-{mode}.json").read_text())
        out.append((result, (tmp_path / f"results-{mode}.txt").read_text()))
    return out


# KWS and AD in the default run; VWW and IC (about a minute more) with the sweeps (scripts/test.sh -m sweep)
@pytest.mark.parametrize("key", [k if k in ("kws", "ad") else pytest.param(k, marks=[pytest.mark.slow, pytest.mark.sweep])
                                 for k in KEYS])
def test_official_runner_accuracy_and_performance(key, runner_build, tmp_path):
    require_runner()
    out, graph, dataset = runner_build(key)
    model = f"{key}01"
    want = expected_lines(graph, key, dataset)
    perf_yaml = tmp_path / "tests_performance.yaml"    # the official script, fewer iterations (emulated time)
    perf_yaml.write_text(f"{model}:\n  name: {model}\n  model: {model}\n  truth_file: y_labels.csv\n  script:\n"
                         "    - loop 5:\n      - download\n      - infer 1 0\n")
    perf_set = tmp_path / "perf"      # the runner's 5 windows take the next file each: list the files 5 times
    (perf_set / model).mkdir(parents=True)
    rows = (dataset / model / "y_labels.csv").read_text().split()
    for row in rows:
        (perf_set / model / row.split(",")[0]).symlink_to(dataset / model / row.split(",")[0])
    (perf_set / model / "y_labels.csv").write_text("\n".join((rows * 5)[:5]) + "\n")
    _, board, firmware = api.load_build(out)
    url, process = open_for_runner(board, firmware)
    try:
        (acc, acc_txt), (perf, perf_txt) = run_runner(tmp_path, url, ("a", RUNNER / "tests_accuracy.yaml", dataset),
                                                      ("p", perf_yaml, perf_set))
    finally:
        process.kill()
    got = [r["infer"]["results"] for r in acc if "infer" in r]
    assert got == [as_floats(line) for line in want], (got, want)
    assert "ulp-mlperf: Top 1% =" in acc_txt and "ulp-mlperf: AUC =" in acc_txt, acc_txt
    windows = [r for r in perf if "infer" in r]
    assert len(windows) == 5 and all(w["infer"]["elapsed_time"] > 0 and w["infer"]["throughput"] > 0
                                     for w in windows), windows
    assert "Performance results for window 5" in perf_txt, perf_txt
    print(f"{model} on {BOARD}: runner results = edgec reference on {len(want)} inputs; "
          f"{windows[0]['infer']['throughput']:.1f} inf/s (emulated time)")


def test_edgec_mlperf_command_accuracy_and_performance(runner_build, tmp_path):
    """`edgec mlperf`: the runner's flow from edgec, results.txt as the runner writes it; the performance
    window is sized from a probe inference to last the requested time on the board."""
    out, graph, dataset = runner_build("ad")
    p = edgec("mlperf", out, "--dataset", dataset, "--results", tmp_path / "res")
    assert p.returncode == 0, p.stderr
    result = json.loads((tmp_path / "res" / "ad01" / "accuracy" / "results.json").read_text())
    want = [as_floats(line)[0] for line in expected_lines(graph, "ad", dataset)]
    segs = [s[0] for f in result["files"] for s in f["raw_results"]]
    assert segs == want
    assert [f["results"][0] for f in result["files"]] == pytest.approx([np.mean(want[:4]), np.mean(want[4:])])
    assert "ulp-mlperf: Top 1% = 100.0" in (tmp_path / "res" / "ad01" / "accuracy" / "results.txt").read_text()
    r = api.mlperf(out, dataset, "performance", tmp_path / "res", window_seconds=0.02)
    assert r["iterations"] >= 2 and all(w["elapsed_us"] >= 20_000 for w in r["windows"]), r
    text = (tmp_path / "res" / "ad01" / "performance" / "results.txt").read_text()
    assert "ulp-mlperf: Median throughput is" in text and "Performance results for window 5" in text
