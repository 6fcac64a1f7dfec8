"""The corpus manifest (tests/corpus/manifest.json): one entry per model, written by the scripts of this folder.

Each entry: name, file (relative to tests/corpus), kind, format, source (url, repository, commit, path or the
script that made it), license, sha256, committed (False: the file is kept out of the repository and made again
by `regenerate`), regenerate (the command that makes the file again).
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
# the exporters run in their own environments (/work/venv-tf, torch's), where edgec is not installed: this
# checkout's edgec is the one that reads a file's format (file_format)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
MANIFEST = CORPUS / "manifest.json"
COMMITTED_LIMIT = 700_000      # bytes; a larger export is made again by its script, not committed (repository size)
KINDS = ("classification", "regression", "kws", "audio-events", "har", "anomaly", "detection", "sequence", "transformer")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def content_sha256(path: Path) -> str:
    """sha256 of what a model computes: an .onnx without its producer, doc strings and metadata (the dynamo
    exporter writes each node's Python stack trace into its metadata, naming the folder it ran in, so a re-export
    elsewhere has other bytes and the same graph and weights), serialized deterministically; other files: their
    bytes."""
    path = Path(path)
    if path.suffix != ".onnx":
        return sha256(path)
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    model.producer_name = model.producer_version = ""
    _strip(model)
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


def _strip(message) -> None:
    """Clear every doc_string and metadata_props in a protobuf message and the messages it holds."""
    for field, value in message.ListFields():
        if field.name in ("doc_string", "metadata_props"):
            message.ClearField(field.name)
        elif field.type == field.TYPE_MESSAGE:
            for m in (value if field.is_repeated else [value]):
                _strip(m)


def same_model(path: Path, entry: dict) -> bool:
    """The file is the manifest entry's model: its bytes, or (re-exported) the same content (content_sha256)."""
    return sha256(path) == entry["sha256"] or content_sha256(path) == entry.get("content_sha256")


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


def corpus_file(name: str, filename: str = "model.onnx") -> Path:
    """tests/corpus/<name>/<filename>, its folder made."""
    folder = CORPUS / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder / filename


def record_export(name: str, kind: str, out: Path, script: str, python: str, license: str, source: dict,
                  committed: bool | None = None, **extra) -> dict:
    """The entry of a file an exporter script of this folder made: made by `script` (its path in the
    repository), made again by `python script --only name`, `source` the rest of its provenance, committed (by
    default) when at most COMMITTED_LIMIT bytes; prints its size."""
    size = Path(out).stat().st_size
    committed = size <= COMMITTED_LIMIT if committed is None else committed
    entry = record(name, kind, out, {"made_by": script, **source}, license, committed,
                   f"{python} {script} --only {name}", **extra)
    print(f"{name}: {size:,} bytes{'' if committed else ' (not committed)'}")
    return entry


def file_format(file: Path) -> str:
    """"onnx", "tflite" (quantized: built with the file's own scales) or "tflite-float" (a float, float16 or
    dynamic-range .tflite: built from calib.npz, judged as an .onnx is, on its float ONNX translation)."""
    from edgec.frontend import tflite_float

    return "tflite-float" if tflite_float.float_tflite(file) else file.suffix[1:]


def _entry(name, kind, file, source, license, committed, regenerate, extra) -> dict:
    return {"name": name, "file": str(file.relative_to(CORPUS)), "kind": kind,
                     "format": file_format(file), "source": source, "license": license,
                     "sha256": sha256(file), "content_sha256": content_sha256(file), "committed": committed,
                     "regenerate": regenerate, **extra}


def export_all(doc: str, models, export, argv=None, script: str | None = None) -> int:
    """An exporter's command line, `[--only NAME ...]`: each of `models` asked for (all by default) made by
    `export(name)`, a failure reported and the next model made. With `script` (TFLiteConverter crashed (SIGSEGV) on
    a second conversion in one process), several models each in a process of its own (`script --only NAME`)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    only = ap.parse_args(argv).only
    names = [n for n in models if not only or n in only]
    if script and len(names) > 1:
        for name in names:
            r = subprocess.run([sys.executable, script, "--only", name])
            if r.returncode:
                print(f"{name}: export failed: the exporter process ended with {r.returncode}")
        return 0
    for name in names:
        try:
            export(name)
        except Exception as e:     # one exporter failure must not stop the others; it is reported
            print(f"{name}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    return 0


def add_content_hashes() -> int:
    """content_sha256 for every entry whose file on disk has the manifest's bytes (entries recorded before the
    content hash); the number added."""
    entries, added = load(), 0
    for e in entries.values():
        path = CORPUS / e["file"]
        if "content_sha256" not in e and path.is_file() and sha256(path) == e["sha256"]:
            e["content_sha256"] = content_sha256(path)
            added += 1
    save(entries)
    return added


if __name__ == "__main__":      # python scripts/corpus/manifest.py --content-hashes
    if sys.argv[1:] != ["--content-hashes"]:
        sys.exit("usage: python scripts/corpus/manifest.py --content-hashes")
    print(f"{add_content_hashes()} entries given a content_sha256")
