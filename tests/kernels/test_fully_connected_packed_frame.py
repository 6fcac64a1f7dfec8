"""The stack frame of the packed fully connected kernel (runtime_c/fast/edgec_fully_connected_packed.c) on the
Cortex-M4, as gcc's -fstack-usage gives it: its path for inputs over 4 * EDGEC_FC_WIDEN_GROUPS
(edgec_fully_connected_packed_chunked_s8) is an entry of its own, so its locals are not in the frame of the one-pass
path every other layer runs in (inlined: 128 B, and TFLite Micro's hello_world measured 36 B more stack); the one-pass
path reads its params after its calls (kept live across them: 80 B); the entry that chooses tail-calls either."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime_c"
FRAME_LIMIT = 72       # bytes: 9 saved registers and edgec_fc_blocks' 5 stack arguments, 8-byte aligned


def test_packed_frame_on_the_cortex_m4(tmp_path):
    obj = tmp_path / "edgec_fully_connected_packed.o"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft", "--specs=nano.specs",
                    "-O2", "-ffunction-sections", "-fdata-sections", "-fstack-usage", "-I", str(RUNTIME),
                    "-I", str(RUNTIME / "fast"), "-c", str(RUNTIME / "fast" / "edgec_fully_connected_packed.c"),
                    "-o", str(obj)], check=True)
    got = {m.group(1): int(m.group(2)) for m in re.finditer(r":(\w+)\t(\d+)\t", obj.with_suffix(".su").read_text())}
    assert 0 < got["edgec_fully_connected_packed_onepass_s8"] <= FRAME_LIMIT, got
    assert 0 < got["edgec_fully_connected_packed_s8"] <= 8, got           # the chooser: two tail calls
    assert "edgec_fully_connected_packed_chunked_s8" in got, got          # out of line: a function of its own
