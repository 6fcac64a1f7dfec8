"""The build folder `edgec build` writes, as the later stages read it: its report, board and firmware."""
from __future__ import annotations

import json
from pathlib import Path

from edgec.errors import EdgecError
from edgec.targets.boards import Board, load_board

REPORT = "build-report.json"


def load_build(outdir: str | Path) -> tuple[dict, Board, Path]:
    """The report, board and firmware of a build folder (checked)."""
    outdir = Path(outdir)
    report_path = outdir / REPORT
    if not report_path.is_file():
        raise EdgecError(f"{outdir}: not an edgec build folder (no {REPORT}); run `edgec build` first")
    try:
        report = json.loads(report_path.read_text())
        board_ref = report["board"]
        if not isinstance(board_ref, str) or not isinstance(report.get("firmware") or "", str) \
                or not isinstance(report.get("model_hash"), str):
            raise ValueError("fields of the wrong type")
    except (OSError, ValueError, KeyError, TypeError):
        raise EdgecError(f"{report_path}: damaged build report; run `edgec build` again") from None
    board_file = report.get("board_file")
    board = load_board(board_file if isinstance(board_file, str) and Path(board_file).is_file() else board_ref)
    if not report.get("firmware"):
        raise EdgecError(f"{outdir}: this build has no firmware (built without one); run `edgec build` again")
    firmware = outdir / report["firmware"]
    if not firmware.exists():
        raise EdgecError(f"{outdir}: firmware {firmware.name} is missing; run `edgec build` again")
    return report, board, firmware


def check_hello(hello: dict, report: dict, outdir) -> None:
    """Refuse a device whose firmware was built from another model than the build folder's, or whose
    reported sizes are not the build's known shapes (a damaged or foreign firmware: nothing it says about
    sizes is used to read or allocate)."""
    if hello.get("model_hash") != report["model_hash"]:
        raise EdgecError(f"the device runs model {hello.get('model')} ({hello.get('model_hash')}) but {outdir} holds "
                         f"{report['model']} ({report['model_hash']}); flash this build first (edgec flash {outdir})")
    expected = {"input_bytes": _port_bytes(report, "input"), "output_bytes": _port_bytes(report, "output")}
    for key, want in expected.items():
        if want is not None and hello.get(key) != want:
            raise EdgecError(f"the device reports {key.replace('_', ' ')} {hello.get(key)} but {outdir}'s model has "
                             f"{want}; the firmware is damaged or not this build's: flash it again (edgec flash {outdir})")
    ops = report.get("ops")
    if isinstance(ops, int) and not 0 <= hello.get("layer_count", 0) <= ops:
        raise EdgecError(f"the device reports {hello.get('layer_count')} layers but {outdir}'s model has {ops} ops; "
                         f"flash this build again (edgec flash {outdir})")


def _port_bytes(report: dict, kind: str) -> int | None:
    """The bytes the device's input or output buffer holds for a one-input, one-output build (None: several
    ports, whose packing the device reports itself, or unknown)."""
    if report.get("ports"):
        return None
    value = (report.get(kind) or {}).get("bytes")
    return value if isinstance(value, int) else None
