"""Stage: bench.  Build folder + test data -> report: accuracy or error, agreement with the INT8 reference,
latency, memory (ELF + stack high-water mark), link statistics, and on request a per-layer profile and
the divergence finder.

    result = bench.run("build/model", "test.npz", profile=True, compare_layers=True)

Layers are the generated model's kernel calls: the graph's ops that are not views (edgec.ops.registry.ALIAS_OPS),
in order.  The divergence finder runs one sample again layer by layer on the device, reads every layer's
output tensor back and compares it with the NumPy reference (reference.run(..., keep_all=True)).
"""
from __future__ import annotations

import importlib
import importlib.util
import time
from pathlib import Path
from typing import Callable

import numpy as np

from edgec.quant import artifact
from edgec.quant import calibrate
from edgec.frontend import loader
from edgec.frontend import tflite
from edgec.quant import scheme
from edgec.quant import reference
from edgec.targets.boards import PORT_EMULATOR, PORT_PROGRAM, Board
from edgec.data import load_dataset
from edgec.errors import EdgecError
from edgec.ir import DTYPES, Graph, Op
from edgec.ops.registry import ALIAS_OPS, REGISTRY, op_macs
from edgec.progress import Progress
from edgec.targets.build_folder import check_hello, load_build

Log = Callable[[str], None]
PROFILE_SAMPLES = 5          # samples profiled layer by layer (median per layer)


def _quiet(_: str) -> None:
    pass


def layers(graph: Graph) -> list[Op]:
    """The ops the generated C runs, in the order of NAME_layer_names[]."""
    return [op for op in graph.ops if op.kind not in ALIAS_OPS]


def run(outdir: str | Path, data_path: str | Path, limit: int | None = None, port: str | None = None,
        profile: bool = False, compare_layers: bool = False, score: str | None = None,
        log: Log = _quiet) -> dict:
    """Run the test data on the device of a build folder and return the bench report (a plain dict)."""
    from edgec.device.device import open_device
    from edgec.targets.firmware import firmware_sizes

    outdir = Path(outdir)
    report, board, firmware = load_build(outdir)
    if report.get("protocol", "edgec") != "edgec":
        raise EdgecError(f"{outdir}: this firmware speaks the {report['protocol']} protocol (built with --protocol "
                         f"{report['protocol']}); drive it with that runner (edgec.device.mlperf.MlperfClient) or "
                         "rebuild without --protocol for edgec bench")
    graph = artifact.load_graph(outdir)
    score_fn = load_score(score) if score else None
    data = load_dataset(data_path, graph.input_onnx_shape, limit, float_labels=True)
    n = len(data.x)
    tin = graph.tensors[graph.input]
    xq = scheme.quantize_input(tin, data.x)
    ref_out = np.stack([reference.run(graph, xq[i]).reshape(-1) for i in range(n)])
    checked = None
    if (outdir / "model.tflite").is_file():     # a quantized .tflite: its own integer reference, and TFLite Micro's
        log(f"reference: int8 (NumPy), checked against the TFLite Micro interpreter where installed, on {n} samples")
        tflm = tflite.interpreter_outputs(outdir / "model.tflite", xq)
        checked = {"interpreter": "tflite-micro" if tflm is not None else None,
                   "reference_vs_interpreter": None if tflm is None else float(np.mean(np.all(tflm == ref_out, axis=1)))}
        float_out = scheme.dequantize(graph.tensors[graph.output], ref_out if tflm is None else tflm).reshape(n, -1)
    else:
        log(f"reference: float (onnxruntime) and int8 (NumPy) on {n} samples")
        float_out = calibrate.run_float(loader.load_model(outdir / "model.onnx"), data.x).reshape(n, -1)
    dev_out = np.zeros_like(ref_out)
    ticks = np.zeros(n, np.int64)
    stack = []
    progress = Progress(f"bench on {board.name}", n)
    result: dict = {}
    with open_device(board, firmware, port) as dev:
        link = dev.link
        hello = link.hello()
        check_hello(hello, report, outdir)
        link.layer_names = [op.name for op in layers(graph)]
        for i in range(n):
            t0 = time.monotonic()
            try:
                r = link.run_checked(xq[i].tobytes())
            except EdgecError as e:
                raise EdgecError(f"{e} (at sample {i} of {n}; nothing of this sample was recorded)") from None
            if i == 0:       # a hung device is noticed after 20x the first sample's time, not 10 minutes
                link.invoke_timeout = max(5.0, 20 * (time.monotonic() - t0))
            dev_out[i] = np.frombuffer(r["output"], np.int8)
            ticks[i] = r["ticks"]
            if r["stack"] is not None:
                stack.append(r["stack"])
            progress(i + 1)
        mismatched = np.flatnonzero(np.any(dev_out != ref_out, axis=1))
        if profile:
            result["profile"] = _profile(link, graph, board, xq[:PROFILE_SAMPLES], ticks[:PROFILE_SAMPLES], log)
        if compare_layers or len(mismatched):
            sample = int(mismatched[0]) if len(mismatched) else 0
            log(f"divergence finder: reading every layer's output for sample {sample} back from the device")
            result["divergence"] = find_divergence(link, graph, xq[sample], sample)
        # an emulated or host board's "UART" is a loopback TCP socket: no baud rate limits it
        local = board.serial_port in (PORT_EMULATOR, PORT_PROGRAM)
        link_stats = link.stats.to_json(None if local else board.serial_baud)
    flash, ram = firmware_sizes(firmware, host=firmware.suffix != ".elf")
    units = np.array([board.ticks_to_units(int(t)) for t in ticks])
    result = {
        "board": board.name, "model": report["model"], "model_hash": report["model_hash"], "samples": n,
        "data": str(Path(data_path)),
        **_quality(graph, data.y, float_out, ref_out, dev_out, data.x, score, score_fn),
        "agreement": {"device_vs_reference": float(np.mean(np.all(dev_out == ref_out, axis=1))),
                      "mismatched_samples": [int(i) for i in mismatched[:100]]},
        "latency": latency_stats(units, board),
        **({"tflite": checked} if checked else {}),
        "macs": report.get("macs"),
        "memory": {**report["memory"], "flash_bytes": flash, "ram_bytes": ram,
                   "stack_used_bytes": max(stack) if stack else None,
                   "stack_reserved_bytes": hello.get("stack_bytes") or None},
        "link": link_stats,
        **result,
    }
    macs = report.get("macs") or 0
    result["latency"]["per_mac"] = result["latency"]["median"] / macs if macs else None
    return result


# ---- quality: classification or error metrics, and a user's own score ----

def task_of(graph: Graph, labels: np.ndarray | None) -> str:
    """'classification' with integer labels (or a softmax output and no labels), else 'regression'."""
    if labels is not None:
        return "classification" if np.issubdtype(labels.dtype, np.integer) else "regression"
    last = REGISTRY[graph.ops[-1].kind] if graph.ops else None
    return "classification" if last and last.distribution and last.qparams == "fixed" else "regression"


def _quality(graph, labels, float_out, ref_out, dev_out, x, score_name, score_fn) -> dict:
    tout = graph.tensors[graph.output]
    outs = {"float": float_out, "int8_reference": scheme.dequantize(tout, ref_out).astype(np.float32),
            "device": scheme.dequantize(tout, dev_out).astype(np.float32)}
    task = task_of(graph, labels)
    q: dict = {"task": task}
    if task == "classification":
        q["accuracy"] = {k: top1(v, labels) for k, v in outs.items()}
        q["agreement_top1"] = {"int8_vs_float": float(np.mean(ref_out.argmax(1) == float_out.argmax(1))),
                               "device_vs_float": float(np.mean(dev_out.argmax(1) == float_out.argmax(1)))}
        classes = ref_out.shape[1]
        truth = labels if labels is not None else float_out.argmax(1)
        q["confusion"] = {"rows": "label" if labels is not None else "float model's top-1",
                          "columns": "device top-1", "matrix": confusion(truth, dev_out.argmax(1), classes)}
    else:
        target, against = (labels.reshape(len(labels), -1), "labels") if labels is not None else (float_out, "float model")
        if target.shape[1] != float_out.shape[1]:
            raise EdgecError(f"labels y have {target.shape[1]} values per sample but the model outputs "
                             f"{float_out.shape[1]}; give targets shaped like the output (or no y)")
        q["error"] = {"against": against,
                      **{k: {"mse": float(np.mean((v - target) ** 2)), "max_abs": float(np.max(np.abs(v - target)))}
                         for k, v in outs.items() if not (k == "float" and against == "float model")}}
    q["output_error"] = {"max_abs_vs_float": float(np.max(np.abs(outs["device"] - float_out)))}
    if score_fn is not None:
        shape = (len(x), *graph.output_onnx_shape[1:])
        q["score"] = {"name": score_name,
                      **{k: _call_score(score_name, score_fn, v.reshape(shape), labels, x) for k, v in outs.items()}}
    return q


def top1(outputs: np.ndarray, labels: np.ndarray | None) -> float | None:
    if labels is None:
        return None
    return float(np.mean(outputs.argmax(axis=1) == labels))


def confusion(truth: np.ndarray, predicted: np.ndarray, classes: int) -> list[list[int]]:
    m = np.zeros((classes, classes), np.int64)
    np.add.at(m, (np.clip(truth, 0, classes - 1), predicted), 1)
    return m.tolist()


def load_score(spec: str) -> Callable:
    """`module:function` or `path/to/file.py:function` -> the function.

    It is called as fn(outputs, labels, inputs) with float outputs shaped (N, *model output shape without
    batch), the data file's y (or None) and x, and returns a number or a dict of numbers."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise EdgecError(f"--score {spec!r}: expected module:function or path/to/file.py:function")
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise EdgecError(f"--score {spec!r}: {path} does not exist")
            loaded = importlib.util.spec_from_file_location(f"edgec_score_{path.stem}", path)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except EdgecError:
        raise
    except Exception as e:      # the user's code: any failure to import is reported on one line
        raise EdgecError(f"--score {spec!r}: cannot import {target}: {type(e).__name__}: {e}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise EdgecError(f"--score {spec!r}: {target} has no function {name}")
    return fn


def _call_score(spec: str, fn: Callable, outputs, labels, x):
    try:
        value = fn(outputs, labels, x)
    except Exception as e:
        raise EdgecError(f"--score {spec!r} failed: {type(e).__name__}: {e}") from None
    if isinstance(value, dict):
        return {str(k): float(v) for k, v in value.items()}
    try:
        return float(value)
    except (TypeError, ValueError):
        raise EdgecError(f"--score {spec!r} returned {type(value).__name__}; return a number or a dict of "
                         "numbers") from None


# ---- latency ----

def ms_basis(board: Board) -> str | None:
    """How board units become milliseconds, or None when they cannot."""
    if board.timing_unit == "ns":
        return "host wall clock"
    if not board.clock_hz:
        return None
    mhz = f"{board.clock_hz / 1e6:g} MHz"
    if board.timing_unit == "cycles":
        return f"cycles at {mhz}"
    return f"{board.timing_unit} at {mhz} if each took one cycle: an estimate"


def to_ms(units: float, board: Board) -> float | None:
    if board.timing_unit == "ns":
        return units / 1e6
    return units / board.clock_hz * 1e3 if board.clock_hz else None


def latency_stats(units: np.ndarray, board: Board) -> dict:
    stats = {"median": float(np.median(units)), "p90": float(np.percentile(units, 90)),
             "min": float(units.min()), "max": float(units.max())}
    out = {"unit": board.timing_unit, **stats, "samples": [float(u) for u in units]}
    basis = ms_basis(board)
    out["ms"] = {**{k: to_ms(v, board) for k, v in stats.items()}, "basis": basis} if basis else None
    return out


# ---- per-layer profile ----

def _profile(link, graph: Graph, board: Board, xq: np.ndarray, whole_ticks: np.ndarray, log: Log) -> dict:
    ops = layers(graph)
    if link.info["layer_count"] != len(ops):
        raise EdgecError(f"the firmware has {link.info['layer_count']} layers but the build's model has "
                         f"{len(ops)}; rebuild (edgec build)")
    log(f"profiling {len(ops)} layers on {len(xq)} sample(s)")
    per_sample = np.array([link.run_checked(x.tobytes(), profile=True)["layer_ticks"] for x in xq], np.int64)
    layer_ticks = np.median(per_sample, axis=0)
    total = float(layer_ticks.sum())
    whole = float(np.median(whole_ticks))
    rows = [{"index": i, "name": op.name, "kind": op.kind, "macs": op_macs(graph, op),
             "output_bytes": graph.tensors[op.output].nbytes, "units": board.ticks_to_units(t),
             "ms": to_ms(board.ticks_to_units(t), board), "share": float(t / total) if total else 0.0}
            for i, (op, t) in enumerate(zip(ops, layer_ticks))]
    return {"samples": len(xq), "unit": board.timing_unit, "layers": rows,
            "sum_units": board.ticks_to_units(total), "whole_units": board.ticks_to_units(whole),
            "sum_over_whole": total / whole if whole else None}


# ---- divergence finder ----

def find_divergence(link, graph: Graph, x_q: np.ndarray, sample: int) -> dict:
    """Every layer's output for one sample, device vs reference; names the first layer that differs."""
    ops = layers(graph)
    if link.info["layer_count"] != len(ops):
        raise EdgecError(f"the firmware has {link.info['layer_count']} layers but the build's model has "
                         f"{len(ops)}; rebuild (edgec build)")
    env = reference.run(graph, x_q, keep_all=True)
    rows, first = [], None
    for i, op in enumerate(ops):
        want = env[op.output].reshape(-1).astype(np.int32)
        t = graph.tensors[op.output]
        got = np.frombuffer(link.capture(x_q.tobytes(), i), DTYPES[t.dtype]).astype(np.int32)
        diff = np.abs(got - want)
        row = {"index": i, "name": op.name, "kind": op.kind, "size": int(want.size),
               "differing": int(np.count_nonzero(diff)), "max_abs_diff": int(diff.max()),
               "max_abs_diff_float": float(diff.max() * t.scale)}
        rows.append(row)
        if first is None and row["differing"]:
            first = row
    return {"sample": sample, "layers": rows, "first_divergent_layer": first}


def describe_divergence(div: dict) -> str:
    first = div["first_divergent_layer"]
    if first is None:
        return f"divergence finder: sample {div['sample']}: every layer's output matches the reference bit for bit"
    return (f"divergence finder: sample {div['sample']}: first differing layer is #{first['index']} "
            f"{first['kind']} '{first['name']}' ({first['differing']} of {first['size']} values differ, max "
            f"difference {first['max_abs_diff']} quantization steps = {first['max_abs_diff_float']:.4g}); the layers "
            "before it match bit for bit")
