"""The corpus manifest (tests/corpus/manifest.json): one entry per model, written by the scripts of this folder.

Each entry: name, file (relative to tests/corpus), kind, format, source (url, repository, commit, path or the
script that made it), license, sha256, committed (False: the file is kept out of the repository and made again
by `regenerate`), regenerate (the command that makes the file again).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
MANIFEST = CORPUS / "manifest.json"
KINDS = ("classification", "regression", "kws", "audio-events", "har", "anomaly", "detection", "sequence", "transformer")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}


def save(entries: dict) -> None:
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")


def record(name: str, kind: str, file: Path, source: dict, license: str, committed: bool, regenerate: str,
           **extra) -> dict:
    """Add or replace one model's entry (file: its path under tests/corpus)."""
    assert kind in KINDS, kind
    file = Path(file)
    entries = load()
    entries[name] = {"name": name, "file": str(file.relative_to(CORPUS)), "kind": kind,
                     "format": file.suffix[1:], "source": source, "license": license,
                     "sha256": sha256(file), "committed": committed, "regenerate": regenerate, **extra}
    save(entries)
    return entries[name]
