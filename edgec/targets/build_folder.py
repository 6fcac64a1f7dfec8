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
    """Refuse a device whose firmware was built from another model than the build folder's."""
    if hello.get("model_hash") != report["model_hash"]:
        raise EdgecError(f"the device runs model {hello.get('model')} ({hello.get('model_hash')}) but {outdir} holds "
                         f"{report['model']} ({report['model_hash']}); flash this build first (edgec flash {outdir})")
