"""Streaming wake-word bench (MLPerf Tiny sww01): a long 16 kHz WAV streamed hop by hop (512 samples) into a
`--protocol mlperf --mlperf-model sww01` firmware, as the MLCommons runner's UART streaming path does it
(stream_wav_uart.py), and through the host reference (the front end's NumPy twin, edgec/targets/audio_frontend.py,
and the INT8 model reference), bit for bit; detections scored against labelled windows as the runner scores them.

Labelled windows: the runner's sww01 truth file (sww_data_dir/*.json: a list of {"wav_file", "detection_windows":
[[start_s, stop_s], ...], ...}; the entry whose wav_file names the WAV, else the only one), or one such dict.

Detections, as the reference firmware makes them: hop k is a detection when the model's first output (int8, the
wake word's score) exceeds 115; the interface board timestamps them relative to the first hop's pulse, so hop k
is at k x 32 ms.  Scoring (streaming_ww_utils.calc_detection_stats, reproduced): a window [start, stop] is a
true positive when a detection lies in [start, stop + 2 s] (the runner adds its 1-second allowance twice),
else a false negative; the remaining detections are false positives, debounced: those within 1 s after an
earlier one are dropped.
"""
from __future__ import annotations

import json
import tempfile
import wave
from pathlib import Path

import numpy as np

from edgec.errors import EdgecError
from edgec.targets import audio_frontend as af

DELAY_S = 1.0           # the runner's false_pos_suppresion_delay_sec (applied twice, as its code does)
DEBOUNCE_S = 1.0


def read_wav(path: str | Path) -> np.ndarray:
    """A 16 kHz 16-bit WAV's samples as int16 (the first channel of a stereo file, as the runner takes it)."""
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, channels, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
            raw = w.readframes(n)
    except (OSError, wave.Error, EOFError) as exc:
        raise EdgecError(f"cannot read WAV file {path}: {exc}; give a 16 kHz, 16-bit PCM WAV") from exc
    if rate != af.RATE or width != 2:
        raise EdgecError(f"{path} is {rate} Hz, {8 * width}-bit: the sww01 front end takes 16 kHz 16-bit PCM; "
                         "convert it (e.g. sox IN -r 16000 -b 16 OUT.wav)")
    return np.frombuffer(raw, "<i2").reshape(-1, channels)[:, 0].copy()


def read_windows(path: str | Path, wav: str | Path | None = None) -> list[list[float]]:
    """The wake word's [start_s, stop_s] windows for `wav` from a runner-style truth file."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise EdgecError(f"cannot read labelled windows {path}: {exc}") from exc
    entries = data if isinstance(data, list) else [data]
    if wav is not None and len(entries) > 1:
        entries = [e for e in entries if isinstance(e, dict) and Path(str(e.get("wav_file", ""))).name
                   == Path(wav).name] or entries
    if len(entries) != 1 or not isinstance(entries[0], dict) or "detection_windows" not in entries[0]:
        raise EdgecError(f"{path}: expected one entry with detection_windows for {Path(wav).name if wav else 'the WAV'}"
                         " (the MLPerf runner's sww01 truth format: [{\"wav_file\": ..., \"detection_windows\": "
                         "[[start_s, stop_s], ...]}])")
    try:
        return [[float(a), float(b)] for a, b in entries[0]["detection_windows"]]
    except (TypeError, ValueError) as exc:
        raise EdgecError(f"{path}: detection_windows must be [start_s, stop_s] pairs ({exc})") from exc


def hops_of(samples: np.ndarray, seconds: float | None = None, partial: bool = False) -> np.ndarray:
    """The hops of the stream, at most `seconds` of audio: whole hops only, or with `partial` a last short one
    completed as the firmware completes it (the runner sends the WAV's tail as it is): its samples, then the
    previous hop's later ones still in the buffer (zeros before the first hop)."""
    samples = np.asarray(samples, np.int16)
    if seconds is not None:
        samples = samples[:int(seconds * af.RATE)]
    n, rest = divmod(len(samples), af.HOP)
    hops = samples[:n * af.HOP].reshape(n, af.HOP)
    if partial and rest:
        before = hops[-1] if n else np.zeros(af.HOP, np.int16)
        hops = np.vstack([hops, np.concatenate([samples[n * af.HOP:], before[rest:]])])
    return hops


def host_stream(graph, hops: np.ndarray) -> dict:
    """The host reference: the front end's twin and the INT8 model on the sliding feature window."""
    from edgec.quant import reference

    t_in = graph.tensors[graph.input]
    fe = af.FrontEnd(t_in.scale)
    window = np.zeros(t_in.size, np.int8)
    features, activations, state = [], [], reference.State(graph)     # a model with state: carried hop to hop
    for hop in hops:
        f = fe.hop(hop)
        window = np.concatenate([window[af.MELS:], f])
        features.append(f)
        activations.append(np.asarray(reference.run(graph, window.reshape(t_in.shape), state=state),
                                      np.int8).reshape(-1))
    return {"features": np.array(features, np.int8).reshape(-1, af.MELS),
            "activations": np.array(activations, np.int8)}


def device_stream(client, hops: np.ndarray, progress=None) -> dict:
    """The same hops through the firmware (edgec.device.mlperf.MlperfClient.stream_hop)."""
    features, activations, ticks = [], [], []
    for i, hop in enumerate(hops):
        r = client.stream_hop(hop)
        features.append(r["features"])
        activations.append(r["activations"])
        ticks.append(r["ticks"])
        if progress:
            progress(i + 1, len(hops))
    return {"features": np.array(features, np.int8).reshape(-1, af.MELS),
            "activations": np.array(activations, np.int8), "ticks": np.array(ticks, np.int64).reshape(-1, 2)}


def detection_times_ms(activations: np.ndarray, threshold: int = af.DETECT_THRESHOLD) -> list[int]:
    """What the interface board records: the first hop's pulse (0), then each detecting hop's time."""
    hop_ms = 1000 * af.HOP // af.RATE
    return [0] + [int(k) * hop_ms for k in np.nonzero(activations[:, 0].astype(int) > threshold)[0] if k > 0]


def score(times_ms: list[int], windows: list[list[float]]) -> dict:
    """True positives, false negatives and (debounced) false positives, as the runner counts them."""
    fp = np.array(times_ms[1:], np.int64) - times_ms[0]
    tp, fn = [], []
    for start, stop in windows:
        hit = np.nonzero((fp / 1000 >= start) & (fp / 1000 <= stop + 2 * DELAY_S))[0]
        (tp if len(hit) else fn).append(start)
        fp = np.delete(fp, hit)
    i = 0
    while i < len(fp):
        fp = np.delete(fp, np.nonzero((fp > fp[i]) & (fp <= fp[i] + int(DEBOUNCE_S * 1000)))[0])
        i += 1
    return {"true_positives": len(tp), "false_negatives": len(fn), "false_positives": len(fp),
            "missed_s": fn, "false_positive_s": [float(v) / 1000 for v in fp]}


def summary(result: dict, windows: list[list[float]]) -> dict:
    times = detection_times_ms(result["activations"])
    return {"hops": int(len(result["activations"])), "detections_ms": times[1:], **score(times, windows)}


def hop_budget(ticks: np.ndarray, clock_hz: float) -> dict:
    """The per-hop cost (median ticks of the front end and the model) against the hop's real time."""
    fe, model = (float(np.median(ticks[:, i])) for i in range(2))
    budget = clock_hz * af.HOP / af.RATE
    return {"front_end": fe, "model": model, "total": fe + model, "budget": budget,
            "share_of_budget": (fe + model) / budget}


def run(outdir: str | Path, wav: str | Path, windows: str | Path | None = None, port: str | None = None,
        seconds: float | None = None, device: bool = True, estimate_cycles: bool = True, log=None,
        budget_board: str = "nucleo-l4r5zi") -> dict:
    """Stream `wav` through a sww01 build on its board and through the host reference: both results (hops,
    detections, TP/FN/FP against `windows`), whether they agree bit for bit (every hop's features and
    outputs), and on an emulated Arm board the per-hop cycle estimate against the real-time budget of a hop
    (32 ms) at `budget_board`'s clock (the MLPerf Tiny reference board by default)."""
    from edgec.device.mlperf import open_mlperf
    from edgec.quant import artifact
    from edgec.settings import Settings
    from edgec.targets.boards import load_board
    from edgec.targets.build_folder import load_build
    from edgec.bench import cycles

    report, board, firmware = load_build(outdir)
    budget_board = load_board(budget_board)
    mlperf = report.get("mlperf") or {}
    if report.get("protocol") != "mlperf" or not mlperf.get("stream"):
        raise EdgecError(f"{outdir} is not a streaming wake-word firmware: build it with --protocol mlperf "
                         "--mlperf-model sww01")
    hops = hops_of(read_wav(wav), seconds)
    if len(hops) == 0:
        raise EdgecError(f"{wav} is shorter than one hop ({af.HOP} samples)")
    seconds_streamed = len(hops) * af.HOP / af.RATE
    labels = [w for w in (read_windows(windows, wav) if windows else []) if w[0] < seconds_streamed]
    graph = artifact.load_graph(Path(outdir))
    host = host_stream(graph, hops)
    out = {"wav": str(wav), "seconds": seconds_streamed, "windows": labels,
           "host": summary(host, labels)}
    if not device:
        return out
    settings = Settings.from_environment()
    with tempfile.TemporaryDirectory(prefix="edgec-stream-") as scratch:
        plugin_out = Path(scratch) / "cycles.txt"      # the cycle-estimate plugin's windows (emulated Arm boards)
        extra = cycles.qemu_args(board, firmware, plugin_out, settings, parts=False) \
            if estimate_cycles and port in (None, "auto") \
            else []
        with open_mlperf(board, firmware, port, mlperf.get("baud"), emulator_args=extra) as dut:
            dev = device_stream(dut.client, hops, progress=None if log is None else
                                (lambda i, n: log(f"  hop {i}/{n}") if i % 50 == 0 or i == n else None))
        est = cycles.read_windows(plugin_out)
    out["device"] = summary(dev, labels)
    out["bit_exact"] = bool(np.array_equal(dev["features"], host["features"]) and
                            np.array_equal(dev["activations"], host["activations"]))
    if not out["bit_exact"]:
        bad = np.nonzero((dev["features"] != host["features"]).any(1) |
                         (dev["activations"] != host["activations"]).any(1))[0]
        out["first_differing_hop"] = int(bad[0])
    out["hop_ticks"] = {"front_end": float(np.median(dev["ticks"][:, 0])), "model": float(np.median(dev["ticks"][:, 1])),
                        "tick_hz": board.tick_hz}
    if len(est) >= 2 * len(hops):      # two plugin windows a hop: the front end, then the model
        per_hop = np.array([w[:2] for w in est[:2 * len(hops)]], np.int64).reshape(-1, 2, 2)   # hop, (fe, model),
        #                                                                                      (insns, cycles)
        out["cycles_estimate"] = {**hop_budget(per_hop[:, :, 1], budget_board.clock_hz),
                                  "instructions": hop_budget(per_hop[:, :, 0], 1.0)["total"],
                                  "budget_board": budget_board.name, "method": cycles.MODEL.format(ws=cycles.WAIT_STATES)}
    return out
