"""The float tail (edgec/ops/float_tail, runtime_c/edgec_float.c) against TensorFlow Lite Micro: random
single-operator .tflite files (tests/tflite_cases_float.py: an int8 input, a DEQUANTIZE, one float32 kernel)
run by the `tflite-micro` interpreter, edgec's NumPy twin and the generated C on the host. Where TFLM's float
kernel is exact (NEG, FLOOR, CEIL, ROUND, SQUARE, SQRT, FLOOR_DIV, FLOOR_MOD, DEQUANTIZE, EMBEDDING_LOOKUP) the
three agree bit for bit (a NaN is any NaN); where it calls the C library's exp, log, sin or cos (EXP, LOG, SIN,
COS, SOFTMAX, LOG_SOFTMAX, L2_POOL_2D's sqrt of a sum is exact but its squares are summed as TFLM does) they
agree within ULPS units in the last place (the twin rounds the float64 function once; the C library may differ
in the last bit).
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import tflite_cases_float as float_cases
import tflite_oracle as oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

ULPS = 4


def _ordered(v: np.ndarray) -> np.ndarray:
    i = np.ascontiguousarray(v, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def differ(got: np.ndarray, want: np.ndarray, exact: bool) -> int:
    """How many values differ: bit for bit (exact) or by more than ULPS units in the last place; two NaNs agree."""
    got, want = np.asarray(got).reshape(want.shape), np.asarray(want)
    if want.dtype != np.float32:
        return int(np.sum(got != want))
    both_nan = np.isnan(got) & np.isnan(want)
    far = np.abs(_ordered(got) - _ordered(want)) > (0 if exact else ULPS)
    return int(np.sum(far & ~both_nan))


def _with_x(case, rng):
    if case.x is None:
        shape = case.tensors[case.input].shape
        x = rng.integers(-128, 128, (4, *shape)).astype(np.int8)
        x[0] = case.tensors[case.input].zp[0]
        x[1] = rng.choice([-128, 127], shape)
        avoid = getattr(case, "avoid", None)
        if avoid is not None:
            x[x == avoid] = avoid + 1 if avoid < 127 else avoid - 1
        case.x = x
    return case


def check(cases, work) -> list[str]:
    """Every case through TFLM, edgec's twin and its generated C (reference kernels): what differs."""
    work.mkdir(parents=True, exist_ok=True)
    bad, wants, graphs = [], [], []
    for case in cases:
        f = work / f"{case.name}.tflite"
        f.write_bytes(oracle.write(case))
        want = oracle.tflm(f.read_bytes(), case.x)
        g = importer.load(f, case.name)
        got = np.stack([np.asarray(reference.run(g, xi.reshape(-1))).reshape(-1) for xi in case.x])
        exact = case.op in float_cases.EXACT
        if differ(got, want, exact):
            bad.append(f"{case.name} ({case.op}) reference: {differ(got, want, exact)} values")
        wants.append(want)
        graphs.append(g)
    outs = oracle.run_c(graphs, [c.x.reshape(len(c.x), -1).view(np.int8) for c in cases], work / "c", "reference")
    for case, want, got in zip(cases, wants, outs):
        got = np.ascontiguousarray(got).view(want.dtype)
        exact = case.op in float_cases.EXACT
        if differ(got, want, exact):
            bad.append(f"{case.name} ({case.op}) C: {differ(got, want, exact)} values")
    return bad


def test_every_float_kernel_matches_tflm(tmp_path):
    """Each float-only builtin of TFLite Micro, twice, on random shapes, inputs at the zero point and at the int8
    limits; FLOOR_DIV / FLOOR_MOD broadcasting; SOFTMAX / LOG_SOFTMAX; L2_POOL_2D, SAME and VALID."""
    rng = np.random.default_rng(29)
    cases = [_with_x(float_cases.unary_case(rng, f"u{k}_{op}", k % 2 == 1, op)[0], rng)
             for op in float_cases.UNARY for k in range(2)]
    for name, maker in (("fb", float_cases.floor_binary_case), ("sm", float_cases.softmax_case),
                        ("l2", float_cases.l2_pool_case)):
        cases += [_with_x(maker(rng, f"{name}{k}", k % 3 == 2)[0], rng) for k in range(6)]
    bad = check(cases, tmp_path)
    assert not bad, bad


def test_embedding_lookup_matches_tflm(tmp_path):
    """EMBEDDING_LOOKUP: int32 ids as the graph's input, int8 rows copied, or TFLM's hybrid float32 rows."""
    rng = np.random.default_rng(30)
    cases = [float_cases.embedding_case(rng, f"e{k}", k % 3 == 2, k % 2 == 0)[0] for k in range(8)]
    assert {c.tensors[2].dtype for c in cases} == {float_cases.FLOAT32, 9}
    bad = check(cases, tmp_path)
    assert not bad, bad


@pytest.mark.sweep
def test_float_sweep_matches_tflm(tmp_path):
    rng = np.random.default_rng(31)
    makers = list(float_cases.MAKERS.values())
    cases = [_with_x(makers[k % len(makers)](rng, f"s{k}", k % 3 == 2)[0], rng) for k in range(200)]
    cases += [float_cases.embedding_case(rng, f"se{k}", k % 3 == 2)[0] for k in range(40)]
    bad = check(cases, tmp_path)
    assert not bad, bad[:20]


def test_float_operator_on_int8_is_refused_in_one_line(tmp_path, monkeypatch):
    """A float-only builtin on an int8 tensor (TFLite Micro has no kernel for it) is named in the one line."""
    T, Node = oracle.T, oracle.Node
    case = oracle.Case("neg", [T((2, 3), [0.1], [0]), T((2, 3), [0.1], [0])], [Node("NEG", [0], 1)], 0, 1)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "neg.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError) as err:
        importer.load(path, "neg")
    assert "\n" not in str(err.value) and "NEG (operator #0: input 0 is not a float32 tensor" in str(err.value)
