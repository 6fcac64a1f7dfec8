"""The compile pipeline, stage by stage: an ONNX file and calibration data -> canonical graph
(edgec/frontend) -> quantized graph (edgec/quant) -> lowered onto the fast kernels (edgec/lower/lowering.py)
-> scheduled and planned (edgec/plan). edgec.api builds, exports and benches on top of it; the exporter
and the tools call it directly."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from edgec.lower.lowering import lower_graph
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader, tflite
from edgec.ir import Graph
from edgec.plan import planner
from edgec.plan.ram_budget import choose as choose_ram_schedule
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
                  options: ptq.QuantOptions | None = None, optimize: str = "speed"):
    """Load, canonicalize, calibrate and quantize: returns (onnx model, quantized graph, plan)."""
    model, result = calibrate_model(model_path, calib_path, options, log)
    return model, result.graph, schedule_and_plan(result.graph, optimize=optimize)


def schedule_and_plan(graph: Graph, guard: int = 0, optimize: str = "speed", choose=None,
                      ram_budget: int | None = None, board_ram: int | None = None, overhead: int = 0,
                      log: Log = quiet, mve: bool = False):
    """Lower every op onto the kernel that will run it (the fast kernels where they take it: their constants and
    scratch; optimize "speed" or "size" and a per-op variant chooser: edgec/lower/lowering.py), put the ops in the
    execution order with the smallest memory peak and plan the arena (guard > 0: with the arena guard's canaries, see
    edgec/plan/guard.py; mve: onto the Helium kernels where there is one, edgec/ops/select.py).

    RAM: with `ram_budget` (bytes for the whole firmware: arena + `overhead`), the cheapest schedule that
    fits, patch-based stages if needed (edgec/plan/ram_budget.py), or an EdgecError naming the least RAM
    reachable; without it, the fastest plan when it fits `board_ram` (else the memory-saving one)."""
    graph.ops = planner.schedule(lower_graph(graph, optimize, choose, mve))
    if guard and ram_budget is not None:
        raise EdgecError("--arena-guard and --ram-budget do not go together: the guard's canaries watch whole "
                         "layers; build the guarded debug firmware without --ram-budget")
    stages, summary = ([], {}) if guard else choose_ram_schedule(graph, ram_budget, board_ram, overhead)
    if stages:
        log(f"{graph.name}: {summary['schedule']}: arena {summary['fastest_arena_bytes']:,} -> "
            f"~{summary['arena_bytes']:,} B, ~{summary['extra_instructions_estimate']:,} more instructions "
            "per inference (estimate)")
    plan = planner.plan(graph, guard=guard, stages=stages)
    plan.ram_choice = summary
    planner.check_plan(graph, plan)
    return plan


def plan_to_fit(graph: Graph, board, guard: int = 0, optimize: str = "speed", choose=None,
                log: Log = quiet, ram_budget: int | None = None, helium: bool = True) -> tuple:
    """schedule_and_plan under the board's RAM or `ram_budget` (spread over its RAM regions), then its fit check (edgec/targets/fit.py): returns (plan, fit estimate, the
    optimize mode used). When the speed variants' widened weights do not fit but the generic kernels do, the
    build falls back to them (`--optimize size`) and says so; if neither fits, the generic build's error.
    helium False keeps a Helium board on the DSP kernels (an export may be compiled without Helium flags)."""
    from edgec.lower.lowering import has_mve
    from edgec.targets import fit        # fit imports nothing of the pipeline: no cycle

    def planned(mode):
        plan = schedule_and_plan(graph, guard, mode, choose, **fit.ram_limits(graph, board, ram_budget), log=log,
                                 mve=helium and has_mve(board))
        if not plan.stages:     # patched stages are planned for one region: their windows are not re-placed
            plan = fit.place_in_regions(graph, plan, board)
        return plan

    plan = planned(optimize)
    try:
        return plan, fit.check(graph, plan, board), optimize
    except EdgecError:
        if optimize != "speed":
            raise
    plan = planned("size")
    budget = fit.check(graph, plan, board)
    log(f"the speed variants' weights do not fit board {board.name}: built on the generic kernels "
        "(--optimize size)")
    return plan, budget, "size"

