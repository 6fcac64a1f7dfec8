"""How much accuracy INT8 keeps: edgec's range methods against onnxruntime's quantize_static.

For every labelled example: float accuracy, edgec INT8 accuracy (NumPy integer reference, what the
device runs bit for bit) for each method, and onnxruntime.quantization.quantize_static (QDQ,
per-channel int8 weights, int8 activations; MinMax, Entropy, Percentile) on the same calibration
set, with calibration wall time. The MLPerf Tiny models have only a handful of real samples and no
labels to speak of: for them the table gives top-1 agreement with float and the output SQNR,
calibrated and measured on those same few samples. Then the calibration speed of VWW on 1,000 (and
4,000) synthetic 96x96x3 samples, with the peak RSS of the process.

    python benchmarks/quantization.py [--quick] [--md docs/quantization.md]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edgec import api
from edgec.quant import calibrate
from edgec.quant import int16
from edgec.frontend import loader
from edgec.quant import ptq
from edgec.quant import reference  # noqa: E402
from edgec.fixedpoint.scheme import quantize_input  # noqa: E402

MLPERF = next((p / "shared" / "models" / "mlperf_tiny" for p in REPO.parents
               if (p / "shared" / "models" / "mlperf_tiny").is_dir()), REPO.parent / "shared" / "models" / "mlperf_tiny")
EDGEC_VARIANTS = [("minmax", {}), ("percentile", {}), ("entropy", {}), ("mse", {}),
                  ("mse + bias corr. (float inputs)", {"method": "mse", "bias_correction": "float"}),
                  ("mse + bias corr.", {"method": "mse", "bias_correction": "quantized"}),
                  ("auto-model", {}), ("auto", {}), ("auto + bias corr.", {"method": "auto", "bias_correction": True})]
ORT_METHODS = ["MinMax", "Entropy", "Percentile"]


def edgec_outputs(model_path, calib_path, x, **opts):
    opts.setdefault("method", "minmax")
    t = time.monotonic()
    _, res = api.calibrate_model(model_path, calib_path, ptq.QuantOptions(cache=False, sensitivity_samples=0, **opts))
    seconds = time.monotonic() - t
    return int8_outputs(res.graph, x), seconds, res.label


def int8_outputs(g, x):
    """The dequantized outputs of the integer reference (what the device computes) for float inputs x."""
    xq = quantize_input(g.tensors[g.input], x)
    out = np.stack([reference.run(g, xq[i]).reshape(-1) for i in range(len(x))]).astype(np.float32)
    tout = g.tensors[g.output]
    return (out - tout.zero_point) * tout.scale


class _Reader:
    def __init__(self, name, x):
        self.name, self.x, self.i = name, x, 0

    def get_next(self):
        if self.i >= len(self.x):
            return None
        self.i += 1
        return {self.name: self.x[self.i - 1:self.i]}

    def rewind(self):
        self.i = 0


def ort_outputs(model_path, calib_x, x, method):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(_Reader, CalibrationDataReader):
        pass

    model = loader.load_model(model_path)
    name = loader.graph_inputs(model)[0].name
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "f.onnx", Path(d) / "q.onnx"
        onnx.save(model, str(src))
        t = time.monotonic()
        quantize_static(str(src), str(dst), Reader(name, calib_x), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, method))
        seconds = time.monotonic() - t
        q = onnx.load(str(dst))
        out = calibrate.run_float(q, x).reshape(len(x), -1)
    return out, seconds


def sqnr(ref, got):
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    noise = np.sum((ref - got) ** 2)
    return 99.0 if noise == 0 else 10 * np.log10(np.sum(ref ** 2) / noise)


def compare(label, model_path, calib_path, x, y, quick):
    model = loader.load_model(model_path)
    fl = calibrate.run_float(model, x).reshape(len(x), -1)
    calib_x = np.load(calib_path)["x"].astype(np.float32)
    rows = []

    def score(out):
        if y is None:
            return None
        return 100 * float(np.mean(out.argmax(1) == y))

    rows.append((label, "float (onnxruntime)", score(fl), 100.0, 99.0, None))
    for name, opts in EDGEC_VARIANTS[:2] if quick else EDGEC_VARIANTS:
        opts = dict(opts)
        if "method" not in opts:
            opts["method"] = name
        out, sec, chosen = edgec_outputs(model_path, calib_path, x, **opts)
        tag = f"edgec {name}" + (f" ({chosen})" if name.startswith("auto") else "")
        rows.append((label, tag, score(out), 100 * float(np.mean(out.argmax(1) == fl.argmax(1))), sqnr(fl, out), sec))
    for m in ORT_METHODS[:1] if quick else ORT_METHODS:
        out, sec = ort_outputs(model_path, calib_x, x, m)
        rows.append((label, f"ORT QDQ {m}", score(out), 100 * float(np.mean(out.argmax(1) == fl.argmax(1))),
                     sqnr(fl, out), sec))
    return rows


def _readers(graph, op):
    """Names of the int16-capable layers reading op's output (through views)."""
    names, todo = [], [op.output]
    while todo:
        t = todo.pop()
        for r in graph.consumers(t):
            if r.kind == "reshape":
                todo.append(r.output)
            elif r.kind in int16.KINDS:
                names.append(r.name)
    return names


def escape_hatch(label, model_path, calib_path, x):
    """--int16 on the layer the sensitivity report puts first (among layers with an int16 kernel) and on
    the layers reading its output: output SQNR and arena bytes against plain INT8 (mse ranges)."""
    fl = calibrate.run_float(loader.load_model(model_path), x).reshape(len(x), -1)

    def run(wide, samples):
        _, res = api.calibrate_model(model_path, calib_path, ptq.QuantOptions(method="mse", cache=False, int16=wide,
                                                                              sensitivity_samples=samples))
        out = int8_outputs(res.graph, x)
        return res, sqnr(fl, out), api.schedule_and_plan(res.graph)[1].arena_bytes

    base, snr8, arena8 = run((), 8)
    row = next(r for r in base.sensitivity if r["kind"] in int16.KINDS)
    op = base.graph.ops[row["index"]]
    wide = tuple(dict.fromkeys([op.name] + _readers(base.graph, op)))
    res, snr16, arena16 = run(wide, 8)
    row16 = next(r for r in res.sensitivity if r["layer"] == op.name and r["kind"] == op.kind)
    return (f"| {label} | {', '.join(w[-40:] for w in wide)} | {row['isolated_db']:.1f} | {row16['isolated_db']:.1f} | "
            f"{snr8:.1f} | {snr16:.1f} | {arena8:,} | {arena16:,} |")


def _fmt(v, fmt):
    return "n/a" if v is None else format(v, fmt)


def accuracy_table(rows):
    lines = ["| model | quantizer | top-1 accuracy % | top-1 agreement with float % | output SQNR dB | calibration s |",
             "|---|---|---:|---:|---:|---:|"]
    for label, q, acc, agree, snr, sec in rows:
        lines.append(f"| {label} | {q} | {_fmt(acc, '.2f')} | {_fmt(agree, '.1f')} | {_fmt(snr, '.1f')} | "
                     f"{_fmt(sec, '.2f')} |")
    return "\n".join(lines)


def mlperf_sets(tmp):
    """(label, model, calib file, x, y) for the MLPerf Tiny models on the samples the repo ships."""
    sets = []
    for key, model in (("vww", "vww_mobilenetv1_025_fp32.onnx"), ("kws", "kws_dscnn_fp32.onnx"),
                       ("ic", "ic_resnet8_fp32.onnx"), ("ad", "ad_fc_autoencoder_fp32.onnx")):
        z = np.load(MLPERF / "data" / f"golden_{key}.npz")
        x = z["x_fp32"].astype(np.float32)
        path = Path(tmp) / f"{key}.npz"
        np.savez(path, x=x)
        real = int(sum(not r.startswith("random") for r in z["rows"]))
        sets.append((f"{key} ({len(x)} samples, {real} real)", MLPERF / model, path, x, None))
    return sets


def speed(n, method):
    """Calibrate VWW on n synthetic samples in a fresh process; returns (seconds, peak RSS MB, lines)."""
    data = Path(tempfile.gettempdir()) / f"edgec_bench_vww_{n}.npz"
    if not data.exists():  # written in chunks through a memory map: the benchmark itself stays small too
        import zipfile

        rng = np.random.default_rng(0)
        npy = data.with_suffix(".npy")
        mm = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float32, shape=(n, 96, 96, 3))
        for i in range(0, n, 250):
            mm[i:i + 250] = rng.random((min(250, n - i), 96, 96, 3), dtype=np.float32)
        mm.flush()
        del mm
        with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            z.write(npy, "x.npy")
        npy.unlink()
    # peak RSS from VmHWM: ru_maxrss would include the parent's RSS at fork time
    code = ("import sys, time; from edgec import api, ptq; t = time.monotonic(); "
            f"_, r = api.calibrate_model({str(MLPERF / 'vww_mobilenetv1_025_fp32.onnx')!r}, {str(data)!r}, "
            f"ptq.QuantOptions(method={method!r}, cache=False, sensitivity_samples=16)); "
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]; "
            "print(time.monotonic() - t, r.calib_seconds, r.batch, int(hwm) / 1024)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    total, calib_s, batch, rss = out.stdout.split()
    return float(total), float(calib_s), int(batch), float(rss), data.stat().st_size / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer methods, no MLPerf, 1,000 samples only")
    ap.add_argument("--md", help="write the tables to this Markdown file")
    args = ap.parse_args()
    rows, hatch = [], []
    for ex in ("digits_cnn", "cancer_conv1d"):
        d = REPO / "examples" / ex
        test = np.load(d / "test.npz")
        rows += compare(ex, d / "model.onnx", d / "calib.npz", test["x"].astype(np.float32), test["y"], args.quick)
        hatch.append(escape_hatch(ex, d / "model.onnx", d / "calib.npz", test["x"].astype(np.float32)))
        print(accuracy_table(rows), flush=True)
    with tempfile.TemporaryDirectory() as tmp:          # the test suite's deliberately sensitive model
        sys.path.insert(0, str(REPO / "tests"))
        from test_int16 import _sensitive

        path = Path(tmp) / "sensitive.onnx"
        onnx.save(_sensitive(), str(path))
        np.savez(Path(tmp) / "calib.npz", x=np.random.default_rng(2).random((64, 3, 6, 6), dtype=np.float32))
        x = np.random.default_rng(3).random((200, 3, 6, 6), dtype=np.float32)
        hatch.append(escape_hatch("sensitive (tests/test_int16.py)", path, Path(tmp) / "calib.npz", x))
    if not args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            for label, model, calib, x, y in mlperf_sets(tmp):
                rows += compare(label, model, calib, x, y, quick=False)
                hatch.append(escape_hatch(label, model, calib, x))
    acc = accuracy_table(rows)
    hatch = "\n".join(["| model | --int16 layers (last 40 characters) | worst layer isolated dB int8 | with --int16 | "
                       "output SQNR int8 dB | with --int16 | arena B int8 | with --int16 |",
                       "|---|---|---:|---:|---:|---:|---:|---:|"] + hatch)
    speeds = []
    for n, method in ([(1000, "minmax"), (1000, "entropy"), (1000, "auto")] if not args.quick else [(1000, "entropy")]) \
            + ([(4000, "entropy")] if not args.quick else []):
        total, calib_s, batch, rss, mb = speed(n, method)
        speeds.append(f"| {n:,} | {mb:,.0f} MB | {method} | {calib_s:.1f} | {total:.1f} | {batch} | {rss:,.0f} |")
    sp = "\n".join(["| samples | data file | method | statistics s | whole calibrate_model s | ORT batch | peak RSS MB |",
                    "|---:|---:|---|---:|---:|---:|---:|"] + speeds)
    print()
    print(acc)
    print()
    print(hatch)
    print()
    print(sp)
    if args.md:
        Path(args.md).write_text(DOC.format(acc=acc, hatch=hatch, speed=sp, cmd="python benchmarks/quantization.py --md "
                                            + args.md))


DOC = """# Quantization: accuracy and calibration speed

Produced by `{cmd}` (numbers from one run on the 2-core development machine; timings are noisy).

## Accuracy

edgec rows are the NumPy integer reference, which the C kernels match bit for bit (so they are
what the device computes). ORT rows are `onnxruntime.quantization.quantize_static` with QDQ,
per-channel int8 weights and int8 activations, calibrated on the same calibration file, run by
onnxruntime. *calibration s* is the wall time of the whole quantization call (edgec: statistics +
range selection + quantization, no cache; ORT: calibration + writing the QDQ model).

*auto-model* is one range method for the whole model (the best on held-out calibration samples);
*auto* refines it tensor by tensor (greedy, a change kept only if the held-out output SQNR rises overall
and on both halves of the held-out samples); the chosen label says how many tensors it changed. *bias
corr.* is measured on the quantized model's own activations; *(float inputs)* is the older variant that
sees the weights' rounding only.

- `digits_cnn`, `cancer_conv1d`: calibrated on `calib.npz`, measured on the labelled `test.npz`.
- MLPerf Tiny (`vww`, `kws`, `ic`, `ad`): the repository ships only the `golden_*.npz` samples (a few
  real ones, the rest random inputs) and no labelled test set. These rows are calibrated **and**
  measured on those same few samples, so they are a sanity check of agreement with float (top-1
  agreement, output SQNR), not an accuracy claim. `ad` is an autoencoder: only SQNR means anything.

{acc}

## The int16 escape hatch (`--int16`)

For each model, the layer the sensitivity report ranks worst (among the layers with a 16x8 kernel:
conv, depthwise, fully connected) and the layers reading its output run with int16 activations
(TFLite's 16x8 scheme); everything else stays as in the `mse` row above. Output SQNR against float on
the same samples as the accuracy table, the worst layer's own (isolated) SQNR, and the arena the
planner needs (int16 tensors take 2 bytes per value). The MLPerf rows are calibrated and measured on
their 4-12 golden samples: their output SQNR moves by several dB with any change (noise of so few
samples); the layer's isolated SQNR is the meaningful column there.

{hatch}

## Calibration speed and memory (VWW MobileNetV1-0.25, 96x96x3)

Synthetic uniform random inputs of the right shape (there is no real VWW data set here), in an
`.npz` streamed batch by batch; `edgec calibrate` with no cache. *statistics s* is the two streamed
passes over the data (min/max, then histograms; one pass for minmax); *whole* adds loading,
range selection (for `auto`: quantizing with each method and running the reference on 32
held-out samples, then the per-tensor search within its 20 s budget) and the sensitivity report on 16
samples. Peak RSS is the VmHWM of the whole
Python process doing the calibration: it does not grow with the number of samples.

{speed}
"""

if __name__ == "__main__":
    main()
