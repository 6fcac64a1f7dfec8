"""CAST of quantized int8 and int16 activations (edgec/ops/signal/integer.py import_cast): the raw values
converted as C converts them (TFLite Micro's cast.cc static_cast: int16 to int8 keeps the low byte, int8 to
int16 or int32 widens), random shapes and values over the whole range, against TFLite Micro's interpreter, the
reference and the generated C."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import tflite_oracle as oracle
from tflite_oracle import INT8, INT32, Case, Node, T

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)
INT16 = 7
LIMITS = {INT8: (-128, 127), INT16: (-32768, 32767)}


def cast_case(rng, name: str, src: int, dst: int) -> Case:
    shape = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(1, 4))))
    q = {INT8: ([0.05], [int(rng.integers(-20, 20))]), INT16: ([0.001], [0]), INT32: ([], [])}
    case = Case(name, [T(shape, *q[src], src), T(shape, *q[dst], dst)], [Node("CAST", [0], 1)], 0, 1)
    lo, hi = LIMITS[src]
    x = rng.integers(lo, hi + 1, (4, *shape))
    x[0].flat[0], x[1].flat[-1] = lo, hi
    case.x = x.astype({INT8: np.int8, INT16: np.int16}[src])
    return case


def test_cast_of_quantized_int8_and_int16_matches_tflm(tmp_path):
    rng = np.random.default_rng(16)
    pairs = [(INT16, INT8), (INT16, INT32), (INT8, INT16), (INT8, INT32)]
    cases = [cast_case(rng, f"cast{k}_{s}_{d}", s, d) for k, (s, d) in enumerate(pairs)]
    bad = oracle.check(cases, tmp_path, paths=("reference",))
    assert not bad, bad
