"""The corpus manifest (tests/corpus/manifest.json): one entry per model, written by the scripts of this folder.

Each entry: name, file (relative to tests/corpus), kind, format, source (url, repository, commit, path or the
script that made it), license, sha256, committed (False: the file is kept out of the repository and made again
by `regenerate`), regenerate (the command that makes the file again).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
MANIFEST = CORPUS / "manifest.json"
KINDS = ("classification", "regression", "kws", "audio-events", "har", "anomaly", "detection", "sequence", "transformer")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_calibration(folder: Path, x: np.ndarray) -> None:
    """folder/calib.npz: 8 calibration samples; images (3 channels, values around [0, 1]) as 8-bit pixels / 255,
    as a camera gives them (and so they compress: random float32 images would not)."""
    x = np.asarray(x[:8], np.float32)
    if is_image(x):
        x = (np.clip(np.round(x * 255), 0, 255) / 255).astype(np.float32)
    np.savez_compressed(Path(folder) / "calib.npz", x=x)


def is_image(x: np.ndarray) -> bool:
    return x.ndim == 4 and 3 in (x.shape[1], x.shape[-1])


def load() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}


def save(entries: dict) -> None:
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    (CORPUS / ".gitignore").write_text(
        "# written by scripts/corpus/manifest.py: the models whose manifest entry says committed=false, made again\n"
        "# by the command in their `regenerate` field; and the exporters' lock file\n.manifest.lock\n"
        + "".join(f"{e['file']}\n" for e in sorted(entries.values(), key=lambda e: e["name"]) if not e["committed"]))


def record(name: str, kind: str, file: Path, source: dict, license: str, committed: bool, regenerate: str,
           **extra) -> dict:
    """Add or replace one model's entry (file: its path under tests/corpus)."""
    assert kind in KINDS, kind
    file = Path(file)
    with open(CORPUS / ".manifest.lock", "w") as lock:    # two exporters may run at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = load()
        entries[name] = _entry(name, kind, file, source, license, committed, regenerate, extra)
        save(entries)
    return entries[name]


def _entry(name, kind, file, source, license, committed, regenerate, extra) -> dict:
    return {"name": name, "file": str(file.relative_to(CORPUS)), "kind": kind,
                     "format": file.suffix[1:], "source": source, "license": license,
                     "sha256": sha256(file), "committed": committed, "regenerate": regenerate, **extra}
