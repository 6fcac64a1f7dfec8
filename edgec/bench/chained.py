"""Bench a chained build (an audio front end and a classifier as one model, edgec/chain.py) on labelled raw audio:
every clip (x: [N, samples] int16 sample values, y: labels) goes to the device as it is; the device runs the
front end over its windows and the classifier on their stacked features. Beside it, on the host, the chained
integer reference (edgec/quant/chained.py, bit-exact) and the float classifier (onnxruntime) on the same
features. The clips run in order from a reset front end, on the device (a fresh start) and in the reference,
so a stateful front end (its noise estimate) sees the same stream on both.

The profile gives the front end over the whole clip as layer 0, then the classifier's layers, and the front
end's share of the time; the memory entry splits the arena and the constants between the two.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from edgec import children
from edgec.bench import cycles
from edgec.bench.runner import (device_clock, device_ram, first_invoke_timeout, latency_stats, layers, same_rows,
                                to_ms, _quality)
from edgec.errors import EdgecError
from edgec.fixedpoint import scheme
from edgec.frontend import loader
from edgec.ops.registry import op_macs
from edgec.progress import Progress
from edgec.quant import artifact, calibrate, chained
from edgec.settings import Settings
from edgec.targets.build_folder import check_hello, load_build

Log = Callable[[str], None]
FRONTEND_DIR = "frontend"
PROFILE_SAMPLES = 3


def _quiet(_: str) -> None:
    pass


def is_chained(outdir: str | Path) -> bool:
    try:
        return "chain" in json.loads((Path(outdir) / "build-report.json").read_text())
    except (OSError, ValueError):
        return False


def load_clips(path: Path, samples: int, limit: int | None, settings: Settings):
    from edgec.data import load_dataset

    data = load_dataset(path, (1, samples), limit, memory_limit=settings.memory_limit)
    return chained.clips_int16(data.x, str(path)), data.y


def run(outdir: str | Path, data_path: str | Path, limit: int | None = None, port: str | None = None,
        profile: bool = False, log: Log = _quiet, gdb_load=None, *, settings: Settings) -> dict:
    """The bench report of a chained build folder on labelled clips (a plain dict, as edgec/bench/runner.py's)."""
    from edgec.targets.firmware import firmware_sizes

    outdir = Path(outdir)
    report, board, firmware = load_build(outdir)
    c = report["chain"]
    chain = chained.Chain(c["window"], c["hop"], c["frames"], c["features"], c["samples"], c["rescale_features"])
    frontend, net = artifact.load_graph(outdir / FRONTEND_DIR), artifact.load_graph(outdir)
    clips, labels = load_clips(Path(data_path), chain.samples, limit, settings)
    n = len(clips)
    log(f"reference: the front end (NumPy, integer) over {n} clips x {chain.frames} windows, the classifier float "
        "(onnxruntime) and int8 (NumPy)")
    t_ref = time.monotonic()
    feats, ref_out = chained.run(frontend, net, chain, clips, progress=Progress("reference", n))
    x_float = chained.float_features(frontend, feats).reshape(n, *net.input_onnx_shape[1:])
    if (outdir / "model.onnx").is_file():
        float_out = calibrate.run_float(loader.load_model(outdir / "model.onnx", settings.memory_limit),
                                        x_float).reshape(n, -1)
    else:        # a quantized .tflite classifier has no float model: its integer outputs dequantized stand in
        float_out = scheme.dequantize(net.tensors[net.output], ref_out).astype(np.float32)
    t_ref = time.monotonic() - t_ref
    dev_out, ticks, stack, prof, board, estimate, hello = _over_link(outdir, report, net, board, firmware, port,
                                                                     gdb_load, clips, ref_out, profile, log, settings)
    flash, ram = firmware_sizes(firmware, host=firmware.suffix != ".elf", prefix=board.toolchain_prefix or "")
    measured = np.array([board.ticks_to_units(int(t)) for t in ticks])
    mismatched = np.flatnonzero(~same_rows(dev_out, ref_out))
    result = {
        "board": board.name, "clock_hz": board.clock_hz, "model": report["model"], "model_hash": report["model_hash"],
        "samples": n, "data": str(Path(data_path)),
        **_quality(net, labels, float_out, ref_out, dev_out, x_float, None, None),
        "input_saturated_samples": 0,
        "agreement": {"device_vs_reference": float(np.mean(same_rows(dev_out, ref_out))),
                      "mismatched_samples": [int(i) for i in mismatched[:100]]},
        "latency": {**latency_stats(measured, board), "cycles_estimate": estimate},
        "macs": report.get("macs"),
        "memory": {**report["memory"], "flash_bytes": flash, "ram_bytes": ram,
                   **device_ram(report["memory"], max(stack) if stack else None, board),
                   "stack_reserved_bytes": hello.get("stack_bytes") or None,
                   "split": {part: {"arena_bytes": c[part]["arena_bytes"],
                                    "constants_bytes": c[part]["constants"]["total"]}
                             for part in ("frontend", "model")}},
        "chain": {k: c[k] for k in ("window", "hop", "frames", "features", "samples")},
        "reference_s": round(t_ref, 3),
        **({"profile": prof} if prof else {}),
    }
    result["latency"]["per_mac"] = None
    return result


def _over_link(outdir, report, net, board, firmware, port, gdb_load, clips, ref_out, profile, log, settings):
    from edgec.device.device import open_device

    n = len(clips)
    dev_out = np.zeros_like(ref_out)
    ticks = np.zeros(n, np.int64)
    stack, prof = [], None
    names = ["front end"] + [op.name for op in layers(net)]
    with children.temporary_folder() as scratch:
        plugin_out = Path(scratch) / "windows.txt"
        plugin = cycles.qemu_args(board, firmware, plugin_out, settings) if port in (None, "auto") else []
        with open_device(board, firmware, port, gdb_load=gdb_load, emulator_args=tuple(plugin)) as dev:
            link = dev.link
            hello = link.hello()
            check_hello(hello, report, outdir)
            board = device_clock(board, hello, log)
            link.layer_names = names
            link.invoke_timeout = first_invoke_timeout(report, link.retries) + 30.0
            progress = Progress(f"bench on {board.name}", n)
            for i in range(n):
                try:
                    r = link.run_checked(clips[i].astype("<i2").tobytes())
                except EdgecError as e:
                    raise EdgecError(f"{e} (at clip {i} of {n}; nothing of this clip was recorded)") from None
                dev_out[i] = np.frombuffer(r["output"], dev_out.dtype)
                ticks[i] = r["ticks"]
                if r["stack"] is not None:
                    stack.append(r["stack"])
                progress(i + 1)
            if profile:       # after the measured clips: the front end's state has moved on, its cost has not
                prof = _profile(link, net, board, clips[:PROFILE_SAMPLES], ticks[:PROFILE_SAMPLES], names, log)
        estimate = cycles.summary(cycles.read_windows(plugin_out), n) if plugin else None
    return dev_out, ticks, stack, prof, board, estimate, hello


def _profile(link, net, board, clips, whole_ticks, names, log) -> dict:
    if link.info["layer_count"] != len(names):
        raise EdgecError(f"the firmware has {link.info['layer_count']} layers but the chained build has "
                         f"{len(names)}; rebuild (edgec build)")
    log(f"profiling the front end and {len(names) - 1} classifier layers on {len(clips)} clip(s)")
    per = np.array([link.run_checked(c.astype("<i2").tobytes(), profile=True)["layer_ticks"] for c in clips],
                   np.int64)
    t = np.median(per, axis=0)
    total, whole = float(t.sum()), float(np.median(whole_ticks))
    ops = [None] + layers(net)
    rows = [{"index": i, "name": name, "kind": "front end" if op is None else op.kind,
             "macs": 0 if op is None else op_macs(net, op),
             "output_bytes": 0 if op is None else net.tensors[op.output].nbytes,
             "units": board.ticks_to_units(v), "ms": to_ms(board.ticks_to_units(v), board),
             "share": float(v / total) if total else 0.0}
            for i, (name, op, v) in enumerate(zip(names, ops, t))]
    return {"samples": len(clips), "unit": board.timing_unit, "layers": rows,
            "sum_units": board.ticks_to_units(total), "whole_units": board.ticks_to_units(whole),
            "sum_over_whole": total / whole if whole else None,
            "frontend_units": board.ticks_to_units(float(t[0])), "model_units": board.ticks_to_units(float(t[1:].sum())),
            "frontend_share": float(t[0] / total) if total else None}
