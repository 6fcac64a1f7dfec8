"""`edgec tune`: on-target auto-tuning of the per-layer kernel variants (the speed variants of the fast kernels,
edgec/ops/select.py).

For round i, one firmware runs every layer on its i-th variant (the generic kernel in round 0; a layer with fewer
variants repeats its generic one); the board's PROFILE command (edgec bench --profile) times each layer on its
own, on a few samples. A round whose outputs are not byte-identical to the NumPy reference is discarded whole.
Each layer keeps its fastest variant; the choice goes into the tuning log (edgec/lower/tuning_records.py) under the
board and the layer's signature, where every later `edgec build` for that board finds it without measuring.
The rounds are few (one per variant of the layer with the most): a tune costs a few builds and benches.
"""
from __future__ import annotations

import time
from pathlib import Path

from edgec import api, children
from edgec.lower import lowering, tuning_records
from edgec.errors import EdgecError
from edgec.ops.kernel import GENERIC
from edgec.ops.registry import VARIANTS
from edgec.pipeline import Log, quiet
from edgec.settings import Settings
from edgec.targets.boards import load_board

PROFILE_SAMPLES = 2


def rounds() -> int:
    """Builds a tune may need: one per variant of the kernel with the most (a model needs one per variant of its
    layer with the most: tune stops there)."""
    return 1 + max((len(v) for v in VARIANTS.values()), default=0)


def _round_chooser(i: int):
    def choose(op, generic) -> str:
        names = generic.variants
        return names[i] if i < len(names) else GENERIC
    return choose


def missing_layers(model_path, calib_path, board: str, tuning_log: str | Path | None = None, options=None,
                   log: Log = quiet, settings: Settings | None = None) -> int:
    """How many of the model's layers with variants have no record in the log for this board."""
    settings = settings or Settings.from_environment()
    _, graph, _ = api.compile_model(model_path, calib_path, log, options, optimize="speed", settings=settings)
    records = tuning_records.load(Path(tuning_log) if tuning_log else settings.tuning_log)
    sigs = lowering.summary(graph.ops)["layers"].values()
    return sum(tuning_records.key(board, s["signature"]) not in records for s in sigs)


def tune(model_path: str | Path, calib_path: str | Path | None, board: str, data_path: str | Path | None = None,
         tuning_log: str | Path | None = None, samples: int = PROFILE_SAMPLES, options=None,
         log: Log = quiet, settings: Settings | None = None) -> dict:
    """Measure every variant of every layer on the board, store the fastest bit-exact one per layer in the
    tuning log; returns {"seconds", "log", "unit", "layers": [per-layer rows], "discarded_rounds"}."""
    the_board = load_board(board)
    data_path = data_path or calib_path
    if data_path is None:
        raise EdgecError("edgec tune: give --data FILE.npz (inputs x to time the layers on); a quantized .tflite "
                         "model has no calibration set to use instead")
    settings = settings or Settings.from_environment()
    path = Path(tuning_log) if tuning_log else settings.tuning_log
    tuning_records.load(path)              # a damaged log is refused before any work
    start = time.monotonic()
    measured: dict[str, dict] = {}           # op name -> {"kind", "signature", "units": {variant: units}}
    discarded = []
    with children.temporary_folder() as tmp:      # removed even if edgec is killed
        total, i = rounds(), -1
        while i + 1 < total:
            i += 1
            out = Path(tmp) / f"round{i}"
            log(f"tune round {i + 1}/{total}: building")
            report = api.build(model_path, calib_path, the_board.name, out, log=quiet, options=options,
                               optimize="speed", choose=_round_chooser(i), settings=settings)
            total = min(total, max((len(v["variants"]) for v in report["optimize"]["layers"].values()), default=1))
            result = api.bench(out, data_path, limit=samples, profile=True, log=quiet, settings=settings)
            exact = result["agreement"]["device_vs_reference"]
            if exact < 1.0:
                discarded.append(i)
                log(f"tune round {i + 1}: outputs differ from the reference ({exact:.0%} exact): discarded")
                continue
            layers = report["optimize"]["layers"]
            for row in result["profile"]["layers"]:
                info = layers.get(row["name"])
                if info is None:
                    continue
                entry = measured.setdefault(row["name"], {"kind": row["kind"], "signature": info["signature"],
                                                          "units": {}})
                entry["units"].setdefault(info["variant"], row["units"])
            unit = result["profile"]["unit"]
    if not measured:
        raise EdgecError(f"edgec tune: no layer of {Path(model_path).name} has kernel variants to choose from "
                         "(or no measuring round was bit-exact)")
    rows, records = [], {}
    for name, m in measured.items():
        best = min(m["units"], key=lambda v: m["units"][v])
        records[tuning_records.key(the_board.name, m["signature"])] = {"variant": best, "kind": m["kind"],
                                                               "units": m["units"], "unit": unit}
        generic = m["units"].get(GENERIC)
        rows.append({"name": name, "kind": m["kind"], "variant": best, "units": m["units"],
                     "gain": (1 - m["units"][best] / generic) if generic else None})
    tuning_records.save(path, records)
    return {"seconds": time.monotonic() - start, "log": str(path), "unit": unit, "layers": rows,
            "discarded_rounds": discarded, "board": the_board.name}


def table(result: dict) -> str:
    """The per-layer outcome as text: generic vs chosen variant and the gain."""
    lines = [f"{'layer':40s} {'kind':18s} {'generic':>12s} {'chosen':>10s} {'units':>12s} {'gain':>6s}"]
    for r in result["layers"]:
        g = r["units"].get(GENERIC)
        generic = f"{g:,.0f}" if g is not None else ""
        gain = f"{r['gain']:.0%}" if r["gain"] is not None else ""
        lines.append(f"{r['name'][-40:]:40s} {r['kind']:18s} {generic:>12s} {r['variant']:>10s} "
                     f"{r['units'][r['variant']]:>12,.0f} {gain:>6s}")
    return "\n".join(lines)


def summary(model_path, calib_path, board: str, data_path=None, tuning_log=None, options=None,
            only_missing: bool = False, log: Log = quiet, settings: Settings | None = None) -> str:
    """Tune (with only_missing: only if a layer has no record in the log yet) and say what happened."""
    settings = settings or Settings.from_environment()
    if only_missing and not missing_layers(model_path, calib_path, board, tuning_log, options, log, settings):
        return "tuning: every layer with kernel variants has a record in the tuning log; nothing measured"
    result = tune(model_path, calib_path, board, data_path, tuning_log, options=options, log=log, settings=settings)
    return (table(result) + f"\ntuned {len(result['layers'])} layers on {result['board']} in "
            f"{result['seconds']:.0f} s; choices in {result['log']}")
