"""The compile pipeline, stage by stage: each stage a function from one value to the next, none changing a value
an earlier stage still holds (edgec/ir.py's Graph, Op and Tensor are immutable):

    load           .onnx path                                  -> checked onnx.ModelProto   (edgec/frontend/loader.py)
    canonicalize   ModelProto, name                            -> canonical Graph           (edgec/frontend/canonicalize.py)
    quantize       ModelProto, canonical Graph, Samples, QuantOptions -> QuantResult (.graph quantized) (edgec/quant/ptq.py)
    lower          quantized Graph, optimize, chooser, core    -> lowered Graph             (edgec/lower/lowering.py)
    plan           lowered Graph, RAM limits                   -> (scheduled Graph, Plan)   (edgec/plan/)
    C sources      scheduled Graph, Plan, folder, name         -> model library files       (edgec/codegen/cmodel.py)
    project        board, model library                        -> PlatformIO project        (edgec/targets/firmware.py)
    firmware       project, board, Settings                    -> Firmware                  (edgec/targets/firmware.py)
    report         all of the above                            -> build-report.json         (edgec/api.py)

A quantized .tflite model enters at quantize (edgec/frontend/tflite.py reads the quantized graph); a float one
at load, as its float ONNX translation (edgec/frontend/tflite_float.py). The calibration file
is opened once (`calibrated`: edgec/data.py's Samples) and the environment read once by the caller
(edgec/settings.py). edgec.api builds, exports and benches on top of this; the exporter and the tools call it
directly."""
from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

import onnx

from edgec import ports
from edgec.lower import weight_staging
from edgec.lower.lowering import lower_graph
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader, qdq, tflite, tflite_float
from edgec.ir import Graph
from edgec.limits import DEFAULT as DEFAULT_MEMORY_LIMIT
from edgec.plan import planner
from edgec.plan.ram_budget import choose_lean as choose_ram_schedule
from edgec.plan.scratch_fit import fit_scratch
from edgec.progress import Progress
from edgec.quant import ptq
from edgec.settings import Settings
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


# ---- the stages -----------------------------------------------------------------------------------

def load(model_path: str | Path, memory_limit: int = DEFAULT_MEMORY_LIMIT,
         calib_path: str | Path | None = None) -> onnx.ModelProto:
    """load: an .onnx file -> its checked, shape-inferred model (batch 1; a dynamic input axis, e.g. time, sized
    as the calibration file's samples)."""
    return loader.load_model(model_path, memory_limit, calib_path)


def canonical(model: onnx.ModelProto, name: str, input_layout: str | None = None) -> Graph:
    """canonicalize: ModelProto -> the canonical float Graph (input_layout: see canonicalize.canonicalize)."""
    return canonicalize.canonicalize(model, name, input_layout)


def quantize(model: onnx.ModelProto, graph: Graph, samples, options: ptq.QuantOptions, log: Log = quiet,
             cache_dir: Path | None = None) -> ptq.QuantResult:
    """quantize: canonical Graph + calibration Samples + options -> QuantResult (a new, quantized graph)."""
    return ptq.quantize_model(model, graph, samples, options, log=log, progress=Progress("calibrate", 1),
                              cache_dir=cache_dir)


def lower(graph: Graph, optimize: str = "speed", choose=None, mve: bool = False, dsp: bool = False) -> Graph:
    """lower: quantized Graph -> a new Graph whose ops carry the kernel each runs on (`op.lowering`: its params,
    packed constants and scratch; edgec/lower/lowering.py, edgec/ops/select.py; mve, dsp: the core has Helium, the
    Arm DSP extension); `graph` is not changed."""
    return lower_graph(graph, optimize, choose, mve, dsp)


def schedule_and_plan(graph: Graph, guard: int = 0, optimize: str = "speed", choose=None,
                      ram_budget: int | None = None, board_ram: int | None = None, overhead: int = 0,
                      log: Log = quiet, mve: bool = False, dsp: bool = False, staging=None
                      ) -> tuple[Graph, planner.Plan]:
    """lower + plan: the quantized graph lowered onto the kernels that will run each op (the fast kernels where they
    take it: their constants and scratch; optimize "speed" or "size" and a per-op variant chooser:
    edgec/lower/lowering.py), its ops put in the execution order with the smallest memory peak, and the arena
    planned (guard > 0: with the arena guard's canaries, see edgec/plan/guard.py; mve: onto the Helium kernels where
    there is one, dsp: the variants that need the Arm DSP extension too, edgec/ops/select.py). Returns (the
    scheduled graph, its plan); `graph` is not changed.

    RAM: with `ram_budget` (bytes for the whole firmware: arena + `overhead`), the cheapest schedule that
    fits, patch-based stages if needed (edgec/plan/ram_budget.py), or an EdgecError naming the least RAM
    reachable; without it, the fastest plan when it fits `board_ram` (else the memory-saving one). staging (a
    part's flash timing, edgec/lower/weight_staging.py): the layers that re-read their weights get them copied into
    their scratch first, where the plan then still fits `board_ram` (never with a budget, patched stages or the
    guard)."""
    graph = lower(graph, optimize, choose, mve, dsp)
    graph = graph.replace_ops(planner.schedule(graph))
    # no scratch above the tensors' peak (plan/scratch_fit.py) where that plan fits the RAM it has; where it does not,
    # the budget's search (patched stages, plan/ram_budget.py) starts from the whole-row kernels, as it always did
    banded, fitted = fit_scratch(graph, switch=optimize == "speed")
    limit = ram_budget if ram_budget is not None else board_ram
    if fitted and (guard or limit is None or planner.plan(banded, exact=False).arena_bytes + overhead <= limit):
        graph = banded
    else:
        fitted = []
    for f in fitted:
        log(f"{graph.name}: op {f['op']} ({f['name']}) on {f['variant']}"
            f"{' in column bands of ' + str(f['band_w']) if 'band_w' in f else ''}: scratch "
            f"{f['fastest_scratch_bytes']:,} -> {f['scratch_bytes']:,} B (room under the peak "
            f"{f['room_bytes']:,} B)")
    if guard and ram_budget is not None:
        raise EdgecError("--arena-guard and --ram-budget do not go together: the guard's canaries watch whole "
                         "layers; build the guarded debug firmware without --ram-budget")
    if not guard:       # a budget may move an op with a large scratch onto a leaner variant (ram_budget.py)
        graph, stages, summary = choose_ram_schedule(graph, ram_budget, board_ram, overhead)
    else:
        stages, summary = [], {}
    if stages:
        log(f"{graph.name}: {summary['schedule']}: arena {summary['fastest_arena_bytes']:,} -> "
            f"~{summary['arena_bytes']:,} B, ~{summary['extra_instructions_estimate']:,} more instructions "
            "per inference (estimate)")
    for moved in summary.get("lean_scratch_ops", ()):
        log(f"{graph.name}: op {moved['op']} ({moved['name']}) on the {moved['variant']} kernel variant"
            f"{' in column bands of ' + str(moved['band_w']) if 'band_w' in moved else ''} for the budget "
            f"({moved['scratch_bytes']:,} B of scratch)")
    if staging is not None and ram_budget is None and not guard and not stages:
        graph = _staged(graph, staging, board_ram, overhead, log)
    plan = planner.plan(graph, guard=guard, stages=stages)
    plan.ram_choice = {**summary, "scratch_within_peak": fitted} if fitted else summary
    planner.check_plan(graph, plan)
    return graph, plan


def _staged(graph: Graph, staging, board_ram: int | None, overhead: int, log: Log) -> Graph:
    """The graph with its reused weights staged in RAM (edgec/lower/weight_staging.py), as many layers as the plan
    still fits board_ram with (the largest copies given up first)."""
    staged = weight_staging.stage(graph, staging)
    while weight_staging.staged_bytes(staged)["layers"] and board_ram is not None \
            and planner.plan(staged, exact=False).arena_bytes + overhead > board_ram:
        staged = weight_staging.unstage_largest(staged, graph)
    got = weight_staging.staged_bytes(staged)
    if got["layers"]:
        log(f"{graph.name}: {got['layers']} layers' weights staged from flash into their scratch "
            f"({got['bytes']:,} B copied per inference, at most {got['largest_bytes']:,} B at once)")
    return staged


def _io_in(graph: Graph, plan: planner.Plan, io_buffers: str) -> planner.Plan:
    """The plan with the inputs and outputs where io_buffers says: in the arena, or in the caller's buffers (the
    fit check keeps counting them as arena bytes: they are RAM of the firmware either way)."""
    from edgec.plan import caller_io
    if io_buffers not in caller_io.MODES:
        raise EdgecError(f"--io-buffers {io_buffers}: use one of {', '.join(caller_io.MODES)}")
    return caller_io.replan(graph, plan) if io_buffers == "caller" else plan


def plan_to_fit(graph: Graph, board, guard: int = 0, optimize: str = "speed", choose=None,
                log: Log = quiet, ram_budget: int | None = None, helium: bool = True, io_buffers: str = "arena",
                staging="board") -> tuple:
    """schedule_and_plan under the board's RAM or `ram_budget` (spread over its RAM regions), then its fit
    check (edgec/targets/fit.py): returns (scheduled graph, plan, fit estimate, the optimize mode used). When
    the speed variants' widened weights do not fit but the generic kernels do, the build falls back to them
    (`--optimize size`: the quantized graph lowered again) and says so; if neither fits, the generic build's
    error. helium False keeps a Helium board on the DSP kernels (an export may be compiled without Helium
    flags). io_buffers "caller": the inputs and outputs in the caller's buffers, out of the arena
    (edgec/plan/caller_io.py). staging: "board" (the board's own flash timing: edgec/lower/weight_staging.py), a
    Staging, or None (no weights staged in RAM)."""
    from edgec.lower.lowering import has_arm_dsp, has_mve
    from edgec.targets import fit        # fit imports nothing of the pipeline: no cycle

    if staging == "board":
        staging = weight_staging.for_board(board)

    def planned(mode):
        lowered, plan = schedule_and_plan(graph, guard, mode, choose, **fit.ram_limits(graph, board, ram_budget),
                                          log=log, mve=helium and has_mve(board), dsp=has_arm_dsp(board),
                                          staging=staging)
        if not plan.stages:     # patched stages are planned for one region: their windows are not re-placed
            plan = fit.place_in_regions(lowered, plan, board)
        return lowered, plan

    lowered, plan = planned(optimize)
    try:
        budget = fit.check(lowered, plan, board)
    except EdgecError:
        if optimize != "speed":
            raise
    else:
        return lowered, _io_in(lowered, plan, io_buffers), budget, optimize
    lowered, plan = planned("size")
    budget = fit.check(lowered, plan, board)
    plan = _io_in(lowered, plan, io_buffers)
    log(f"the speed variants' weights do not fit board {board.name}: built on the generic kernels "
        "(--optimize size)")
    return lowered, plan, budget, "size"


# the int16 choices QuantOptions leaves to the calibration set (None): option -> QuantResult's note of it, the
# words the note starts with ("transformer rows int16: ..."), the flags' word (--int16-attention / --int8-attention)
INT16_CHOICES = {"attention_int16": ("attention", "transformer rows"), "tail_int16": ("tail", "output tail"),
                 "recurrent_int16": ("recurrence", "recurrence")}


def chosen_int16(quant: ptq.QuantResult) -> list[str]:
    """The options of INT16_CHOICES the calibration set chose int16 for in `quant` (its notes say so)."""
    return [f for f, (note, words) in INT16_CHOICES.items() if getattr(quant, note).startswith(f"{words} int16")]


def fit_or_int8(quant: ptq.QuantResult, options: ptq.QuantOptions | None, plan: Callable, again: Callable,
                log: Log = quiet) -> tuple:
    """(QuantResult, plan(its graph)): `quant` when it fits (plan raises no EdgecError, e.g. plan_to_fit's RAM
    check against the board or --ram-budget); when it does not and the calibration set chose int16 transformer
    rows, tail or recurrence (up to twice their activations' bytes), the model quantized again with those int8
    (again(options) -> QuantResult) and planned, and one line says so; if that does not fit either, its error. A
    choice the options forced (--int16-attention...) is kept: its error names the flag that keeps it int8. A flash
    error is raised as it is (int16 rows take no more flash than int8's: docs/quantization.md, h47-xfmr)."""
    try:
        return quant, plan(quant.graph)
    except EdgecError as exc:
        if " of flash " in str(exc):        # (fit.check's flash error: int8 rows would not shrink the flash)
            raise
        options = options or ptq.QuantOptions()
        auto = chosen_int16(quant)
        if not auto:
            forced = [INT16_CHOICES[f][0] for f in INT16_CHOICES if getattr(options, f) is True]
            if forced:
                raise EdgecError(f"{exc} (int16 as asked by {', '.join('--int16-' + w for w in forced)}: "
                                 f"{', '.join('--int8-' + w for w in forced)} halves those activations)") from exc
            raise
        int8 = again(replace(options, **{f: False for f in auto}))
        planned = plan(int8.graph)
        line = (f"{' and '.join(INT16_CHOICES[f][1] for f in auto)} int8, not int16 as the calibration set chose: "
                f"the int16 model does not fit ({exc})")
        log(line)
        for f in auto:
            setattr(int8, INT16_CHOICES[f][0], line)
        return int8, planned


# ---- the front half chained -------------------------------------------------------------------------

@contextlib.contextmanager
def calibrated(model_path: str | Path, calib_path: str | Path | None, options: ptq.QuantOptions | None = None,
               log: Log = quiet, settings: Settings | None = None) -> Iterator[tuple]:
    """load -> canonicalize -> quantize, the calibration file opened once: yields (onnx model, QuantResult,
    the calibration Samples, open until the block ends). A fully quantized .tflite model is imported with its
    own quantization instead (edgec/frontend/tflite.py): (None, result, None), no calibration data needed.
    settings: the environment's (read here when not given)."""
    settings = settings or Settings.from_environment()
    model_path = Path(model_path)
    if tflite_float.quantized_tflite(model_path):
        if calib_path is not None:
            log(f"{model_path.name} is quantized already: its own quantization is used, --calib is not read")
        graph = tflite.load(model_path, model_name(model_path))
        wide = any(graph.tensors[op.output].dtype == "int16" and op.arrays.get("weights") is not None for op in graph.ops)
        log(f"{model_path.name}: TFLite {'16x8' if wide else 'INT8'} model, {len(graph.ops)} ops with the file's "
            "quantization")
        yield None, ptq.QuantResult(graph=graph, method="tflite", ranges={}), None
        return
    if calib_path is None and tflite_float.float_tflite(model_path):
        raise EdgecError(f"{model_path}: a float .tflite (float32, float16 or dynamic-range weights) needs a "
                         "calibration set: give --calib FILE.npz with x (N, *input shape); edgec quantizes it to INT8")
    model = load(model_path, settings.memory_limit, calib_path)
    if calib_path is None and qdq.info(model)["activations"]:
        raise EdgecError(f"{model_path}: a QDQ model needs calibration data too: its own scales are used where it "
                         "has them, and edgec calibrates the tensors it leaves float and checks the build on the "
                         "samples: give --calib FILE.npz with x (N, *input shape) (only a quantized .tflite builds "
                         "without)")
    if calib_path is None:
        raise EdgecError(f"{model_path}: a float model needs calibration data: give --calib FILE.npz with x "
                         "(N, *input shape) (only a quantized .tflite model builds without)")
    graph = canonical(model, model_name(model_path), (options or ptq.QuantOptions()).input_layout)
    options = ptq.check_options(graph, options or ptq.QuantOptions())    # a typo fails before the data is read
    with ports.open_calibration(calib_path, graph, settings.memory_limit) as samples:
        yield model, quantize(model, graph, samples, options, log, settings.calib_cache), samples


def calibrate_model(model_path: str | Path, calib_path: str | Path | None, options: ptq.QuantOptions | None = None,
                    log: Log = quiet, settings: Settings | None = None) -> tuple:
    """Load, canonicalize, calibrate and quantize: returns (onnx model, ptq.QuantResult); (None, result) for a
    quantized .tflite model (see `calibrated`)."""
    with calibrated(model_path, calib_path, options, log, settings) as (model, result, _):
        return model, result


def compile_model(model_path: str | Path, calib_path: str | Path, log: Log = quiet,
                  options: ptq.QuantOptions | None = None, optimize: str = "speed", settings: Settings | None = None):
    """Load, canonicalize, calibrate, quantize, lower and plan: returns (onnx model, the scheduled graph, plan)."""
    model, result = calibrate_model(model_path, calib_path, options, log, settings)
    return (model, *schedule_and_plan(result.graph, optimize=optimize))
