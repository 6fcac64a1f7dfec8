"""The default quantization recipe (edgec/quant/fixes.py) before and after, beside ONNX Runtime's and NNCF's
post-training quantization, on the examples, the hostile models, the MLPerf Tiny models and the .onnx models of
the real-model corpus (tests/corpus/): docs/quantization.md's "Default recipe" table.

Rows per model: float (onnxruntime); edgec plain (minmax ranges, no equalization, no bias correction: the default
before the recipe); edgec default (the recipe: what it chose in the last column); for labelled models, edgec
--max-accuracy-drop 1 given the calibration file without its labels; onnxruntime quantize_static (QDQ,
per-channel int8 weights, int8 activations) with each of its calibration methods (MinMax, Entropy, Percentile)
on the same calibration file; NNCF's post-training quantization (nncf.quantize, its defaults: min/max ranges,
fast bias correction, symmetric int8 activations; `pip install edgec[compare]`) on the same file, run by
onnxruntime as QDQ. edgec figures are the NumPy integer reference, which the generated C matches bit for bit.
Accuracy is top-1 on the labelled test set where one exists; the MLPerf Tiny models ship only their golden
samples (no labels): those rows are calibrated and measured on the same few samples (top-1 agreement with float
and output SQNR, a sanity check, not an accuracy claim); the corpus models are calibrated on their calib.npz and
measured on their oracle's other samples (2 to 4: output SQNR only says something).

    python scripts/quant_table.py [--md docs/quantization.md]
"""
from __future__ import annotations

import argparse
import re
import runpy
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from quantization import MLPERF, edgec_outputs, int8_outputs, ort_outputs, sqnr  # noqa: E402  (benchmarks/quantization.py)

from edgec import api  # noqa: E402
from edgec.frontend import loader  # noqa: E402
from edgec.quant import calibrate, ptq  # noqa: E402

EX = REPO / "examples"
BEGIN, END = "<!-- quant_table.py begin -->", "<!-- quant_table.py end -->"
BEGIN4, END4 = "<!-- quant_table.py int4 begin -->", "<!-- quant_table.py int4 end -->"


def conv_outlier_model(tmp: Path, which: str = "conv_outlier") -> Path:
    return runpy.run_path(str(EX / "hostile_channel" / "conv_outlier.py"))["write"](which, tmp)


def sets(tmp: Path):
    """(label, model, calibration file, x, y or None)."""
    def test(d):
        z = np.load(d / "test.npz")
        return z["x"].astype(np.float32), z["y"]
    out = [("digits_cnn", EX / "digits_cnn" / "model.onnx", EX / "digits_cnn" / "calib.npz", *test(EX / "digits_cnn")),
           ("cancer_conv1d", EX / "cancer_conv1d" / "model.onnx", EX / "cancer_conv1d" / "calib.npz",
            *test(EX / "cancer_conv1d")),
           ("hostile: FC outlier (hostile_channel)", EX / "hostile_channel" / "model.onnx",
            EX / "hostile_channel" / "calib.npz", *test(EX / "hostile_channel")),
           ("hostile: conv outlier (conv_outlier.py)", conv_outlier_model(tmp), EX / "digits_cnn" / "calib.npz",
            *test(EX / "digits_cnn")),
           ("hostile: depthwise outlier (conv_outlier.py)", conv_outlier_model(tmp, "depthwise_outlier"),
            EX / "digits_cnn" / "calib.npz", *test(EX / "digits_cnn")),
           *((f"hostile: {what} (hostile_mlps.py)", EX / "hostile_channel" / f"{name}.onnx",
              EX / "hostile_channel" / "calib.npz", *test(EX / "hostile_channel"))
             for what, name in (("residual add, mismatched ranges", "residual_add"), ("saturating Tanh", "saturating")))]
    for key, model in (("vww", "vww_mobilenetv1_025_fp32.onnx"), ("kws", "kws_dscnn_fp32.onnx"),
                       ("ic", "ic_resnet8_fp32.onnx"), ("ad", "ad_fc_autoencoder_fp32.onnx")):
        z = np.load(MLPERF / "data" / f"golden_{key}.npz")
        x = z["x_fp32"].astype(np.float32)
        path = tmp / f"{key}.npz"
        np.savez(path, x=x)
        out.append((f"{key} ({len(x)} golden samples)", MLPERF / model, path, x, None))
    # AD on real data: 196 windows of 5 log-mel frames of the one clip the repository ships; calibrated on the
    # first 128, measured on the other 68
    mel = np.load(MLPERF / "data" / "ad_normal_id_01_00000000_logmel_200x128.npy").astype(np.float32)
    win = np.stack([mel[i:i + 5].reshape(-1) for i in range(len(mel) - 4)])
    np.savez(tmp / "ad_windows.npz", x=win[:128])
    out.append(("ad (128 log-mel windows; 68 others measured)", MLPERF / "ad_fc_autoencoder_fp32.onnx",
                tmp / "ad_windows.npz", win[128:], None))
    for name in CORPUS_ONNX:
        d = CORPUS / name
        n = len(np.load(d / "calib.npz")["x"])
        x = np.load(d / "oracle.npz")["x"].astype(np.float32)
        out.append((f"corpus {name} ({n} calibration samples, {len(x)} measured)", d / "model.onnx",
                    d / "calib.npz", x, None))
    return out


CORPUS = REPO / "tests" / "corpus"
CORPUS_ONNX = ("onnx2c_mnist", "tf2onnx_ds_cnn_kws", "tf2onnx_har_cnn1d", "tf2onnx_ad_autoencoder",
               "tf2onnx_mobilenet_v1_025_96")


def nncf_outputs(model_path, calib_x, x):
    """NNCF's post-training INT8 (nncf.quantize with its defaults) of the float model, run by onnxruntime; None
    when nncf is not installed."""
    try:
        import nncf
    except ImportError:
        return None
    model = loader.load_model(model_path)
    name = loader.graph_inputs(model)[0].name
    q = nncf.quantize(model, nncf.Dataset([{name: s[None]} for s in calib_x]), subset_size=len(calib_x))
    return calibrate.run_float(q, x).reshape(len(x), -1)


def rows_of(label, model_path, calib_path, x, y):
    fl = calibrate.run_float(loader.load_model(model_path), x).reshape(len(x), -1)
    calib_x = np.load(calib_path)["x"].astype(np.float32)

    def row(name, out, chosen=""):
        acc = None if y is None else 100 * float(np.mean(out.argmax(1) == y))
        return (label, name, acc, 100 * float(np.mean(out.argmax(1) == fl.argmax(1))), sqnr(fl, out), chosen)
    rows = [row("float", fl)]
    out, _, _ = edgec_outputs(model_path, calib_path, x, method="minmax", equalize=False, bias_correction=False)
    rows.append(row("edgec plain (minmax; the old default)", out))
    _, res = api.calibrate_model(model_path, calib_path, ptq.QuantOptions(cache=False, sensitivity_samples=0))
    f = res.fixes
    chosen = ((", ".join(f.chosen) or "nothing") + ("" if f.judged else f" ({f.reason})")) if f else ""
    rows.append(row("edgec default (recipe)", int8_outputs(res.graph, x), chosen))
    if y is not None:           # the budget on the calibration file without its labels
        unlabelled = Path(tempfile.mkdtemp()) / "x_only.npz"
        np.savez(unlabelled, x=calib_x)
        _, res = api.calibrate_model(model_path, unlabelled, ptq.QuantOptions(cache=False, sensitivity_samples=0,
                                                                              max_accuracy_drop=1.0))
        m = res.mixed
        rows.append(row("edgec --max-accuracy-drop 1, calibration file without labels", int8_outputs(res.graph, x),
                        f"int16 {', '.join(m.int16) or '-'}; int4 {', '.join(m.int4) or '-'}; "
                        + ("within" if m.within_budget else "outside") + " the budget on the held-out samples"))
    for method in ("MinMax", "Entropy", "Percentile"):
        out, _ = ort_outputs(model_path, calib_x, x, method)
        rows.append(row(f"ORT quantize_static {method}", out))
    out = nncf_outputs(model_path, calib_x, x)
    if out is not None:
        rows.append(row("NNCF quantize (defaults)", out))
    return rows


def int4_rows(label, model_path, calib_path, x, y):
    """int4 weights everywhere, nearest rounding against GPTQ (edgec/quant/rounding.py), beside int8."""
    fl = calibrate.run_float(loader.load_model(model_path), x).reshape(len(x), -1)
    rows = []
    for name, opts in (("int8 (default)", {}), ("int4, nearest rounding", {"weights": "int4", "rounding": "nearest"}),
                       ("int4, GPTQ rounding (default for int4)", {"weights": "int4"})):
        _, res = api.calibrate_model(model_path, calib_path, ptq.QuantOptions(cache=False, sensitivity_samples=0,
                                                                              **opts))
        out = int8_outputs(res.graph, x)
        rows.append((label, name, 100 * float(np.mean(out.argmax(1) == y)), 100 * float(np.mean(fl.argmax(1) == y)),
                     sqnr(fl, out)))
    return rows


def int4_table(rows) -> str:
    lines = ["| model | weights | top-1 % (test set) | float top-1 % | output SQNR dB |", "|---|---|---:|---:|---:|"]
    lines += [f"| {m} | {w} | {a:.2f} | {f:.2f} | {s:.1f} |" for m, w, a, f, s in rows]
    return "\n".join(lines)


def table(rows) -> str:
    def f(v, spec):
        return "n/a" if v is None else format(v, spec)
    lines = ["| model | quantizer | top-1 % (test set) | agreement with float % | output SQNR dB | default chose |",
             "|---|---|---:|---:|---:|---|"]
    lines += [f"| {m} | {q} | {f(a, '.2f')} | {f(g, '.1f')} | {f(s, '.1f')} | {c} |" for m, q, a, g, s, c in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md", type=Path, help="replace the table between the markers in this Markdown file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        models = sets(Path(d))
        rows = [r for s in models for r in rows_of(*s)]
        rows4 = [r for s in models if s[0] in ("digits_cnn", "cancer_conv1d") or s[0].startswith("hostile: FC")
                 for r in int4_rows(*s)]
    text, text4 = table(rows), int4_table(rows4)
    print(text + "\n\n" + text4)
    if args.md:
        doc = args.md.read_text()
        for begin, end, t in ((BEGIN, END, text), (BEGIN4, END4, text4)):
            if begin not in doc:
                sys.exit(f"{args.md}: no {begin} ... {end} markers; add them where the table goes")
            doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{t}\n{end}", doc, flags=re.S)
        args.md.write_text(doc)


if __name__ == "__main__":
    main()
