"""`edgec mlperf`: the MLCommons Tiny runner's flow (benchmark/runner: main.py, script.py) run from edgec
against a `--protocol mlperf` build, with results in the runner's results.txt format.

  accuracy     every file of DATASET/<model>/y_labels.csv (the runner's layout: file, classes, class,
               bytes_to_send, stride), `infer 1 0` each; AD: every segment of bytes_to_send at stride,
               the file's score = the mean of its segments' scores; Top-1 % and AUC as the runner computes them
  performance  5 windows (the first 5 files, AD: their first segment), each `infer N W` with N chosen so
               one window lasts at least `window_seconds` of the board's time (the rules ask 10 s); median
               throughput.
Written to RESULTS/<model>/<mode>/results.txt (the lines the runner prints to its results.txt) and
results.json (every reply).
"""
from __future__ import annotations

import csv
import json
import math
import os
import re
from datetime import datetime
from pathlib import Path

import numpy as np

from edgec import outputs
from edgec.device.mlperf import open_mlperf
from edgec.staging import staged_folder
from edgec.errors import EdgecError
from edgec.targets.build_folder import load_build

WINDOWS = 5                # the runner's `loop 5` (fewer is its "ERROR 1")
MIN_WINDOW_SECONDS = 10.0  # a performance window must last this long on the board


def read_truth(folder: Path) -> list[dict]:
    truth = folder / "y_labels.csv"
    if not truth.is_file():
        raise EdgecError(f"{truth} does not exist: a dataset folder holds <model>/y_labels.csv (file, classes, "
                         "class, bytes_to_send, stride) and the files it names, as the MLPerf Tiny runner reads them")
    with truth.open() as f:
        rows = list(csv.DictReader(f, fieldnames=["file", "classes", "class", "bytes_to_send", "stride"]))
    for row in rows:
        if not (folder / row["file"]).is_file():
            raise EdgecError(f"{truth} names {row['file']}, which is not in {folder}")
    return rows


def segments(data: bytes, row: dict, model: str) -> list[bytes]:
    """The runner's _ScriptDownloadStep: AD files are cut into overlapping segments, others sent whole."""
    if model != "ad01":
        return [data]
    size, stride = int(row["bytes_to_send"]), int(row["stride"])
    return [data[s:s + size] for s in range(0, len(data) - size + 1, stride)]


def iterations_for(per_inference_us: float, window_seconds: float) -> int:
    """Timed iterations so that one window lasts at least window_seconds (10 % margin)."""
    return max(1, math.ceil(window_seconds * 1.1e6 / max(per_inference_us, 1e-3)))


def auc_ovr(y_true: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC (sklearn's roc_auc_score: binary on column 1 for 2 columns, else one-vs-rest macro mean)."""
    def binary(pos, s):
        p, n = s[pos], s[~pos]
        if len(p) == 0 or len(n) == 0:
            return float("nan")
        ranks = np.argsort(np.argsort(np.concatenate([p, n]), kind="mergesort"), kind="mergesort") + 1.0
        both = np.concatenate([p, n])
        for v in np.unique(both):          # average ranks of ties
            tie = both == v
            ranks[tie] = ranks[tie].mean()
        return float((ranks[:len(p)].sum() - len(p) * (len(p) + 1) / 2) / (len(p) * len(n)))
    if scores.shape[1] == 1:
        return binary(y_true == 1, scores[:, 0])
    if scores.shape[1] == 2:
        return binary(y_true == 1, scores[:, 1])
    return float(np.nanmean([binary(y_true == c, scores[:, c]) for c in range(scores.shape[1])]))


def accuracy_percent(y_pred: np.ndarray, labels: np.ndarray) -> float:
    """The runner's calculate_accuracy (AD: the best (precision + recall) / 2 over 100 thresholds)."""
    if y_pred.shape[1] == 1:
        lo, hi = np.amin(y_pred), np.amax(y_pred)
        best = 0.0
        for threshold in lo + np.arange(0.0, 1.0, .01) * (hi - lo):
            y = (y_pred[:, 0] > threshold).astype(int)
            tp, fp = np.sum(y[labels == 1] == 1), np.sum(y[labels == 0] == 1)
            fn = np.sum(y[labels == 1] == 0)
            best = max(best, 100 * (tp / (tp + fp + 1e-8) + tp / (tp + fn + 1e-8)) / 2)
        return float(best)
    return float(100 * np.sum(np.argmax(y_pred, axis=1) == labels) / len(y_pred))


def _stamp() -> str:
    return datetime.now().strftime("%m%d.%H%M%S ")


def _accuracy(client, folder: Path, rows: list[dict], model: str, limit: int | None) -> tuple[dict, list[str]]:
    files = []
    for row in rows[:limit]:
        data = (folder / row["file"]).read_bytes()
        outs = []
        for seg in segments(data, row, model):
            client.load(seg)
            outs.append(client.infer(1, 0)["results"])
        res = np.mean(outs, axis=0) if model == "ad01" else np.asarray(outs[0]) / max(sum(outs[0]), 1e-12)
        files.append({"file": row["file"], "class": int(row["class"]), "segments": len(outs),
                      "results": [float(v) for v in np.atleast_1d(res)], "raw_results": outs})
    y_pred = np.array([f["results"] for f in files])
    labels = np.array([f["class"] for f in files])
    acc, auc = accuracy_percent(y_pred, labels), auc_ovr(labels, y_pred)
    lines = [f"{_stamp()}ulp-mlperf: Top 1% = {acc:2.1f}", f"{_stamp()}ulp-mlperf: AUC = {auc:.3f}"]
    return {"files": files, "top1_percent": acc, "auc": auc}, lines


def _performance(client, folder: Path, rows: list[dict], model: str, window_seconds: float,
                 warmups: int) -> tuple[dict, list[str]]:
    first = segments((folder / rows[0]["file"]).read_bytes(), rows[0], model)[0]
    client.load(first)
    probe = client.infer(1, 0)
    if "elapsed_us" not in probe:
        raise EdgecError("the device sent no m-lap-us timestamps: is it an energy-mode firmware? (performance "
                         "needs --mlperf-mode performance)")
    n = iterations_for(probe["elapsed_us"], window_seconds)
    windows, lines = [], []
    for w in range(WINDOWS):
        row = rows[w % len(rows)]
        client.load(segments((folder / row["file"]).read_bytes(), row, model)[0])
        r = client.infer(n, warmups, timeout=60 + 20 * window_seconds)
        seconds = r["elapsed_us"] / 1e6
        throughput = n / seconds if seconds > 0 else 0.0
        windows.append({"file": row["file"], "iterations": n, "warmups": warmups, "elapsed_us": r["elapsed_us"],
                        "throughput": throughput, "results": r["results"]})
        lines += [f"Performance results for window {w + 1}", f"    # Inferences : {n}",
                  f"    Runtime: {seconds} sec.", f"    Throughput: {throughput} inf./sec."]
        if seconds > MIN_WINDOW_SECONDS:
            lines.append("    Runtime requirements have been met.")
    median = float(np.median([w["throughput"] for w in windows]))
    lines += [f"{_stamp()}ulp-mlperf: ---------------------------------------------------------",
              f"{_stamp()}ulp-mlperf: Median throughput is {median:>10.3f} inf./sec.",
              f"{_stamp()}ulp-mlperf: ---------------------------------------------------------"]
    return {"windows": windows, "iterations": n, "probe_us": probe["elapsed_us"],
            "median_throughput": median}, lines


def check_results(out: Path, model: str, mode: str) -> Path:
    """OUT/<model>/<mode>, the folder edgec writes results.txt and results.json into: its parents real folders
    (not links, not files), itself new or one edgec wrote (edgec/outputs.py: never the official runner's)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", model) or model in (".", ".."):
        raise EdgecError(f"the build's MLPerf model name {model!r} is not a plain name; build it again")
    outputs.check_names(out / model / mode, "mlperf results folder", outputs.STAGING_EXTRA)
    for parent in (out, out / model):
        if parent.is_symlink() or (os.path.lexists(parent) and not parent.is_dir()):
            raise EdgecError(f"mlperf results folder {parent} is a file or a link, not a folder; give another "
                             "folder with --results")
    return outputs.check_output_folder(out / model / mode, what="mlperf results folder")


def run(outdir: str | Path, dataset: str | Path, mode: str = "accuracy", results_dir: str | Path | None = None,
        port: str | None = None, window_seconds: float = MIN_WINDOW_SECONDS, warmups: int = 10,
        limit: int | None = None, log=print) -> dict:
    """Run the runner's accuracy or performance flow on the build in outdir; write results.txt/.json."""
    report, board, firmware = load_build(outdir)
    settings = report.get("mlperf")
    if report.get("protocol") != "mlperf" or not settings:
        raise EdgecError(f"{outdir} is not an MLPerf build: build it with --protocol mlperf --mlperf-model "
                         "kws01|vww01|ic01|ad01")
    if mode not in ("accuracy", "performance"):
        raise EdgecError(f"mode '{mode}' is not known: choose accuracy or performance (energy needs the EEMBC "
                         "energy monitor and its runner)")
    model = settings["model"]
    out = Path(results_dir) if results_dir else Path(outdir) / "mlperf-results"
    folder_out = check_results(out, model, mode)        # before the run, not after it
    folder = Path(dataset) / model
    rows = read_truth(folder)
    if not rows:
        raise EdgecError(f"{folder / 'y_labels.csv'} lists no files")
    with open_mlperf(board, firmware, port, settings["baud"]) as dut:
        c = dut.client
        info = {"name": c.name(), **c.profile()}
        if info.get("model") != model:
            raise EdgecError(f"the device runs MLPerf model {info.get('model')!r}, the build says {model!r}: "
                             "flash this build first")
        if mode == "accuracy":
            result, lines = _accuracy(c, folder, rows, model, limit)
        else:
            result, lines = _performance(c, folder, rows, model, window_seconds, warmups)
    result.update(mode=mode, model=model, board=board.name, device=info, emulated=board.emulated)
    outputs.make_folder(folder_out.parent, "mlperf results folder")
    with staged_folder(folder_out, "mlperf-results", what="mlperf results folder") as work:
        (work / "results.txt").write_text("\n".join(lines) + "\n")
        (work / "results.json").write_text(json.dumps(result, indent=1))
    for line in lines:
        log(line)
    result["results_file"] = str(folder_out / "results.txt")
    return result
