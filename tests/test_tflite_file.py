""".tflite fields as a hostile file sets them (edgec/frontend/tflite_file.py): scales, zero points, shapes and
buffers of any tensor of a valid model changed to invalid values are refused with one line naming the tensor,
never a traceback, C that does not compile or a crash in TFLite Micro later; the import holds the file's bytes
once (memory bounded by twice the file, not a multiple of it) and a file truncated meanwhile is no crash."""
from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tflite_oracle as oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer


def _fc() -> oracle.Case:
    case, _ = oracle.fc_case(np.random.default_rng(7), "fc")
    return case


def _with(case: oracle.Case, k: int, **change) -> oracle.Case:
    tensors = list(case.tensors)
    tensors[k] = dataclasses.replace(tensors[k], **change)
    return dataclasses.replace(case, tensors=tensors)


BAD_SCALES = [0.0, -1.0, -1e-9, math.nan, math.inf, -math.inf]


def _mutations():
    """(tensor index, field changes, what the error line says) of the FULLY_CONNECTED case: input 0, weights
    1 (constant), bias 2 (int32 constant), output 3."""
    k = st.integers(0, 3)
    scale = st.builds(lambda k, s: (k, {"scale": [s]}, "scale"), k, st.sampled_from(BAD_SCALES))
    zp8 = st.builds(lambda k, z: (k, {"zp": [z]}, "zero point"), st.sampled_from([0, 3]),
                    st.one_of(st.integers(-2**40, -129), st.integers(128, 2**40)))
    shape = st.builds(lambda k, d: (k, {"shape": (d, 4)}, "shape"), k, st.integers(-2**31, -1))
    huge = st.builds(lambda k, d: (k, {"shape": (d, d)}, "shape"), st.sampled_from([0, 3]),
                     st.integers(2**16, 2**30))
    return st.one_of(scale, zp8, shape, huge)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_mutations())
def test_invalid_tensor_fields_are_one_line_naming_the_tensor(tmp_path_factory, mutation):
    k, change, needle = mutation
    path = tmp_path_factory.mktemp("tfl") / "m.tflite"
    path.write_bytes(oracle.write(_with(_fc(), k, **change)))
    with pytest.raises(EdgecError) as err:
        importer.load(path, "m")
    line = str(err.value)
    assert "\n" not in line and f"tensor 't{k}'" in line and needle in line, line


@pytest.mark.parametrize("k, data, needle", [
    (1, np.zeros(3, np.int8), "holds 3 bytes"),                # weights shorter than their shape
    (2, np.zeros(1000, np.int32), "holds 4,000 bytes"),        # a bias longer than its shape
])
def test_buffers_of_the_wrong_size_are_one_line(tmp_path, k, data, needle):
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_with(_fc(), k, data=data)))
    with pytest.raises(EdgecError, match=needle) as err:
        importer.load(path, "m")
    assert f"tensor 't{k}'" in str(err.value)


def test_per_channel_scales_must_match_their_axis(tmp_path):
    case = _fc()
    n_out = case.tensors[1].shape[0]
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_with(case, 1, scale=[0.01] * (n_out + 1), zp=[0] * (n_out + 1))))
    with pytest.raises(EdgecError, match="scales along axis 0"):
        importer.load(path, "m")


def test_a_bias_with_its_filters_axis_imports(tmp_path):
    """Old converters wrote a per-channel bias with its filter's quantized dimension (TFLite Micro's
    person_detect: axis 3 on a [8] bias); TFLite Micro reads it, and edgec must too (it refused the file)."""
    case = _fc()
    n_out = case.tensors[1].shape[0]
    w_scale = case.tensors[1].scale[0]
    case = _with(case, 1, scale=[w_scale] * n_out, zp=[0] * n_out)
    bias_scale = case.tensors[0].scale[0] * w_scale
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_with(case, 2, scale=[bias_scale] * n_out, zp=[0] * n_out, axis=3)))
    assert importer.load(path, "m").ops


def test_a_valid_model_still_imports(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_fc()))
    assert importer.load(path, "m").ops


MEASURE = r"""
import sys
sys.path[:0] = {paths!r}
from edgec.frontend import tflite as importer
g = importer.load({model!r}, "big")
print([int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0])
"""   # VmHWM: this process's own peak (ru_maxrss keeps a forking parent's)


def test_import_memory_is_bounded_by_the_file(tmp_path):
    """A 48 MB .tflite (one FULLY_CONNECTED of 48 M weights): the import's peak memory over the interpreter's
    own stays within 2x the file (it was ~24x: the file read whole, each constant copied, the float weights
    requantized in float64; then 5.2x: the mapped file and float32 weights; now the file's bytes once, the
    weights views of them, the float weights made only when read)."""
    n_out, n_in = 6144, 8192
    rng = np.random.default_rng(0)
    case = _fc()
    w = rng.integers(-127, 128, (n_out, n_in), dtype=np.int8)
    case = dataclasses.replace(case, tensors=[
        dataclasses.replace(case.tensors[0], shape=(1, n_in)), dataclasses.replace(case.tensors[1], shape=(n_out, n_in), data=w),
        dataclasses.replace(case.tensors[2], shape=(n_out,), data=np.zeros(n_out, np.int32)),
        dataclasses.replace(case.tensors[3], shape=(1, n_out))])
    path = tmp_path / "big.tflite"
    path.write_bytes(oracle.write(case))
    size = path.stat().st_size
    paths = [p for p in sys.path if p]
    base = subprocess.run([sys.executable, "-c", MEASURE.replace("g = importer.load({model!r}, \"big\")", "")
                           .format(paths=paths, model=str(path))], capture_output=True, text=True, check=True)
    run = subprocess.run([sys.executable, "-c", MEASURE.format(paths=paths, model=str(path))],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    extra = int(run.stdout.split()[-1]) - int(base.stdout.split()[-1])
    print(f"file {size / 1e6:.1f} MB, import peak {extra / 1e6:.1f} MB above the interpreter's")
    assert extra <= 2 * size, f"import used {extra / size:.1f}x the file's size"


TRUNCATE = r"""
import sys
sys.path[:0] = {paths!r}
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer, tflite_file

read = tflite_file.read
def read_then_truncate(path):
    buf = read(path)
    with open(path, "r+b") as f:          # another program truncates the file while edgec imports it
        f.truncate({keep})
    return buf
tflite_file.read = read_then_truncate
try:
    importer.load({model!r}, "m")
    print("imported")
except EdgecError as e:
    print("refused:", e)
"""


@pytest.mark.parametrize("keep", [0, 100])
def test_a_file_truncated_during_the_import_is_no_crash(tmp_path, keep):
    """A .tflite truncated by another program while edgec imports it: a mapped file's missing pages killed edgec
    with SIGBUS (no clean-up, no message); the import now reads what the file held when it was opened."""
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_fc()))
    paths = [p for p in sys.path if p]
    run = subprocess.run([sys.executable, "-c", TRUNCATE.format(paths=paths, model=str(path), keep=keep)],
                         capture_output=True, text=True)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip() == "imported", run.stdout


def test_a_file_shorter_than_when_opened_is_one_line(tmp_path, monkeypatch):
    """The file shrinks between its size being taken and its bytes read: one line, not a damaged-flatbuffer
    guess or a crash."""
    import os
    from edgec.frontend import tflite_file

    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(_fc()))
    real = os.fstat

    def larger(fd):
        st = real(fd)
        return os.stat_result((*st[:6], st.st_size + 4096, *st[7:]))
    monkeypatch.setattr(tflite_file.os, "fstat", larger)
    with pytest.raises(EdgecError, match="changed while edgec read it") as err:
        importer.load(path, "m")
    assert "\n" not in str(err.value)


def test_a_file_larger_than_a_flatbuffer_is_refused_before_it_is_read(tmp_path):
    """A (sparse) file over 2 GiB with the TFL3 identifier: refused from its size, nothing read."""
    path = tmp_path / "huge.tflite"
    with open(path, "wb") as f:
        f.write(b"\0\0\0\0TFL3")
        f.truncate((1 << 31) + 1)
    with pytest.raises(EdgecError, match="more than a TFLite flatbuffer can hold") as err:
        importer.load(path, "m")
    assert "\n" not in str(err.value)


def test_dequantized_weights_are_the_float_weights_they_stand_for():
    """What the graph keeps instead of float32 weights reads as q x scale everywhere the float paths use it."""
    from edgec.frontend.tflite_file import DequantizedWeights
    q = np.arange(-12, 12, dtype=np.int8).reshape(4, 6)
    s = np.array([0.5, 0.25, 2.0, 1.0], np.float32).reshape(4, 1)
    w = DequantizedWeights(q, s)
    want = q.astype(np.float32) * s
    assert w.shape == (4, 6) and w.ndim == 2 and w.size == 24 and w.dtype == np.float32 and len(w) == 4
    assert np.array_equal(np.asarray(w), want) and np.asarray(w, np.float64).dtype == np.float64
    assert np.array_equal(w / 2, want / 2) and np.array_equal(np.abs(w), np.abs(want))
    assert np.array_equal(w[1], want[1]) and np.array_equal(w.T, want.T)
    assert np.array_equal(w.astype(np.float64), want) and np.array_equal(w.reshape(-1), want.reshape(-1))
