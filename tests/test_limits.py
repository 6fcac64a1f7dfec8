"""Bounded memory: every command on adversarial inputs of a few MB stays under a stated peak (1 GB resident,
edgec's default memory limit) or refuses with one line. A data file is read array by array (only x and y),
row by row up to --limit, its npy headers checked before anything is allocated; a model whose static shapes
need more float memory than the limit is refused before calibration, by inspect too."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import EXAMPLES
from edgec import api
from edgec.data import load_dataset
from edgec.settings import Settings
from edgec.errors import EdgecError

PEAK = 1 << 30
CANCER = EXAMPLES / "cancer_conv1d"

MEASURE = """import json, resource, subprocess, sys
p = subprocess.run([sys.executable, "-m", "edgec", *sys.argv[1:]], capture_output=True, text=True)
print(json.dumps({"code": p.returncode, "err": p.stderr,
                  "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))"""


def _measured(*args) -> dict:
    """Run `edgec ARGS` and return its exit code, stderr and peak resident memory (bytes)."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *map(str, args)], capture_output=True, text=True,
                         timeout=300)
    return json.loads(out.stdout)


def _npz_with_huge_unused_array(path, x, y=None, gib: int = 1) -> None:
    """x (and y) plus a compressible `unused` array of `gib` GiB: a file of a few MB."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, a in (("x", x), ("y", y)):
            if a is not None:
                with z.open(f"{name}.npy", "w") as f:
                    np.lib.format.write_array(f, a)
        with z.open("unused.npy", "w", force_zip64=True) as f:
            n = gib << 28
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
            chunk = bytes(1 << 24)
            for _ in range(4 * n // len(chunk)):
                f.write(chunk)


def _npz_claiming(path, shape) -> None:
    """An npz whose x header claims `shape` but holds a few bytes (a 75 MB file asking for 16 GiB)."""
    with zipfile.ZipFile(path, "w") as z, z.open("x.npy", "w") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": tuple(shape)})
        f.write(bytes(4096))


def _expand_model(path, n: int) -> None:
    """x [1,1,4] -> Expand to [1, n, 4] -> ReduceMean: tiny file, a float tensor of 16 n bytes inside."""
    g = helper.make_graph([helper.make_node("Expand", ["x", "s"], ["e"]),
                           helper.make_node("ReduceMean", ["e"], ["y"], axes=[1], keepdims=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(np.array([1, n, 4], np.int64), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))


def test_commands_on_adversarial_inputs_stay_under_the_peak(tmp_path):
    data = tmp_path / "calib_plus_unused.npz"
    x = np.load(CANCER / "calib.npz")["x"][:16]
    _npz_with_huge_unused_array(data, x)
    huge_model = tmp_path / "expand.onnx"
    _expand_model(huge_model, 200_000_000)                         # 3.2 GB of float in one tensor
    claims = tmp_path / "claims.npz"
    _npz_claiming(claims, (1 << 26, 1, 30))                         # 8 GiB claimed
    runs = {
        "export, unused 1 GiB array": (_measured("export", CANCER / "model.onnx", "--calib", data, "--board", "host",
                                                 "--format", "c", "--sensitivity-samples", "0", "-o", tmp_path / "lib"),
                                       None),
        "calibrate, header claims 8 GiB": (_measured("calibrate", CANCER / "model.onnx", "--calib", claims,
                                                     "--no-cache"), "truncated"),
        "inspect, 3 GB tensor": (_measured("inspect", huge_model), "memory limit"),
    }
    for what, (r, refusal) in runs.items():
        assert r["peak"] < PEAK, (what, r["peak"])
        if refusal is None:
            assert r["code"] == 0, (what, r["err"])
            continue
        last = r["err"].strip().splitlines()[-1]
        assert r["code"] == 2 and "Traceback" not in r["err"] and last.startswith("edgec: error: "), (what, r["err"])
        assert refusal in last, (what, last)
    with pytest.raises(EdgecError, match="memory limit"):        # build and calibrate load it the same way
        api.build(huge_model, data, "host", tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_only_the_rows_asked_for_are_read(tmp_path, monkeypatch):
    path = tmp_path / "d.npz"
    np.savez(path, x=np.arange(40, dtype=np.float32).reshape(10, 4), y=np.arange(10), other=np.zeros(3))
    d = load_dataset(path, (1, 4), limit=3)
    assert d.x.shape == (3, 4) and list(d.y) == [0, 1, 2] and d.x[2, 0] == 8
    monkeypatch.setenv("EDGEC_MEMORY_LIMIT", "100")        # 3 rows of 16 B (+ their float32 copy) fit; 10 don't
    limit = Settings.from_environment().memory_limit
    assert load_dataset(path, (1, 4), limit=2, memory_limit=limit).x.shape == (2, 4)
    with pytest.raises(EdgecError, match="memory limit"):
        load_dataset(path, (1, 4), memory_limit=limit)
    for bad in (0, -1):
        with pytest.raises(EdgecError, match="at least 1"):
            load_dataset(path, (1, 4), limit=bad)
    claims = tmp_path / "claims.npz"
    _npz_claiming(claims, (1 << 30, 4))                 # 16 GiB claimed by a 4 KB file
    monkeypatch.delenv("EDGEC_MEMORY_LIMIT")
    with pytest.raises(EdgecError, match="memory limit"):
        load_dataset(claims, (1, 4))
    np.savez(path, x=np.ones((2, 4), np.complex64))
    with pytest.raises(EdgecError, match="real numbers"):
        load_dataset(path, (1, 4))


def test_environment_values_that_are_no_size_or_no_folder_are_one_line(tmp_path):
    """EDGEC_MEMORY_LIMIT=inf and EDGEC_PLATFORMIO_HOME / EDGEC_CACHE_DIR naming a file used to be tracebacks."""
    from edgec.errors import EdgecError
    from edgec.settings import Settings
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for env, needle in (({"EDGEC_MEMORY_LIMIT": "inf"}, "not a size"), ({"EDGEC_MEMORY_LIMIT": "1e999"}, "not a size"),
                        ({"EDGEC_PLATFORMIO_HOME": str(afile)}, "not a folder"),
                        ({"EDGEC_CACHE_DIR": str(afile)}, "not a folder")):
        with pytest.raises(EdgecError, match=needle):
            Settings.from_environment(env)
    assert afile.read_text() == "mine"
