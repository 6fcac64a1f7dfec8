"""Stage: bench.  Build folder + test data -> report: accuracy or error, agreement with the INT8 reference,
latency, memory (ELF + stack high-water mark), link statistics, and on request a per-layer profile and
the divergence finder.

    result = bench.run("build/model", "test.npz", profile=True, compare_layers=True)

Layers are the generated model's kernel calls: the graph's ops that are not views (edgec.ops.registry.ALIAS_OPS),
in order.  The divergence finder runs one sample again layer by layer on the device, reads every layer's
output tensor back and compares it with the NumPy reference (reference.run(..., keep_all=True)).
"""
from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from edgec import children, ports
from edgec.bench import cycles, detections
from edgec.bench.score import call_score, load_score
from edgec.bench.timing import device_clock, latency_stats, ms_basis, to_ms  # noqa: F401  (the bench's API)
from edgec.quant import artifact
from edgec.quant import calibrate
from edgec.frontend import loader
from edgec.frontend import tflite_interpreter
from edgec.fixedpoint import scheme
from edgec.quant import reference
from edgec.targets.boards import PORT_EMULATOR, PORT_PROGRAM, Board
from edgec.errors import EdgecError
from edgec.ir import DTYPES, Graph, Op
from edgec.ops.registry import ALIAS_OPS, REGISTRY, keeps_state, op_macs
from edgec.ops import detection, float_tail, nms
from edgec.ops.convert import KIND as CONVERT
from edgec.ops.reduce import index_classes
from edgec.progress import Progress
from edgec.settings import Settings
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
        log: Log = _quiet, gdb_load=None, dataset_in_flash: bool = False, units: int = 1,
        max_chunk: int | None = None, *, settings: Settings, reset_state: bool = False) -> dict:
    """Run the test data on the device of a build folder and return the bench report (a plain dict).
    gdb_load: load the firmware through an emulator's GDB stub (edgec/device/device.py open_serial).
    dataset_in_flash: the inputs go into firmware images, max_chunk (default: as many as fit) per image, run on
    `units` devices in parallel (edgec/bench/dataset_flash.py) while the references are computed.
    settings: the application's (edgec/settings.py): the memory limit, the cycle plugin's cache and compiler,
    the dataset firmware's PlatformIO core. A model with state runs the samples as one stream, its state carried
    (TFLite Micro's semantics), or reset before each with reset_state."""
    from edgec.targets.firmware import firmware_sizes

    outdir = Path(outdir)
    report, board, firmware = load_build(outdir)
    if report.get("protocol", "edgec") != "edgec":
        raise EdgecError(f"{outdir}: this firmware speaks the {report['protocol']} protocol (built with --protocol "
                         f"{report['protocol']}); drive it with that runner (edgec.device.mlperf.MlperfClient) or "
                         "rebuild without --protocol for edgec bench")
    graph = artifact.load_graph(outdir)
    boxes_d = detection.output_detections(graph)       # max_detections of a detection model's output, or None
    selection = nms.output_selection(graph)            # an ONNX detector's NonMaxSuppression, or None
    if selection is not None:
        boxes_d = nms.max_selected(selection.params)
    floats = [t for t in graph.outputs if graph.tensors[t].dtype == "float32" and not float_tail.computes(graph, t)]
    if floats and boxes_d is None:      # NMS's selected indices without its boxes, or detections beside others
        raise EdgecError(f"{outdir}: output '{graph.port_names.get(floats[0], floats[0])}' is float32 (detections or "
                         "NonMaxSuppression's selected boxes); edgec bench reads float outputs as a "
                         "TFLite_Detection_PostProcess model's one output, or as a NonMaxSuppression's selection "
                         "beside its boxes and scores (both model outputs): read it with the generated C or "
                         "edgec's Python reference")
    if boxes_d is not None and (score or dataset_in_flash):
        raise EdgecError(f"{'--score' if score else '--dataset-in-flash'}: a detection model is benched over the link "
                         "with its own metrics (mAP, box agreement); run it without this option")
    score_fn = load_score(score) if score else None
    data = ports.load_data(data_path, graph, limit, float_labels=True, memory_limit=settings.memory_limit)
    truth = None if boxes_d is None else detections.load_truth(data_path, len(data.x), settings.memory_limit)
    for view, labels in _labelled_outputs(graph, data):    # before any work: a bad label would bend the numbers
        check_labels(view, labels, data_path)
    n = len(data.x)
    ports.check_whole(graph, data.x, data_path)
    xq = ports.quantize_inputs(graph, data.x)     # several inputs: packed (ports.sample_bytes lays them out)
    clipped = int(ports.saturated(graph, data.x).sum())
    if clipped:     # the device and the reference both see the clipped values: agreement does not cover them
        where = "; ".join(f"input {p.name} takes {ports.input_range(graph, p)}: {int(c.sum())} samples beyond"
                          for p, c in zip(ports.inputs(graph), ports.saturated_by_input(graph, data.x).values())
                          if c.any())
        log(f"warning: {clipped} of {n} test inputs hold values beyond the input range the model was calibrated "
            f"for and are clipped on the device ({where}); agreement and accuracy do not cover what those values "
            "would give: --data holds real values, x = (x_q - zero point) * scale of integers; calibrate with data "
            "that spans the test data")
    pool = job = cancel = None
    if dataset_in_flash:
        if profile or compare_layers or keeps_state(graph):
            raise EdgecError("--profile, --compare-layers and a model with state (carried from sample to sample) need "
                             "the bench firmware's link: run them without --dataset-in-flash")
        from concurrent.futures import ThreadPoolExecutor
        from edgec.bench import dataset_flash
        pool, cancel = ThreadPoolExecutor(1), threading.Event()
        job = pool.submit(dataset_flash.run, outdir, board, report, ports.sample_rows(graph, xq), units,
                          [port] * units if port else None, max_chunk, log, settings=settings, cancel=cancel)
    try:      # the dataset job runs beside this: an interrupt stops it, its chunks and their processes
        t_ref = time.monotonic()
        ref_values = ref_out = reference.run_sequence(graph, xq, reset_each=reset_state)   # (stateless: each alone)
        if ports.mixed_outputs(graph):      # int8 and int32 or float32 outputs: compared as the bytes the link sends
            ref_out = ports.output_bytes(graph, ref_out)
        checked = None
        if (outdir / "model.tflite").is_file():     # a quantized .tflite: its own integer reference, and TFLite Micro's
            log(f"reference: int8 (NumPy), checked against the TFLite Micro interpreter where installed, on {n} samples")
            tflm = tflite_interpreter.interpreter_outputs(outdir / "model.tflite", xq, reset_state)
            if tflm is not None and boxes_d is not None:   # rows past the count: undefined in TFLM's fast NMS
                tflm = detection.defined(tflm, boxes_d)
            checked = {"interpreter": "tflite-micro" if tflm is not None else None,
                       "reference_vs_interpreter": None if tflm is None else float(np.mean(same_rows(tflm, ref_values)))}
            float_out = ports.dequantize_outputs(graph, ref_values if tflm is None else tflm).reshape(n, -1)   # each its own
            if boxes_d is not None:        # the float model of a .tflite detector: TFLite Micro's boxes
                float_out = tflm
        elif selection is not None:       # the selection has as many rows as it selected: read as it comes
            log(f"reference: float (onnxruntime) and int8 (NumPy) on {n} samples")
            float_out = detections.nms_float(graph, selection, calibrate.run_float_each(
                loader.load_model(outdir / "model.onnx", settings.memory_limit), data.x))
        else:
            log(f"reference: float (onnxruntime) and int8 (NumPy) on {n} samples")
            float_out = calibrate.run_float(loader.load_model(outdir / "model.onnx", settings.memory_limit),
                                            data.x).reshape(n, -1)
        t_ref = time.monotonic() - t_ref
    except BaseException:
        _stop(pool, cancel)
        raise
    stack = []
    progress = Progress(f"bench on {board.name}", n)
    result: dict = {}
    if job is not None:
        try:
            ran = children.result(job)     # (an interrupt is taken while the chunks run)
        except BaseException:
            _stop(pool, cancel)
            raise
        finally:
            pool.shutdown()
        # the images' output bytes, read as the reference's values (an int16 or uint8 output in its own type)
        dev_out = np.ascontiguousarray(ran["outputs"]).view(ref_out.dtype).reshape(ref_out.shape)
        ticks, hello, estimate = ran["ticks"], {}, None
        mismatched = np.flatnonzero(~same_rows(dev_out, ref_out, float_tail.device_ulps(graph)))
        link_stats = {"mode": "dataset-in-flash", "firmware": ran["firmware"], "chunk_samples": ran["chunk_samples"], "chunks": ran["chunks"],
                      "units": ran["units"], "wall_s": round(ran["wall_s"], 3), "reference_s": round(t_ref, 3),
                      "input_bytes_in_images": int(n * len(ports.sample_bytes(graph, xq[0]))),
                      **ran["phases"].to_json()}
    else:
        dev_out, ticks, stack, hello, mismatched, link_stats, board, estimate = _run_over_link(
            outdir, report, graph, board, firmware, port, gdb_load, xq, ref_out, profile, compare_layers, result,
            progress, log, settings, reset_state and keeps_state(graph))
    flash, ram = firmware_sizes(firmware, host=firmware.suffix != ".elf", prefix=board.toolchain_prefix or "")
    measured = np.array([board.ticks_to_units(int(t)) for t in ticks])
    result = {
        "board": board.name, "clock_hz": board.clock_hz, "model": report["model"], "model_hash": report["model_hash"], "samples": n,
        "data": str(Path(data_path)),
        **(detections.quality(boxes_d, truth, *_detections(graph, selection, boxes_d, float_out, ref_out, dev_out),
                              "TFLite Micro" if checked else "onnxruntime",
                              None if graph.more_inputs else data.x.reshape(n, *graph.input_onnx_shape[1:]))
           if boxes_d is not None else
           _quality_per_output(graph, data, float_out, ref_values, _values(graph, dev_out), score, score_fn)
           if ports.multi(graph) else
           _quality(graph, data.y, float_out, ref_out, dev_out, data.x, score, score_fn)),
        "input_saturated_samples": clipped,
        "agreement": {"device_vs_reference": float(np.mean(same_rows(dev_out, ref_out, float_tail.device_ulps(graph)))),
                      "mismatched_samples": [int(i) for i in mismatched[:100]]},
        "latency": {**latency_stats(measured, board), "cycles_estimate": estimate},
        **({"tflite": checked} if checked else {}),
        "macs": report.get("macs"),
        "memory": {**report["memory"], "flash_bytes": flash, "ram_bytes": ram,
                   **device_ram(report["memory"], max(stack) if stack else None, board),
                   "stack_reserved_bytes": hello.get("stack_bytes") or None},
        "link": link_stats,
        **result,
    }
    macs = report.get("macs") or 0
    median = result["latency"]["median"]
    result["latency"]["per_mac"] = median / macs if macs and median is not None else None
    return result


def _detections(graph: Graph, selection: Op | None, d: int, float_out, ref_out, dev_out) -> tuple:
    """The float model's (None without one), the reference's and the device's detections of every sample."""
    if selection is not None:        # float_out: already the float model's detections
        return float_out, detections.nms_bytes(graph, selection, ref_out), detections.nms_bytes(graph, selection,
                                                                                                dev_out)
    return (None if float_out is None else detections.of_outputs(float_out, d), detections.of_outputs(ref_out, d),
            detections.of_outputs(dev_out, d))


def _values(graph: Graph, out: np.ndarray) -> np.ndarray:
    """The device's packed outputs (N, total) as values: outputs of different number types (int8 beside int32)
    come as the link's bytes (ports.output_bytes), read back each in its type."""
    if not ports.mixed_outputs(graph):
        return out
    parts = ports.output_parts(graph, out)
    return np.concatenate([parts[t].reshape(len(out), -1).astype(np.int64) for t in graph.outputs], axis=1)


def same_rows(a: np.ndarray, b: np.ndarray, ulps: int = 0) -> np.ndarray:
    """Whether each sample's outputs are identical bit for bit (float32 detections too: -0.0 is not 0.0), float32
    ones within `ulps` units in the last place (a float tail's exp and log: the device's C library's)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.dtype == np.float32 and b.dtype == np.float32:
        return np.all(np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64)) <= ulps, axis=1)
    return np.all(a == b, axis=1)


def _stop(pool, cancel) -> None:
    """An interrupt while dataset-in-flash chunks run: no chunk starts, the running ones' processes (emulators,
    flashing tools) are killed, and the job ends before the interrupt goes on."""
    if pool is None:
        return
    cancel.set()
    children.kill_all()
    pool.shutdown(wait=True)


def first_invoke_timeout(report: dict, retries: int) -> float:
    """Seconds one try of the first inference may take: from the model's size (a very slow emulator runs a
    MAC in 20 instructions at 1 MIPS), so that a device that never answers fails within ten minutes over all
    tries, not after an hour; later samples wait 20x the first one's time."""
    macs = report.get("macs") if isinstance(report.get("macs"), (int, float)) else 0
    return float(min(max(10.0, 2e-5 * macs + 10.0), 600.0 / (retries + 1)))


def _run_over_link(outdir, report, graph, board, firmware, port, gdb_load, xq, ref_out, profile, compare_layers,
                   result, progress, log, settings, reset=False):
    """Every input over the serial link, one at a time (with the profile and divergence finder on request)."""
    with children.temporary_folder() as scratch:     # removed on every exit path, a SIGKILL of edgec too
        return _link_session(outdir, report, graph, board, firmware, port, gdb_load, xq, ref_out, profile,
                             compare_layers, result, progress, log, settings, Path(scratch), reset)


def _link_session(outdir, report, graph, board, firmware, port, gdb_load, xq, ref_out, profile, compare_layers,
                  result, progress, log, settings, scratch: Path, reset: bool = False):
    from edgec.device.device import open_device

    n = len(xq)
    dev_out = np.zeros_like(ref_out)
    ticks = np.zeros(n, np.int64)
    stack = []
    plugin_out = scratch / "windows.txt"     # the cycle-estimate plugin's timed windows (edgec/bench/cycles.py)
    plugin = cycles.qemu_args(board, firmware, plugin_out, settings, parts=n <= cycles.PARTS_MAX_SAMPLES) \
        if port in (None, "auto") else []
    with open_device(board, firmware, port, gdb_load=gdb_load, emulator_args=tuple(plugin)) as dev:
        link = dev.link
        hello = link.hello()
        check_hello(hello, report, outdir)
        board = device_clock(board, hello, log)
        link.layer_names = [op.name for op in layers(graph)]
        link.invoke_timeout = first_invoke_timeout(report, link.retries)
        for i in range(n):
            t0 = time.monotonic()
            try:
                if reset:       # --reset-state: each sample from the model's initial state
                    link.reset()
                r = link.run_checked(ports.sample_bytes(graph, xq[i]))
            except EdgecError as e:
                raise EdgecError(f"{e} (at sample {i} of {n}; nothing of this sample was recorded)") from None
            if i == 0:       # a hung device is noticed after 20x the first sample's time, not 10 minutes
                link.invoke_timeout = max(5.0, 20 * (time.monotonic() - t0))
            dev_out[i] = np.frombuffer(r["output"], dev_out.dtype)      # int8, or float32 detections
            ticks[i] = r["ticks"]
            if r["stack"] is not None:
                stack.append(r["stack"])
            progress(i + 1)
        mismatched = np.flatnonzero(~same_rows(dev_out, ref_out, float_tail.device_ulps(graph)))
        if profile:
            result["profile"] = _profile(link, graph, board, xq[:PROFILE_SAMPLES], ticks[:PROFILE_SAMPLES], log)
        if compare_layers or len(mismatched):
            sample = int(mismatched[0]) if len(mismatched) else 0
            log(f"divergence finder: reading every layer's output for sample {sample} back from the device")
            result["divergence"] = find_divergence(link, graph, xq[sample], sample)
        # an emulated or host board's "UART" is a loopback TCP socket: no baud rate limits it
        local = board.serial_port in (PORT_EMULATOR, PORT_PROGRAM)
        link_stats = link.stats.to_json(None if local else board.serial_baud)
    estimate = cycles.summary(cycles.read_windows(plugin_out), n, board) if plugin else None
    return dev_out, ticks, stack, hello, mismatched, link_stats, board, estimate


def device_ram(build_memory: dict, stack_used: int | None, board) -> dict:
    """The RAM the user pays on the device: the firmware's static RAM (.data + .bss + arena pieces, from the
    ELF) plus the stack high-water mark the device measured (painted at boot, reported over the link);
    total_ram_bytes is None, with the reason, on boards that do not measure the stack."""
    static = build_memory.get("static_ram_bytes")
    out = {"static_ram_bytes": static, "stack_used_bytes": stack_used,
           "total_ram_bytes": static + stack_used if static is not None and stack_used is not None else None}
    if stack_used is None:
        out["stack_used_note"] = (f"board {board.name} does not measure its stack high-water mark (only edgec's "
                                  "emulated boards paint the stack); the build's estimate is stack_estimate_bytes")
    elif static is None:
        out["stack_used_note"] = "no static RAM figure for this firmware (a host program): no total"
    return out


# ---- quality: classification or error metrics, and a user's own score ----

def task_of(graph: Graph, labels: np.ndarray | None) -> str:
    """'classification' with integer labels (or a softmax output and no labels), else 'regression'."""
    if labels is not None:
        return "classification" if np.issubdtype(labels.dtype, np.integer) else "regression"
    ops = list(graph.ops)
    while len(ops) > 1 and ops[-1].kind == CONVERT:   # an int16 <-> int8 conversion after it (a Softmax computed
        ops.pop()                                      # int16, rounded to its int8 grid: int16.mark) keeps its kind
    last = REGISTRY[ops[-1].kind] if ops else None
    distribution = last and last.distribution and last.qparams == "fixed"
    return "classification" if distribution or index_classes(graph) else "regression"


def class_count(graph: Graph) -> tuple[int, bool]:
    """(number of classes, whether the output is the class index itself rather than one score per class)."""
    index = index_classes(graph)
    width = int(np.prod(graph.output_onnx_shape[1:], dtype=np.int64))
    return (index, True) if index is not None and width == 1 else (width, False)


def check_labels(graph: Graph, labels, data_path) -> None:
    """Integer labels must be class numbers of this model: 0 <= y < classes."""
    if labels is None or not np.issubdtype(labels.dtype, np.integer) or task_of(graph, labels) != "classification":
        return
    classes, _ = class_count(graph)
    bad = np.flatnonzero((labels < 0) | (labels >= classes))
    if bad.size:
        raise EdgecError(f"{data_path}: label y[{bad[0]}] = {labels[bad[0]]} is not a class of this model "
                         f"(0..{classes - 1}; {bad.size} labels out of range); fix the labels")


def predictions(graph: Graph, outputs: np.ndarray) -> np.ndarray:
    """The predicted class of every sample: the index output itself, or the top-1 of the scores."""
    classes, is_index = class_count(graph)
    if is_index:
        return np.clip(np.rint(outputs[:, 0]).astype(np.int64), 0, classes - 1)
    return outputs.argmax(axis=1)


def _quality(graph, labels, float_out, ref_out, dev_out, x, score_name, score_fn) -> dict:
    tout = graph.tensors[graph.output]
    outs = {"float": float_out, "int8_reference": scheme.dequantize(tout, ref_out).astype(np.float32),
            "device": scheme.dequantize(tout, dev_out).astype(np.float32)}
    task = task_of(graph, labels)
    q: dict = {"task": task}
    if task == "classification":
        check_labels(graph, labels, "labels")
        classes, _ = class_count(graph)
        pred = {k: predictions(graph, v) for k, v in outs.items()}
        q["accuracy"] = {k: None if labels is None else float(np.mean(p == labels)) for k, p in pred.items()}
        q["agreement_top1"] = {"int8_vs_float": float(np.mean(pred["int8_reference"] == pred["float"])),
                               "device_vs_float": float(np.mean(pred["device"] == pred["float"]))}
        truth = labels if labels is not None else pred["float"]
        q["confusion"] = {"rows": "label" if labels is not None else "float model's top-1",
                          "columns": "device top-1", "matrix": confusion(truth, pred["device"], classes)}
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
                      **{k: call_score(score_name, score_fn, v.reshape(shape), labels, x) for k, v in outs.items()}}
    return q


def _labelled_outputs(graph: Graph, data) -> list[tuple[Graph, np.ndarray | None]]:
    """(the graph as if it had only that output, its labels or None) of every output."""
    if not ports.multi(graph):
        return [(graph, data.y)]
    return [(ports.output_view(graph, p), (data.ys or {}).get(p.name)) for p in ports.outputs(graph)]


def _quality_per_output(graph: Graph, data, float_out, ref_out, dev_out, score_name=None, score_fn=None) -> dict:
    """Each output of a model with several on its own: quality (accuracy or error, with its labels y_<name>
    where the data file has them) and bit-exactness; --score's function called with every output and input by
    name: fn({output name: floats (N, *shape)}, {output name: y_<name>} or None, {input name: (N, *shape)})."""
    per = {}
    for p, (view, labels) in zip(ports.outputs(graph), _labelled_outputs(graph, data)):
        part = slice(p.start, p.start + p.size)
        ref, dev = ref_out[:, part], dev_out[:, part]
        per[p.name] = {**_quality(view, labels, float_out[:, part], ref, dev, data.x, None, None),
                       "agreement": {"device_vs_reference": float(np.mean(np.all(dev == ref, axis=1))),
                                     "mismatched_samples": [int(i) for i in np.flatnonzero(np.any(dev != ref, axis=1))[:100]]}}
    q = {"task": "multi-output", "outputs": per}
    if score_fn is not None:
        outs = {"float": float_out, "int8_reference": ports.dequantize_outputs(graph, ref_out),
                "device": ports.dequantize_outputs(graph, dev_out)}
        x = {p.name: p.of(data.x) for p in ports.inputs(graph)}
        q["score"] = {"name": score_name, **{k: call_score(score_name, score_fn,
                                                           {p.name: p.of(v) for p in ports.outputs(graph)},
                                                           data.ys or None, x) for k, v in outs.items()}}
    return q


def confusion(truth: np.ndarray, predicted: np.ndarray, classes: int) -> list[list[int]]:
    m = np.zeros((classes, classes), np.int64)
    np.add.at(m, (truth, predicted), 1)       # labels checked to be classes (check_labels)
    return m.tolist()


# ---- latency ----

# ---- per-layer profile ----

def _profile(link, graph: Graph, board: Board, xq: np.ndarray, whole_ticks: np.ndarray, log: Log) -> dict:
    ops = layers(graph)
    if link.info["layer_count"] != len(ops):
        raise EdgecError(f"the firmware has {link.info['layer_count']} layers but the build's model has "
                         f"{len(ops)}; rebuild (edgec build)")
    log(f"profiling {len(ops)} layers on {len(xq)} sample(s)")
    per_sample = np.array([link.run_checked(ports.sample_bytes(graph, x), profile=True)["layer_ticks"]
                           for x in xq], np.int64)
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
        got = np.frombuffer(link.capture(ports.sample_bytes(graph, x_q), i),
                            DTYPES[t.dtype]).astype(np.int32)
        if got.size == 0 and want.size:     # inside a patch-based stage: never whole on the device
            rows.append({"index": i, "name": op.name, "kind": op.kind, "size": int(want.size), "differing": 0,
                         "max_abs_diff": 0, "max_abs_diff_float": 0.0,
                         "note": "computed in row bands (patch-based stage): not kept whole, not compared"})
            continue
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
