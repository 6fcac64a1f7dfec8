"""Snapshot the generated model C of every reference model, and compare two snapshots: the check that a
refactoring left the generated code byte-identical.

    python scripts/generated_c.py snapshot DIR [--repo CHECKOUT] [--jobs 2] [--only SUBSTRING]
    python scripts/generated_c.py compare OLD NEW [--renames scripts/c_renames.txt] [--rewrites scripts/c_rewrites.txt]

Cases (the acceptance matrix of a refactoring): every example model (examples/*/*.onnx and the PyTorch
exports in examples/*/pytorch), the seven MLPerf Tiny ONNX files and the four INT8 .tflite files
(../shared/models/mlperf_tiny), each on host, qemu-cortex-m4, qemu-cortex-m3 and qemu-cortex-m55, built
(`api.build(..., firmware=False)`: the build path, Helium kernels on the M55) with the default options,
`--optimize size`, `--int16` on the first weighted layer, `--weights int4` and `--ram-budget 40960`, plus an
`edgec export --format c` on the M55 (the export keeps the DSP kernels). The .tflite files take their own
quantization, so only the default, size and RAM-budget builds apply to them. A case edgec refuses (a model
that does not fit the board, say) is snapshotted as its one-line error, which must not change either.

`--repo` imports edgec from another checkout (a snapshot of main before a change, for example), so both
snapshots come from the same script. Calibration statistics are cached in a folder of the snapshot run's own;
no tuning log is read, and the sensitivity report (which does not change the code) is not computed.

`compare` says whether every model .c/.h and every error is byte-identical once #include lines are dropped
and the rename map (`old new` per line: C identifiers renamed on purpose) and then the rewrite rules (a documented
regex -> replacement per call-shape change made on purpose: an argument order, loose arguments becoming a params
block; the format is in scripts/c_rewrites.txt) are applied to the old text.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MLPERF = REPO.parent / "shared" / "models" / "mlperf_tiny"
BOARDS = ["host", "qemu-cortex-m4", "qemu-cortex-m3", "qemu-cortex-m55"]
RAM_BUDGET = 40960
OPTION_SETS = ("default", "size", "int16", "int4", "ram")

# one case, run in a fresh interpreter inside the checkout being snapshotted (argv: model calib board out
# option-set first-weighted-node)
_RUN = r"""
import sys, traceback
from pathlib import Path
from edgec import api
from edgec.errors import EdgecError
from edgec.quant.ptq import QuantOptions
model, calib, board, out, kind, node = sys.argv[1:7]
calib = None if calib == "-" else calib
opts = QuantOptions(sensitivity_samples=0)
kw = {}
if kind == "size":
    kw["optimize"] = "size"
elif kind == "int16":
    opts.int16 = (node,)
elif kind == "int4":
    opts.weights = "int4"
elif kind == "ram":
    kw["ram_budget"] = int(sys.argv[7])
try:
    if kind == "export":
        api.export(model, calib, board, "c", out, options=opts)
    else:
        api.build(model, calib, board, out, firmware=False, options=opts, tuning_log=str(Path(out).parent / "none.json"), **kw)
except EdgecError as e:
    Path(out + ".error").write_text(str(e).replace(str(Path(out).parent), "<tmp>") + "\n")
"""


def _mlperf_calib(key: str, channels_first: bool, out: Path) -> Path:
    x = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"].astype(np.float32)
    if channels_first and x.ndim == 4:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    np.savez(out, x=x)
    return out


def first_weighted_node(model: Path) -> str:
    """The name of the first Conv/Gemm/MatMul node with a name (the --int16 case's layer)."""
    import onnx
    m = onnx.load(str(model), load_external_data=False)
    for n in m.graph.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and n.name:
            return n.name
    return ""


def models(tmp: Path):
    """(case name, model, calibration file or None)."""
    ex = REPO / "examples"
    for model in sorted(ex.glob("*/*.onnx")) + sorted(ex.glob("*/pytorch/*.onnx")):
        folder = model.parent if model.parent.name != "pytorch" else model.parent.parent
        name = f"{folder.name}-{model.stem}" if model.parent.name != "pytorch" else f"{folder.name}-pytorch-{model.stem}"
        yield name, model, folder / "calib.npz"
    for key, stem in (("kws", "kws_dscnn_fp32"), ("vww", "vww_mobilenetv1_025_fp32"), ("ic", "ic_resnet8_fp32"),
                      ("ad", "ad_fc_autoencoder_fp32")):
        for cf in (False, True):
            path = MLPERF / f"{stem}{'_nchw' if cf else ''}.onnx"
            if path.exists():
                yield path.stem, path, _mlperf_calib(key, cf, tmp / f"{path.stem}.npz")
    for path in sorted(MLPERF.glob("*.tflite")):
        yield path.stem, path, None


def cases(tmp: Path, only: str | None):
    for name, model, calib in models(tmp):
        tflite = model.suffix == ".tflite"
        node = "" if tflite else first_weighted_node(model)
        for board in BOARDS:
            for kind in OPTION_SETS:
                if tflite and kind in ("int16", "int4"):
                    continue
                if kind == "int16" and not node:
                    continue
                case = f"{name}@{board}@{kind}"
                if only is None or only in case:
                    yield case, model, calib, board, kind, node
        case = f"{name}@qemu-cortex-m55@export"
        if only is None or only in case:
            yield case, model, calib, "qemu-cortex-m55", "export", node


def _one(repo: Path, dest: Path, tmp: Path, env: dict, case, model, calib, board, kind, node) -> str:
    out = tmp / case.replace("@", "_")
    cmd = [sys.executable, "-c", _RUN, str(model), str(calib) if calib else "-", board, str(out), kind, node,
           str(RAM_BUDGET)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=repo, env=env)
    (dest / case).mkdir(parents=True, exist_ok=True)
    if r.returncode:
        (dest / case / "CRASH.txt").write_text(r.stdout + r.stderr)
        return f"{case}: CRASHED (see {dest / case / 'CRASH.txt'})"
    err = Path(str(out) + ".error")
    if err.exists():
        (dest / case / "ERROR.txt").write_text(err.read_text())
        return f"{case}: error: {err.read_text().strip()[:120]}"
    lib = out if kind == "export" else out / "model"
    mine = [f for f in lib.iterdir() if f.suffix in (".c", ".h", ".ld") and not f.name.startswith("edgec_")
            and not f.name.startswith("main") and "example" not in f.name]
    for f in mine:
        (dest / case / f.name).write_bytes(f.read_bytes())
    return f"{case}: {', '.join(sorted(f.name for f in mine))}"


def snapshot(dest: Path, repo: Path, jobs: int, only: str | None) -> int:
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edgec-snapshot-") as t:
        tmp = Path(t)
        env = dict(os.environ, EDGEC_CACHE_DIR=str(tmp / "cache"), PYTHONPATH=str(repo))
        todo = list(cases(tmp, only))
        crashed = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_one, repo, dest, tmp, env, *c) for c in todo]
            for i, f in enumerate(concurrent.futures.as_completed(futures), 1):
                line = f.result()
                crashed += "CRASHED" in line
                print(f"[{i}/{len(todo)}] {line}", flush=True)
    (dest / "cases.json").write_text(json.dumps(sorted(c[0] for c in todo), indent=1))
    return 1 if crashed else 0


# placeholders of the rewrite rules: one C argument (no comma outside parentheses), an integer literal
_PLACEHOLDERS = {"{ARG}": r"((?:[^,()]|\([^()]*\))+)", "{INT}": r"(-?\d+)"}


def read_rewrites(path: Path | None) -> list[tuple[re.Pattern, str]]:
    """The rules of a rewrite file: `old: REGEX` then `new: REPLACEMENT` lines (comments start with #)."""
    if not path or not path.exists():
        return []
    rules, pending = [], None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("old: "):
            pattern = line[len("old: "):]
            for name, regex in _PLACEHOLDERS.items():
                pattern = pattern.replace(name, regex)
            pending = re.compile(pattern, re.M)
        elif line.startswith("new: ") and pending is not None:
            rules.append((pending, line[len("new: "):]))
            pending = None
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{path}:{number}: neither a comment nor an old:/new: line")
    if pending is not None:
        raise ValueError(f"{path}: an old: line without its new: line")
    return rules


def _normal(text: str, renames: list[tuple[str, str]], rewrites=(), counts: list | None = None) -> str:
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#include"))
    for old, new in renames:
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    for k, (pattern, replacement) in enumerate(rewrites):
        for _ in range(10000):       # until it no longer matches (a rule may span what an earlier match skipped)
            text, n = pattern.subn(replacement, text)
            if counts is not None:
                counts[k] += n
            if not n:
                break
    return text


def compare(old: Path, new: Path, renames_file: Path | None, rewrites_file: Path | None = None) -> int:
    renames = []
    if renames_file and renames_file.exists():
        renames = [tuple(line.split()[:2]) for line in renames_file.read_text().splitlines()
                   if line.strip() and not line.startswith("#")]
    rewrites = read_rewrites(rewrites_file)
    counts = [0] * len(rewrites)
    bad, files = 0, 0
    for case in sorted(p.name for p in old.iterdir() if p.is_dir()):
        names = sorted({f.name for f in (old / case).iterdir()} | {f.name for f in (new / case).iterdir()}
                       if (new / case).is_dir() else {f.name for f in (old / case).iterdir()})
        for name in names:
            f, g = old / case / name, new / case / name
            files += 1
            if not f.exists() or not g.exists():
                print(f"{'MISSING' if f.exists() else 'EXTRA'} {case}/{name}")
                bad += 1
                continue
            if _normal(f.read_text(), renames, rewrites, counts) != _normal(g.read_text(), []):
                print(f"DIFFERS {case}/{name}")
                bad += 1
    print(f"{'all identical' if not bad else f'{bad} file(s) differ'} ({files} files in "
          f"{sum(1 for p in old.iterdir() if p.is_dir())} cases, #include lines dropped, {len(renames)} renames, "
          f"{len(rewrites)} rewrite rules applied {sum(counts)} times: {counts})")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("dest", type=Path)
    s.add_argument("--repo", type=Path, default=REPO, help="the checkout whose edgec makes the C (default this one)")
    s.add_argument("--jobs", type=int, default=2)
    s.add_argument("--only", help="only the cases whose name contains this")
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--renames", type=Path, default=REPO / "scripts" / "c_renames.txt")
    c.add_argument("--rewrites", type=Path, default=REPO / "scripts" / "c_rewrites.txt")
    a = ap.parse_args()
    if a.cmd == "snapshot":
        return snapshot(a.dest, a.repo.resolve(), a.jobs, a.only)
    return compare(a.old, a.new, a.renames, a.rewrites)


if __name__ == "__main__":
    sys.exit(main())
