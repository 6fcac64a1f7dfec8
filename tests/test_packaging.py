"""edgec installed from a wheel finds its templates, boards and C runtime (not only in a checkout)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

from conftest import EXAMPLES, REPO


def test_wheel_carries_data_and_builds(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = dist.glob("edgec-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    for folder in ("templates/model.c.j2", "boards/qemu-cortex-m4.toml", "runtime_c/edgec_nn.h",
                   "runtime_c/fast/edgec_conv2d_im2col.c", "runtime_c/harness/edgec_link.c",
                   "boards/platforms/edgec-qemu/builder/main.py"):
        assert (site / "edgec" / "_data" / folder).is_file(), folder
    (entry_points,) = site.glob("edgec-*.dist-info/entry_points.txt")
    assert "[pytest11]\nedgec = edgec.pytest_plugin" in entry_points.read_text()   # pip install edgec: the plugin
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run([sys.executable, "-c", "import edgec.resources as r; print(r.resource_dir('boards'))"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(site)), where.stdout
    out = tmp_path / "build"
    proc = subprocess.run([sys.executable, "-m", "edgec", "build", str(EXAMPLES / "cancer_conv1d" / "model.onnx"),
                           "--calib", str(EXAMPLES / "cancer_conv1d" / "calib.npz"), "--board", "host", "-o", str(out)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "build-report.json").read_text())
    assert report["memory"]["flash_bytes"] > 0
