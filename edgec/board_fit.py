"""Does a model fit a board, with the plan a build would choose: `edgec inspect MODEL --board B`.

The same steps as `edgec build` up to its fit check (edgec/api.build): calibrate and quantize, the tuning log's
kernel choices, lower, schedule, plan the arena (spread over the board's RAM regions) and the fit check's
estimate (edgec/targets/fit.py), without generating C or building firmware. The arena is the build's, byte for
byte, with or without `--ram-budget` (the same budgeted schedule, patch-based stages included); flash is the
model's constants (exact) plus the code-size model of the fit check. The stack is an estimate, and says so
(`stack_method`): edgec measures a stack only from a built firmware (gcc's -fstack-usage files along the deepest
call chain, edgec/targets/fit.py measure; `edgec build` reports it as stack_estimate_bytes), which inspect does
not build. Without a budget it is what the board's linker script reserves (the fit check's figure); with one, the
stack the budgeted planner counts beside the arena (fit.BUDGET_STACK_BYTES).

A float model without calibration data is quantized on a few seeded random samples: the arena and the constants
depend on the tensors' types and shapes, not on the ranges, unless the quantization options choose 16-bit
layers from the data (then give --calib).
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from pathlib import Path

import numpy as np

from edgec import ports
from edgec.errors import EdgecError
from edgec.frontend import loader, tflite_float
from edgec.lower import lowering, tuning_records
from edgec.ops import select
from edgec.pipeline import Log, calibrate_model, fit_or_int8, model_name, plan_to_fit, quiet, schedule_and_plan
from edgec.plan import planner
from edgec.quant import ptq
from edgec.settings import Settings
from edgec.targets import fit
from edgec.targets.boards import Board, load_board

RANDOM_SAMPLES = 8


def build_chooser(board: Board, optimize: str, tuning_log: str | Path | None, settings: Settings,
                  tuned: dict | None = None, weights_in_ram: bool = False):
    """The per-layer kernel chooser a build uses: the tuning log's records for this board (speed builds only);
    on a part whose constants sit in flash with wait states, the cost model's choice with the flash reads
    weighed where the log has no record (edgec/ops/select.py memory_chooser; not with weights_in_ram: the
    weights are then read from zero-wait-state RAM)."""
    if optimize != "speed":
        return None
    log_path = Path(tuning_log) if tuning_log else settings.tuning_log
    chooser = tuning_records.chooser(board.name, tuning_records.load(log_path), {} if tuned is None else tuned)
    per_byte = 0 if weights_in_ram else lowering.flash_byte_cycles(board)
    return select.memory_chooser(per_byte, lowering.has_arm_dsp(board), chooser) if per_byte else chooser


@contextlib.contextmanager
def random_calibration(model_path: Path, settings: Settings):
    """A temporary .npz of RANDOM_SAMPLES seeded standard-normal samples shaped as the model's inputs."""
    model = loader.load_model(model_path, settings.memory_limit)
    rng = np.random.default_rng(0)
    ins = loader.graph_inputs(model)
    arrays = {}
    for v in ins:
        shape = loader.static_shape(v)
        if shape is None or any(d is None or d <= 0 for d in shape):
            raise EdgecError(f"{model_path}: input {v.name} has no static shape; give --calib FILE.npz")
        key = "x" if len(ins) == 1 else f"x_{v.name}"
        arrays[key] = rng.standard_normal((RANDOM_SAMPLES, *shape[1:])).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="edgec-inspect-") as tmp:
        path = Path(tmp) / "random.npz"
        np.savez(path, **arrays)
        yield path


def _scratch_bytes(plan: planner.Plan) -> int:
    """The largest kernel scratch buffer (they live one op each; the arena holds them with the activations)."""
    return max((b.size for b in plan.buffers if b.scratch_op is not None), default=0)


def inspect_board(model_path: str | Path, board: str, calib_path: str | Path | None = None,
                  optimize: str = "speed", options: ptq.QuantOptions | None = None,
                  tuning_log: str | Path | None = None, log: Log = quiet, settings: Settings | None = None,
                  ram_budget: int | None = None) -> dict:
    """Arena, scratch, flash and stack of the plan `edgec build` would choose for this board (with `ram_budget`:
    the plan of `edgec build --ram-budget`), and whether the model fits (`fits`, else `problem`: the build's own
    error line)."""
    settings = settings or Settings.from_environment()
    model_path = Path(model_path)
    the_board = load_board(board)
    quantized_on = "the model's own quantization" if tflite_float.quantized_tflite(model_path) else str(calib_path)
    with contextlib.ExitStack() as stack:
        if calib_path is None and not tflite_float.quantized_tflite(model_path):
            calib_path = stack.enter_context(random_calibration(model_path, settings))
            quantized_on = f"{RANDOM_SAMPLES} random samples (no --calib)"
            options = dataclasses.replace(options or ptq.QuantOptions(), cache=False)   # nothing worth caching
        _, quant = calibrate_model(model_path, calib_path, options, log, settings)
        choose = build_chooser(the_board, optimize, tuning_log, settings)
        problem = None
        try:        # (int8 where the calibration set chose int16 rows that do not fit, as build: fit_or_int8)
            quant, (graph, plan, est, mode) = fit_or_int8(
                quant, options, lambda g: plan_to_fit(g, the_board, 0, optimize, choose, log, ram_budget),
                lambda o: calibrate_model(model_path, calib_path, o, quiet, settings)[1], log)
        except EdgecError as exc:        # does not fit: the numbers of the plan a build would have tried
            problem, mode = str(exc), optimize
            try:
                graph, plan = schedule_and_plan(quant.graph, optimize=optimize, choose=choose,
                                                **fit.ram_limits(quant.graph, the_board, ram_budget))
            except EdgecError:          # a budget no schedule reaches: the smallest plan (the error names its RAM)
                graph, plan = schedule_and_plan(quant.graph, optimize=optimize, choose=choose,
                                                ram_budget=None, board_ram=0, overhead=0)
            est = fit.estimate(graph, plan, the_board)
    return {"model": str(model_path), "name": model_name(model_path), "board": the_board.name,
            "optimize": mode, "quantized_on": quantized_on, "ops": len(graph.ops),
            "arena_bytes": plan.arena_bytes, "scratch_bytes": _scratch_bytes(plan),
            "live_set_lower_bound_bytes": planner.live_set_lower_bound(graph),
            **_stack(est, graph, plan, ram_budget), "ram": est["ram"], "flash": est["flash"],
            "patched_stages": len(plan.stages), "multi_port": ports.multi(graph),
            "fits": problem is None, "problem": problem}


def _stack(est: dict, graph, plan: planner.Plan, ram_budget: int | None) -> dict:
    """The stack figure and what it is (an estimate: only a built firmware's .su files measure one), and with a
    budget the RAM the budget counts (arena + the firmware's other static RAM + that stack)."""
    if ram_budget is None:
        return {"stack_bytes": est["ram"]["stack"], "stack_method": "estimate: the stack the board's linker script "
                "reserves (`edgec build` measures the firmware's from gcc -fstack-usage)"}
    used = plan.arena_bytes + fit.runtime_ram_bytes(graph) + fit.BUDGET_STACK_BYTES
    return {"stack_bytes": fit.BUDGET_STACK_BYTES, "stack_method": "estimate: the stack the --ram-budget planner "
            "counts (`edgec build` measures the firmware's from gcc -fstack-usage)",
            "ram_budget": ram_budget, "budget_ram_bytes": used}


def _b(n: int) -> str:
    return f"{n:,} B"


def lines(info: dict) -> list[str]:
    """`edgec inspect --board` as text."""
    ram, flash = info["ram"], info["flash"]
    fw = lambda part: f" + framework {_b(part['framework'])}" if part["framework"] else ""   # noqa: E731
    out = [f"{info['name']} on {info['board']} (--optimize {info['optimize']}, quantized on {info['quantized_on']}):",
           f"  arena   {_b(info['arena_bytes'])} (of which the largest kernel scratch {_b(info['scratch_bytes'])}; "
           f"live-set lower bound {_b(info['live_set_lower_bound_bytes'])})",
           f"  RAM     {_b(ram['total'])} of {_b(ram['board'])}: arena {_b(ram['arena'])} + runtime "
           f"{_b(ram['runtime'])} + stack {_b(ram['stack'])} (the board's reserve){fw(ram)}",
           f"  flash   {_b(flash['total'])} of {_b(flash['board'])}: constants {_b(flash['constants'])} + code "
           f"about {_b(flash['code'])}{fw(flash)}"]
    if "ram_budget" in info:
        out.append(f"  budget  {_b(info['budget_ram_bytes'])} of --ram-budget {_b(info['ram_budget'])}: arena + "
                   f"runtime + stack {_b(info['stack_bytes'])}"
                   + (f" ({info['patched_stages']} patch-based stage{'s' * (info['patched_stages'] > 1)})"
                      if info["patched_stages"] else " (whole layers)"))
    out.append(f"  stack   {_b(info['stack_bytes'])}, {info['stack_method']}")
    for region, part in ram.get("regions", {}).items():
        out.append(f"  region  {region}: arena {_b(part['arena'])} of {_b(part['board'])}")
    out.append("  fits" if info["fits"] else f"  does NOT fit: {info['problem']}")
    return out
