"""The stack frame of the rows8 fully connected kernel (runtime_c/fast/edgec_fully_connected_rows8.c) on the
Cortex-M4, as gcc's -fstack-usage gives it: every MLPerf Tiny AD layer and most .tflite fully connected layers run on
it, so its frame and its assembly passes' (9 registers and 40 B) are the deepest call chain of those models and their
measured stack. The layer's sizes are read after the input's widening: computed first they stayed live across its
loops and the frame was 104 B (AD's measured stack 396 B, against 364 B on the main of 2026-11-27)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime_c"
FRAME_LIMIT = 88       # bytes: 9 saved registers, the call record, the partial block's 8 outputs, 16 B of spills


def frames(source: Path, tmp_path: Path) -> dict[str, int]:
    """Function -> stack bytes of one runtime file built as the Cortex-M4 boards build it (-O2, Thumb, nano)."""
    obj = tmp_path / (source.stem + ".o")
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft", "--specs=nano.specs",
                    "-O2", "-ffunction-sections", "-fdata-sections", "-fstack-usage", "-I", str(RUNTIME),
                    "-I", str(RUNTIME / "fast"), "-c", str(source), "-o", str(obj)], check=True)
    text = obj.with_suffix(".su").read_text()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r":(\w+)\t(\d+)\t", text)}


def test_rows8_frame_on_the_cortex_m4(tmp_path):
    got = frames(RUNTIME / "fast" / "edgec_fully_connected_rows8.c", tmp_path)
    assert 0 < got["edgec_fully_connected_rows8_s8"] <= FRAME_LIMIT, got
