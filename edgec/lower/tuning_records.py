"""The tuning log: which kernel variant (edgec/ops/select.py) each layer runs fastest on a board, as
measured by `edgec tune` (edgec/tune.py), so later builds reuse the choice without measuring again (like TVM's
tuning records).

A record is keyed by the board's name and the layer's signature: its kind, its generic fast kernel and that
kernel's params (every shape, stride, padding and zero point the timing depends on; not the weights' values).
The log is one JSON file, by default ~/.cache/edgec/tuning.json (or $EDGEC_CACHE_DIR/tuning.json: Settings.tuning_log,
edgec/settings.py, which the application passes as the log's path):

    {"version": 1, "records": {"<board>/<signature>": {"variant": "blocked", "kind": "<op kind>",
                                                       "units": {"generic": 733200, "blocked": 624640},
                                                       "unit": "emulated instructions"}}}
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from edgec.errors import EdgecError
from edgec.ir import Op
from edgec.ops.kernel import Lowering

VERSION = 1
MAX_BYTES = 64 << 20      # a log larger than this is not one edgec wrote


def key(board: str, sig: str) -> str:
    return f"{board}/{sig}"


def load(path: Path) -> dict:
    """The records of a tuning log ({} if the file does not exist); a record that is not what `edgec tune`
    writes (a variant name and its timings) makes the log one edgec refuses, in one line."""
    from edgec import outputs

    path = Path(path)
    outputs.check_names(path, "tuning log", 16)
    if path.is_symlink():
        raise EdgecError(f"tuning log {path} is a symbolic link; give the log itself with --tuning-log")
    if not path.exists():
        return {}
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            raise ValueError("not a file of a tuning log's size")
        data = json.loads(path.read_text())
        records = data["records"]
        if data.get("version") != VERSION or not isinstance(records, dict):
            raise ValueError("unknown version")
        for k, rec in records.items():
            if not isinstance(rec, dict) or not isinstance(rec.get("variant"), str):
                raise ValueError(f"record {str(k)[:60]!r} has no variant name")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EdgecError(f"{path}: not an edgec tuning log ({e}); delete it or give another --tuning-log") from None
    return records


@contextmanager
def locked(path: Path):
    """The log's lock (a file beside it, flock'd): one `edgec tune` at a time reads, merges and writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise EdgecError(f"cannot lock the tuning log {path} ({e.strerror or e}); give another --tuning-log") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def save(path: Path, records: dict) -> None:
    """Add `records` to the log: under its lock, merged with what is in it now (a concurrent tune's records are
    kept), written by edgec's one writer (signed, atomic, never through a link)."""
    from edgec import outputs

    path = Path(path)
    with locked(path):
        merged = {**load(path), **records}        # load refuses what is not a tuning log
        outputs.write_json(path, {"version": VERSION, "records": dict(sorted(merged.items()))}, what="tuning log",
                           ours=_is_log)


def _is_log(path: Path) -> bool:
    """An unsigned tuning log of an earlier edgec: replaced by a signed one."""
    try:
        load(path)
    except EdgecError:
        return False
    return True


def chooser(board: str, records: dict, used: dict | None = None):
    """A variant chooser for lower_graph (edgec/lower/lowering.py): each layer's variant from the log's
    records for this board (None where there is none); `used` collects op name -> variant of the records used."""
    def choose(op: Op, generic: Lowering) -> str | None:
        rec = records.get(key(board, generic.signature))
        if rec is None or rec.get("variant") not in generic.variants:
            return None
        if used is not None:
            used[op.name] = rec["variant"]
        return rec["variant"]
    return choose
