"""edgec's planned arena against TFLite Micro's smallest working arena on every .tflite of the real-model corpus.

    .venv/bin/python benchmarks/arena_vs_tflm.py [--board qemu-cortex-m4] [--models NAME,NAME]

For each tests/corpus/*/model.tflite: the arena `edgec build` would plan without a budget (`api.inspect_board`:
nothing is built; kernel scratch included) and the scratch of its largest kernel, the arena with the speed
kernels' large scratch traded for the leanest offered variant (what `--ram-budget` falls back to,
edgec/plan/ram_budget.py lean_scratch), and TFLite Micro + CMSIS-NN's smallest arena that works on the same
QEMU machine (the ../shared/peers bundle's run_tflm.py bisection, the arena figure benchmarks/peers.py
reports). A row says why a side could not run the model.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import peers  # noqa: E402
from edgec import api  # noqa: E402
from edgec.board_fit import build_chooser, calibrate_model  # noqa: E402
from edgec.errors import EdgecError  # noqa: E402
from edgec.pipeline import lower  # noqa: E402
from edgec.plan import planner, ram_budget  # noqa: E402
from edgec.quant import ptq  # noqa: E402
from edgec.settings import Settings  # noqa: E402
from edgec.targets.boards import load_board  # noqa: E402

CPU = {"qemu-cortex-m4": "cortex-m4", "qemu-cortex-m7": "cortex-m7"}


def lean_arena(model: Path, board_name: str) -> int:
    """The no-budget plan's arena with every large-scratch op on its leanest offered variant."""
    settings, board = Settings.from_environment(), load_board(board_name)
    _, quant = calibrate_model(model, None, ptq.QuantOptions(), lambda *a: None, settings)
    graph = lower(quant.graph, "speed", build_chooser(board, "speed", None, settings), False, board.dsp)
    graph = graph.replace_ops(planner.schedule(graph))
    return planner.plan(ram_budget.lean_scratch(graph)[0], exact=False).arena_bytes


def row(model: Path, board: str, bundle: Path) -> dict:
    out = {"model": model.parent.name}
    try:
        r = api.inspect_board(model, board)
        out.update(edgec_arena=r["arena_bytes"], scratch=r["scratch_bytes"], lean_arena=lean_arena(model, board))
    except EdgecError as e:
        out["edgec_error"] = str(e).replace(str(REPO) + "/", "")[:100]
    cmd = [sys.executable, str(bundle / "run_tflm.py"), str(model), "--cpu", CPU[board], "--kernels", "cmsis_nn",
           "--board", board, "--runs", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("{")), None)
    j = json.loads(line) if line else {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}
    out["tflm_arena"] = j.get("arena_min_bytes")
    if j.get("error"):
        out["tflm_error"] = j["error"][:100]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-cortex-m4", choices=sorted(CPU))
    ap.add_argument("--models", help="corpus folder names, comma-separated (default: every .tflite)")
    a = ap.parse_args(argv)
    bundle = peers.unpack_bundle(peers.DEFAULT_BUNDLE)
    models = sorted((REPO / "tests" / "corpus").glob("*/model.tflite"))
    if a.models:
        models = [m for m in models if m.parent.name in a.models.split(",")]
    print("| model | edgec arena B | largest scratch B | lean arena B | TFLM arena B | edgec / TFLM |")
    print("|---|---:|---:|---:|---:|---:|")
    for m in models:
        r = row(m, a.board, bundle)
        e, t = r.get("edgec_arena"), r.get("tflm_arena")
        cells = [f"{e:,}" if e else r.get("edgec_error", ""), f"{r['scratch']:,}" if e else "",
                 f"{r['lean_arena']:,}" if e else "", f"{t:,}" if t else r.get("tflm_error", ""),
                 f"{e / t:.2f}" if e and t else ""]
        print(f"| {r['model']} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
