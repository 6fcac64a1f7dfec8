"""Does a model fit a board, with the plan a build would choose: `edgec inspect MODEL --board B`.

The same steps as `edgec build` up to its fit check (edgec/api.build): calibrate and quantize, the tuning log's
kernel choices, lower, schedule, plan the arena (spread over the board's RAM regions) and the fit check's
estimate (edgec/targets/fit.py), without generating C or building firmware. The arena is the build's, byte for
byte; flash is the model's constants (exact) plus the code-size model of the fit check; the stack is what the
board's linker script reserves (the measured stack needs a firmware: `edgec build` reports it).

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
from edgec.frontend import loader, tflite
from edgec.lower import tuning_records
from edgec.pipeline import Log, calibrate_model, model_name, plan_to_fit, quiet, schedule_and_plan
from edgec.plan import planner
from edgec.quant import ptq
from edgec.settings import Settings
from edgec.targets import fit
from edgec.targets.boards import Board, load_board

RANDOM_SAMPLES = 8


def build_chooser(board: Board, optimize: str, tuning_log: str | Path | None, settings: Settings,
                  tuned: dict | None = None):
    """The per-layer kernel chooser a build uses: the tuning log's records for this board (speed builds only)."""
    if optimize != "speed":
        return None
    log_path = Path(tuning_log) if tuning_log else settings.tuning_log
    return tuning_records.chooser(board.name, tuning_records.load(log_path), {} if tuned is None else tuned)


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
                  tuning_log: str | Path | None = None, log: Log = quiet, settings: Settings | None = None) -> dict:
    """Arena, scratch, flash and stack of the plan `edgec build` would choose for this board, and whether the
    model fits (`fits`, else `problem`: the build's own error line)."""
    settings = settings or Settings.from_environment()
    model_path = Path(model_path)
    the_board = load_board(board)
    quantized_on = "the model's own quantization" if tflite.is_tflite(model_path) else str(calib_path)
    with contextlib.ExitStack() as stack:
        if calib_path is None and not tflite.is_tflite(model_path):
            calib_path = stack.enter_context(random_calibration(model_path, settings))
            quantized_on = f"{RANDOM_SAMPLES} random samples (no --calib)"
            options = dataclasses.replace(options or ptq.QuantOptions(), cache=False)   # nothing worth caching
        _, quant = calibrate_model(model_path, calib_path, options, log, settings)
    choose = build_chooser(the_board, optimize, tuning_log, settings)
    problem = None
    try:
        graph, plan, est, mode = plan_to_fit(quant.graph, the_board, 0, optimize, choose, log)
    except EdgecError as exc:        # does not fit: the numbers of the plan a build would have tried
        problem, mode = str(exc), optimize
        graph, plan = schedule_and_plan(quant.graph, optimize=optimize, choose=choose,
                                        **fit.ram_limits(quant.graph, the_board, None))
        est = fit.estimate(graph, plan, the_board)
    return {"model": str(model_path), "name": model_name(model_path), "board": the_board.name,
            "optimize": mode, "quantized_on": quantized_on, "ops": len(graph.ops),
            "arena_bytes": plan.arena_bytes, "scratch_bytes": _scratch_bytes(plan),
            "live_set_lower_bound_bytes": planner.live_set_lower_bound(graph),
            "stack_bytes": est["ram"]["stack"], "ram": est["ram"], "flash": est["flash"],
            "multi_port": ports.multi(graph), "fits": problem is None, "problem": problem}


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
    for region, part in ram.get("regions", {}).items():
        out.append(f"  region  {region}: arena {_b(part['arena'])} of {_b(part['board'])}")
    out.append("  fits" if info["fits"] else f"  does NOT fit: {info['problem']}")
    return out
