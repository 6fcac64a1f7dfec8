"""Snapshot the generated model C of the reference models, and compare two snapshots.

    python scripts/generated_c.py snapshot DIR            # write DIR/<case>/<file> for every case
    python scripts/generated_c.py compare OLD NEW [--renames scripts/c_renames.txt]

Cases: both examples and the seven MLPerf Tiny ONNX files (../shared/models/mlperf_tiny) exported as a C
library for host, qemu-cortex-m4 and qemu-cortex-m3-large (a Cortex-M3 with room for VWW), plus the digits example with int16 layers and with the
arena guard. `compare` says whether every model .c/.h is byte-identical once #include lines are dropped and
the rename map (`old new` per line: C identifiers renamed on purpose) is applied to the old text.
It uses only edgec.api and the CLI, so a snapshot of an older checkout compares with a newer one.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MLPERF = REPO.parent / "shared" / "models" / "mlperf_tiny"
BOARDS = ["host", "qemu-cortex-m4", "qemu-cortex-m3-large"]   # (the small M3 cannot hold VWW)


def _mlperf_calib(key: str, channels_first: bool, out: Path) -> Path:
    x = np.load(MLPERF / "data" / f"golden_{key}.npz")["x_fp32"].astype(np.float32)
    if channels_first and x.ndim == 4:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    np.savez(out, x=x)
    return out


def cases(tmp: Path):
    ex = REPO / "examples"
    models = [("digits_cnn", ex / "digits_cnn" / "model.onnx", ex / "digits_cnn" / "calib.npz"),
              ("cancer_conv1d", ex / "cancer_conv1d" / "model.onnx", ex / "cancer_conv1d" / "calib.npz")]
    for key, stem in (("kws", "kws_dscnn_fp32"), ("vww", "vww_mobilenetv1_025_fp32"), ("ic", "ic_resnet8_fp32"),
                      ("ad", "ad_fc_autoencoder_fp32")):
        for cf in (False, True):
            path = MLPERF / f"{stem}{'_nchw' if cf else ''}.onnx"
            if path.exists():
                models.append((path.stem, path, _mlperf_calib(key, cf, tmp / f"{path.stem}.npz")))
    for name, model, calib in models:
        for board in BOARDS:
            yield f"{name}-{board}", model, calib, board, []
    digits = models[0]
    yield "digits_cnn-int16", digits[1], digits[2], "qemu-cortex-m4", ["--int16", "/conv2/Conv,/dw/Conv"]
    yield "digits_cnn-guard", digits[1], digits[2], "qemu-cortex-m4", ["--arena-guard"]


def snapshot(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    edgec = [sys.executable, "-m", "edgec"]
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for case, model, calib, board, extra in cases(tmp):
            out = tmp / case
            if "--arena-guard" in extra:
                code = ("import sys; from edgec import api; "
                        "api.build(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], firmware=False, arena_guard=True)")
                cmd = [sys.executable, "-c", code, str(model), str(calib), board, str(out)]
                lib = out / "model"
            else:
                cmd = edgec + ["export", str(model), "--calib", str(calib), "--board", board, "--format", "c",
                               "-o", str(out)] + extra
                lib = out
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            if r.returncode:
                sys.exit(f"{case}: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            files = [f for f in lib.rglob("*.[ch]") if f.parent == lib or f.parent.name == "model"]
            mine = [f for f in files if not f.name.startswith("edgec_") and not f.name.startswith("main")
                    and "example" not in f.name]
            (dest / case).mkdir(exist_ok=True)
            for f in mine:
                (dest / case / f.name).write_bytes(f.read_bytes())
            print(f"{case}: {', '.join(sorted(f.name for f in mine))}", flush=True)


def _normal(text: str, renames: list[tuple[str, str]]) -> str:
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#include"))
    for old, new in renames:
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


def compare(old: Path, new: Path, renames_file: Path | None) -> int:
    renames = []
    if renames_file and renames_file.exists():
        renames = [tuple(l.split()[:2]) for l in renames_file.read_text().splitlines()
                   if l.strip() and not l.startswith("#")]
    bad = 0
    for case in sorted(p.name for p in old.iterdir()):
        for f in sorted((old / case).iterdir()):
            g = new / case / f.name
            if not g.exists():
                print(f"MISSING {case}/{f.name}"); bad += 1; continue
            a = _normal(f.read_text(), renames)
            b = _normal(g.read_text(), [])
            if a != b:
                print(f"DIFFERS {case}/{f.name}"); bad += 1
    print(f"{'all identical' if not bad else f'{bad} file(s) differ'} "
          f"({sum(1 for _ in old.rglob('*.[ch]'))} files, #include lines dropped, {len(renames)} renames)")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot"); s.add_argument("dest", type=Path)
    c = sub.add_parser("compare"); c.add_argument("old", type=Path); c.add_argument("new", type=Path)
    c.add_argument("--renames", type=Path, default=REPO / "scripts" / "c_renames.txt")
    a = ap.parse_args()
    if a.cmd == "snapshot":
        snapshot(a.dest)
        return 0
    return compare(a.old, a.new, a.renames)


if __name__ == "__main__":
    sys.exit(main())
