"""The float tail (edgec/ops/float_tail, runtime_c/edgec_float.c) against TensorFlow Lite Micro: random
single-operator .tflite files (tests/tflite_cases_float.py: an int8 input, a DEQUANTIZE, one float32 kernel;
EMBEDDING_LOOKUP of int32 ids) run by the `tflite-micro` interpreter, edgec's NumPy twin and the generated C on
the host agree bit for bit (ULPS = 0; two NaNs agree): the exact operations (NEG, FLOOR, CEIL, ROUND, SQUARE,
SQRT, FLOOR_DIV, FLOOR_MOD, DEQUANTIZE, the lookup) by construction, and exp, log, sin, cos (EXP, LOG, SIN, COS,
the softmaxes) because the twin calls the host's C library, as the generated C and TFLM's x86 build do. A
device's C library may differ from the host's in their last bits (docs/tflite-operators.md).
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

ULPS = 0


def _ordered(v: np.ndarray) -> np.ndarray:
    i = np.ascontiguousarray(v, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def differ(got: np.ndarray, want: np.ndarray) -> int:
    """How many values differ by more than ULPS units in the last place (0: bit for bit); two NaNs agree."""
    got, want = np.asarray(got).reshape(want.shape), np.asarray(want)
    if want.dtype != np.float32:
        return int(np.sum(got != want))
    both_nan = np.isnan(got) & np.isnan(want)
    far = np.abs(_ordered(got) - _ordered(want)) > ULPS
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


def run_c(graphs, xs, work):
    """The generated C of the models (reference kernels) in one host program linking only the runtime files they
    call (the whole runtime is most of the compile time)."""
    from edgec import cheader, ports
    from edgec.codegen import cmodel
    from edgec.plan import planner

    import hostrun

    models, texts = [], []
    for g in graphs:
        g = g.replace_ops(planner.schedule(g))
        cmodel.generate(g, planner.plan(g), work / g.name, g.name, runtime=False)
        texts.append((work / g.name / f"{g.name}.c").read_text())
        models.append(hostrun.HostModel(g.name, work / g.name, sum(g.tensors[t].nbytes for t in g.outputs),
                                        ports.multi(g)))
    runtime = [cheader.runtime_dir() / f for f in cheader.files_called(texts) if f.endswith(".c")]
    return hostrun.run_models(models, xs, work, ["-O1", f"-I{cheader.runtime_dir()}"], runtime)


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
        if differ(got, want):
            bad.append(f"{case.name} ({case.op}) reference: {differ(got, want)} values")
        wants.append(want)
        graphs.append(g)
    outs = run_c(graphs, [c.x.reshape(len(c.x), -1).view(np.int8) for c in cases], work / "c")
    for case, want, got in zip(cases, wants, outs):
        got = np.ascontiguousarray(got).view(want.dtype)
        if differ(got, want):
            bad.append(f"{case.name} ({case.op}) C: {differ(got, want)} values")
    return bad


def random_cases(rng, n: int, prefix: str) -> list:
    """n cases of every generator in turn, every third with edge values; an EMBEDDING_LOOKUP in every fifth."""
    makers = list(float_cases.MAKERS.values())
    out = []
    for k in range(n):
        if k % 5 == 4:
            out.append(float_cases.embedding_case(rng, f"{prefix}e{k}", k % 3 == 2)[0])
        else:
            out.append(_with_x(makers[k % len(makers)](rng, f"{prefix}{k}", k % 3 == 2)[0], rng))
    return out


def test_float_kernels_match_tflm(tmp_path):
    """Each float-only builtin of TFLite Micro once (random shapes, inputs at the zero point and at the int8
    limits), FLOOR_DIV / FLOOR_MOD broadcasting a constant and a computed divisor, SOFTMAX and LOG_SOFTMAX,
    L2_POOL_2D, EMBEDDING_LOOKUP into int8 and into TFLM's hybrid float32 rows, and a QUANTIZE out of the float
    tail: bit for bit on the host."""
    rng = np.random.default_rng(29)
    cases = [_with_x(float_cases.unary_case(rng, f"u_{op}", op in ("EXP", "ROUND"), op)[0], rng)
             for op in float_cases.UNARY]
    cases += [_with_x(float_cases.floor_binary_case(rng, f"fb{k}", k == 1)[0], rng) for k in range(3)]
    cases += [_with_x(float_cases.softmax_case(rng, f"sm{k}")[0], rng) for k in range(2)]
    cases += [_with_x(float_cases.l2_pool_case(rng, f"l2{k}", k == 1)[0], rng) for k in range(2)]
    cases += [float_cases.embedding_case(rng, f"e{k}", k == 1, k % 2 == 0)[0] for k in range(2)]
    cases += [_with_x(float_cases.quantize_case(rng, f"q{k}", k == 1)[0], rng) for k in range(3)]
    assert {c.op for c in cases} >= set(float_cases.UNARY) | {"SOFTMAX", "LOG_SOFTMAX", "L2_POOL_2D"}
    assert {c.tensors[2].dtype for c in cases if c.op == "EMBEDDING_LOOKUP"} == {float_cases.FLOAT32, 9}
    bad = check(cases, tmp_path)
    assert not bad, bad


@pytest.mark.sweep
def test_float_sweep_matches_tflm(tmp_path):
    bad = []
    for batch in range(3):
        bad += check(random_cases(np.random.default_rng(310 + batch), 120, f"b{batch}_"), tmp_path / str(batch))
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


def test_device_tolerance_only_where_the_c_library_computes(tmp_path):
    """device_ulps: DEVICE_ULPS for a graph whose float tail calls exp, log, sin or cos (a softmax, EXP), 0 (bit
    for bit) for one computing exactly (NEG, FLOOR_DIV, ...)."""
    from edgec.ops import float_tail

    rng = np.random.default_rng(5)
    exact, libm = float_cases.unary_case(rng, "neg", op="NEG")[0], float_cases.softmax_case(rng, "sm")[0]
    for case, want in ((exact, 0), (libm, float_tail.DEVICE_ULPS)):
        path = tmp_path / f"{case.name}.tflite"
        path.write_bytes(oracle.write(case))
        assert float_tail.device_ulps(importer.load(path, case.name)) == want


def test_float_split_matches_tflm(tmp_path):
    """SPLIT and SPLIT_V of a float32 tensor (after a DEQUANTIZE, each part QUANTIZEd: what TFLiteConverter makes of
    an unrolled Keras LSTM's first gate projection), random axes and parts, several int8 outputs: bit for bit."""
    rng = np.random.default_rng(38)
    cases = [_with_x(float_cases.split_case(rng, f"sp{k}", k == 1, k == 2)[0], rng) for k in range(3)]
    bad = check(cases, tmp_path)
    assert not bad, bad
