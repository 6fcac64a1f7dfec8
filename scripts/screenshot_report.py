#!/usr/bin/env python3
"""Open an edgec report.html in headless Chromium and save a screenshot, then check that the plots were
drawn (the PNG holds the plots' colours).  Needs the `chromium` package (apt-get install chromium).

    python scripts/screenshot_report.py build/digits/report.html [out.png]

Exit status 0 when the screenshot holds every plot colour, 1 otherwise, 2 when Chromium is missing.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# colours the report's plots draw with (edgec/svgplot.py): bars/histogram, medians/marks, confusion cells
PLOT_COLOURS = {"blue bars": (0x3B, 0x75, 0xAF), "orange marks": (0xE1, 0x81, 0x2C)}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--hide-scrollbars"]


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def screenshot(html: Path, png: Path, width: int = 1100, height: int = 5200, timeout: float = 120) -> Path:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="edgec-chromium-") as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={png.resolve()}", html.resolve().as_uri()]
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png


def colour_counts(path: Path, colours: dict[str, tuple[int, int, int]], tol: int = 6) -> dict[str, int]:
    """How many pixels of the screenshot are (within tol) each colour (needs Pillow and NumPy)."""
    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(path).convert("RGB"), np.int16)
    return {name: int(np.all(np.abs(rgb - np.array(c, np.int16)) <= tol, axis=-1).sum())
            for name, c in colours.items()}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    html = Path(argv[0])
    png = Path(argv[1]) if len(argv) > 1 else html.with_suffix(".png")
    if chromium() is None:
        print("chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 2
    screenshot(html, png)
    counts = colour_counts(png, PLOT_COLOURS)
    print(f"{png}: " + ", ".join(f"{k} {v} px" for k, v in counts.items()))
    return 0 if all(v > 50 for v in counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
