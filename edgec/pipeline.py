"""The compile pipeline, stage by stage: an ONNX file and calibration data -> canonical graph
(edgec/frontend) -> quantized graph (edgec/quant) -> lowered onto the fast kernels (edgec/codegen/lowering.py)
-> scheduled and planned (edgec/plan). edgec.api builds, exports and benches on top of it; the exporter
and the tools call it directly."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from edgec.codegen.lowering import lower_graph
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader, tflite
from edgec.ir import Graph
from edgec.plan import planner
from edgec.progress import Progress
from edgec.quant import ptq
from edgec.templating import model_c_name

Log = Callable[[str], None]


def quiet(_: str) -> None:
    pass


def model_name(model_path: Path) -> str:
    """The C name of a model: its file name, or its folder's when the file is just 'model.onnx' (.tflite)."""
    stem = model_path.stem
    if stem.lower() in ("model", "net", "network") and model_path.resolve().parent.name:
        stem = model_path.resolve().parent.name
    return model_c_name(stem)


def calibrate_model(model_path: str | Path, calib_path: str | Path | None, options: ptq.QuantOptions | None = None,
                    log: Log = quiet) -> tuple:
    """Load, canonicalize, calibrate and quantize: returns (onnx model, ptq.QuantResult). A fully quantized
    .tflite model is imported with its own quantization instead (edgec/frontend/tflite.py): (None, result),
    no calibration data needed."""
    model_path = Path(model_path)
    if tflite.is_tflite(model_path):
        if calib_path is not None:
            log(f"{model_path.name} is quantized already: its own quantization is used, --calib is not read")
        graph = tflite.load(model_path, model_name(model_path))
        log(f"{model_path.name}: TFLite INT8 model, {len(graph.ops)} ops with the file's quantization")
        return None, ptq.QuantResult(graph=graph, method="tflite", ranges={})
    model = loader.load_model(model_path)
    if calib_path is None:
        raise EdgecError(f"{model_path}: a float model needs calibration data: give --calib FILE.npz with x "
                         "(N, *input shape) (only a quantized .tflite model builds without)")
    graph = canonicalize.canonicalize(model, model_name(model_path))
    result = ptq.quantize_model(model, graph, calib_path, options or ptq.QuantOptions(), log=log,
                                progress=Progress("calibrate", 1))
    return model, result


def compile_model(model_path: str | Path, calib_path: str | Path, log: Log = quiet,
                  options: ptq.QuantOptions | None = None):
    """Load, canonicalize, calibrate and quantize: returns (onnx model, quantized graph, plan)."""
    model, result = calibrate_model(model_path, calib_path, options, log)
    return model, result.graph, schedule_and_plan(result.graph)


def schedule_and_plan(graph: Graph, guard: int = 0, mve: bool = False):
    """Lower the ops onto the fast kernels where they can run there (their constants and scratch), put the
    ops in the execution order with the smallest memory peak and plan the arena (guard > 0: with the arena
    guard's canaries, see edgec/plan/guard.py; mve: onto the Helium kernels, edgec/codegen/mve.py)."""
    lower_graph(graph, mve)
    graph.ops = planner.schedule(graph)
    plan = planner.plan(graph, guard=guard)
    planner.check_plan(graph, plan)
    return plan
