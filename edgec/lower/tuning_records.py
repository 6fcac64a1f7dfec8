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

import json
import os
from pathlib import Path

from edgec.errors import EdgecError
from edgec.ir import Op
from edgec.ops.kernel import Lowering

VERSION = 1


def key(board: str, sig: str) -> str:
    return f"{board}/{sig}"


def load(path: Path) -> dict:
    """The records of a tuning log ({} if the file does not exist)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        records = data["records"]
        if data.get("version") != VERSION or not isinstance(records, dict):
            raise ValueError("unknown version")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EdgecError(f"{path}: not an edgec tuning log ({e}); delete it or give another --tuning-log") from None
    return records


def save(path: Path, records: dict) -> None:
    """Write the log atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"version": VERSION, "records": records}, indent=1, sort_keys=True))
    os.replace(tmp, path)


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
