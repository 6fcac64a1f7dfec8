"""edgec's Python API: the pipeline stages chained. The CLI is a thin shell over this.

    from edgec import api
    report = api.build("model.onnx", "calib.npz", "qemu-cortex-m4", "build/model")
    result = api.bench("build/model", "test.npz")
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__, artifact, calibrate, canonicalize, codegen, float_reference, loader, planner, quantize, reference
from .boards import Board, load_board
from .data import load_dataset
from .errors import EdgecError
from .ir import Graph
from .progress import Progress

Log = Callable[[str], None]
REPORT = "build-report.json"


def _quiet(_: str) -> None:
    pass


def model_name(model_path: Path) -> str:
    """The C name of a model: its file name, or its folder's when the file is just 'model.onnx'."""
    stem = model_path.stem
    if stem.lower() in ("model", "net", "network") and model_path.resolve().parent.name:
        stem = model_path.resolve().parent.name
    return codegen.c_identifier(stem)


def compile_model(model_path: str | Path, calib_path: str | Path, log: Log = _quiet):
    """Load, canonicalize, calibrate and quantize: returns (onnx model, quantized graph, plan)."""
    model_path = Path(model_path)
    model = loader.load_model(model_path)
    graph = canonicalize.canonicalize(model, model_name(model_path))
    calib = load_dataset(calib_path, graph.input_onnx_shape)
    log(f"calibrating on {len(calib.x)} samples")
    sources = [t.source for t in graph.tensors.values() if not t.source.startswith(float_reference.SYNTHETIC)]
    ranges = calibrate.calibrate(model, calib.x, sources, progress=Progress("calibrate", len(calib.x)))
    own = {t.source for t in graph.tensors.values()} - set(ranges)
    if own:   # tensors edgec made up (decomposed operators): ranges from its float interpreter
        ranges.update(float_reference.ranges(graph, calib.x, own))
    quantize.quantize(graph, ranges)
    plan = planner.plan(graph)
    planner.check_plan(graph, plan)
    return model, graph, plan


def build(model_path: str | Path, calib_path: str | Path, board: str, outdir: str | Path | None = None,
          log: Log = _quiet, firmware: bool = True) -> dict:
    """Model + calibration data -> build folder with model library, project, firmware and report."""
    from . import firmware as fw

    model_path = Path(model_path)
    the_board = load_board(board)
    outdir = Path(outdir) if outdir else Path("build") / f"{model_name(model_path)}-{the_board.name}"
    model, graph, plan = compile_model(model_path, calib_path, log)
    name = graph.name
    log(f"{name}: {len(graph.ops)} ops, {graph.macs():,} MACs, arena {plan.arena_bytes:,} bytes, "
        f"weights {graph.weights_bytes():,} bytes")
    outdir.parent.mkdir(parents=True, exist_ok=True)
    # Build in a scratch folder next to OUTDIR and move it in place only when everything worked:
    # a failed build leaves nothing half-written behind.
    work = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    try:
        lib = work / "model"
        codegen.generate(graph, plan, lib, name)
        artifact.save_graph(graph, work)
        shutil.copyfile(model_path, work / "model.onnx")
        (work / "plan.json").write_text(json.dumps(plan.to_json(), indent=1))
        report = {
            "edgec_version": __version__, "board": the_board.name, "board_file": str(the_board.path),
            "model": name, "model_file": str(model_path.resolve()), "model_hash": artifact.graph_hash(graph),
            "macs": graph.macs(), "ops": len(graph.ops),
            "input": _io_info(graph, graph.input, graph.input_onnx_shape),
            "output": _io_info(graph, graph.output, graph.output_onnx_shape),
            "memory": {"arena_bytes": plan.arena_bytes, "weights_bytes": graph.weights_bytes(),
                       "flash_bytes": None, "ram_bytes": None},
            "firmware": None,
        }
        if firmware:
            log(f"building firmware for {the_board.name} with PlatformIO")
            project = fw.write_project(work / "project", the_board, lib, name)
            result = fw.build_firmware(project, the_board, log=log)
            report["memory"]["flash_bytes"] = result.flash_bytes
            report["memory"]["ram_bytes"] = result.ram_bytes
            report["firmware"] = str(Path(result.elf).resolve().relative_to(work.resolve()))
        (work / REPORT).write_text(json.dumps(report, indent=1))
        if outdir.exists():
            shutil.rmtree(outdir)
        work.rename(outdir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return report


def _io_info(graph: Graph, tensor: str, shape) -> dict:
    t = graph.tensors[tensor]
    return {"shape": list(shape), "scale": t.scale, "zero_point": t.zero_point, "bytes": t.size}


def load_build(outdir: str | Path) -> tuple[dict, Board, Path]:
    """The report, board and firmware of a build folder (checked)."""
    outdir = Path(outdir)
    report_path = outdir / REPORT
    if not report_path.is_file():
        raise EdgecError(f"{outdir}: not an edgec build folder (no {REPORT}); run `edgec build` first")
    try:
        report = json.loads(report_path.read_text())
        board_ref = report["board"]
    except (ValueError, KeyError):
        raise EdgecError(f"{report_path}: damaged build report; run `edgec build` again") from None
    board_file = report.get("board_file")
    board = load_board(board_file if board_file and Path(board_file).is_file() else board_ref)
    if not report.get("firmware"):
        raise EdgecError(f"{outdir}: this build has no firmware (built without one); run `edgec build` again")
    firmware = outdir / report["firmware"]
    if not firmware.exists():
        raise EdgecError(f"{outdir}: firmware {firmware.name} is missing; run `edgec build` again")
    return report, board, firmware


def flash(outdir: str | Path, port: str | None = None, log: Log = _quiet) -> dict:
    """Start (flash) the board with the build's firmware and check it answers with the right model."""
    from .device import open_device

    report, board, firmware = load_build(outdir)
    with open_device(board, firmware, port) as dev:
        hello = dev.link.hello()
        _check_hello(hello, report, outdir)
    log(f"{board.name}: firmware answers as model {hello.get('model')} ({hello.get('model_hash')})")
    return hello


def _check_hello(hello: dict, report: dict, outdir) -> None:
    if hello.get("model_hash") != report["model_hash"]:
        raise EdgecError(f"the device runs model {hello.get('model')} ({hello.get('model_hash')}) but {outdir} holds "
                         f"{report['model']} ({report['model_hash']}); flash this build first")


def bench(outdir: str | Path, data_path: str | Path, limit: int | None = None, port: str | None = None,
          log: Log = _quiet) -> dict:
    """Run the test data on the device; report accuracy, agreement with the reference and latency."""
    from .device import open_device

    outdir = Path(outdir)
    report, board, firmware = load_build(outdir)
    graph = artifact.load_graph(outdir)
    data = load_dataset(data_path, graph.input_onnx_shape, limit)
    n = len(data.x)
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq = quantize.quantize_input(tin, data.x)
    log(f"reference: float (onnxruntime) and int8 (NumPy) on {n} samples")
    float_out = calibrate.run_float(loader.load_model(outdir / "model.onnx"), data.x).reshape(n, -1)
    ref_out = np.stack([reference.run(graph, xq[i]).reshape(-1) for i in range(n)])
    dev_out = np.zeros_like(ref_out)
    ticks = np.zeros(n, np.int64)
    progress = Progress(f"bench on {board.name}", n)
    with open_device(board, firmware, port) as dev:
        hello = dev.link.hello()
        _check_hello(hello, report, outdir)
        for i in range(n):
            out, t = dev.link.run(xq[i].tobytes())
            dev_out[i] = np.frombuffer(out, np.int8)
            ticks[i] = t
            progress(i + 1)
    units = np.array([board.ticks_to_units(int(t)) for t in ticks])
    result = {
        "board": board.name, "model": report["model"], "model_hash": report["model_hash"], "samples": n,
        "data": str(Path(data_path)),
        "accuracy": {"float": _top1(float_out, data.y), "int8_reference": _top1(ref_out, data.y),
                     "device": _top1(dev_out, data.y)},
        "agreement": {"device_vs_reference": float(np.mean(np.all(dev_out == ref_out, axis=1))),
                      "int8_vs_float_top1": float(np.mean(ref_out.argmax(1) == float_out.argmax(1)))},
        "output_error": {"max_abs_vs_float": float(np.max(np.abs(quantize.dequantize(tout, dev_out) - float_out)))},
        "latency": {"unit": board.timing_unit, "median": float(np.median(units)), "min": float(units.min()),
                    "max": float(units.max()), "p90": float(np.percentile(units, 90))},
        "macs": report.get("macs"),
        "memory": report["memory"],
    }
    macs = report.get("macs") or 0
    result["latency"]["per_mac"] = result["latency"]["median"] / macs if macs else None
    if board.clock_hz and board.timing_unit == "cycles":
        result["latency"]["ms_at_clock"] = result["latency"]["median"] / board.clock_hz * 1e3
    return result


def _top1(outputs: np.ndarray, labels: np.ndarray | None) -> float | None:
    if labels is None:
        return None
    return float(np.mean(outputs.argmax(axis=1) == labels))


def inspect_model(model_path: str | Path) -> dict:
    """Ops, shapes, parameters, MACs and support status of every node, without building anything."""
    model_path = Path(model_path)
    model = loader.load_model(model_path)
    shapes = {vi.name: loader.static_shape(vi) for vi in
              list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    inits = {i.name: i for i in model.graph.initializer}
    unsupported = set(canonicalize.unsupported_nodes(model))
    nodes = []
    for i, node in enumerate(model.graph.node):
        label = f"{node.op_type} ({node.name or f'node #{i}'})"
        params = sum(int(np.prod(inits[x].dims)) for x in node.input if x in inits)
        nodes.append({"name": node.name or f"node #{i}", "op": node.op_type,
                      "inputs": [list(shapes.get(x) or []) for x in node.input if x and x not in inits],
                      "outputs": [list(shapes.get(x) or []) for x in node.output],
                      "params": params, "supported": label not in unsupported})
    info = {"model": str(model_path), "opset": next((o.version for o in model.opset_import
                                                    if o.domain in ("", "ai.onnx")), None),
            "input": {"name": loader.graph_inputs(model)[0].name,
                      "shape": list(shapes.get(loader.graph_inputs(model)[0].name) or [])},
            "output": {"name": model.graph.output[0].name, "shape": list(shapes.get(model.graph.output[0].name) or [])},
            "parameters": int(sum(np.prod(i.dims) for i in model.graph.initializer)),
            "nodes": nodes, "unsupported": canonicalize.unsupported_nodes(model)}
    if not unsupported:
        try:
            graph = canonicalize.canonicalize(model, model_name(model_path))
            info["macs"] = graph.macs()
            info["canonical_ops"] = len(graph.ops)
            for t in graph.tensors.values():
                t.scale, t.zero_point = 1.0, 0
            info["arena_bytes_estimate"] = planner.plan(graph).arena_bytes
        except EdgecError as exc:
            info["limits"] = [str(exc)]
    return info
