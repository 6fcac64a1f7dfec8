"""TensorFlow Lite Micro as the independent oracle of edgec's kernels: random single-operator INT8 .tflite models
(tests/tflite_oracle.py: random shapes, strides, SAME/VALID padding, fused activations, odd and large channel
counts, zero points at the int8 limits, saturated and dead-channel biases, per-tensor and per-channel weights,
softmax betas) run by the `tflite-micro` interpreter and by edgec's NumPy reference, reference C kernels and
fast kernels (portable C and the Arm DSP path with its intrinsics emulated) must agree bit for bit.

The default run is a small fixed sample; the long sweep is `python tests/tflite_oracle.py --cases 3000`
(or `pytest -m sweep tests/test_tflite_oracle.py`, 1000 cases).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import tflite_cases_arith as arith_cases
import tflite_cases_elementwise as elementwise_cases
import tflite_cases_weighted as weighted_cases
import tflite_cases_movement as movement_cases
import tflite_oracle as oracle

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)


def test_default_sample_matches_tflm(tmp_path):
    cases = oracle.cases(seed=21, n=2 * len(oracle.MAKERS))
    assert {c.name.rsplit("_", 1)[-1] for c in cases} >= {"conv", "depthwise", "connected", "pool", "softmax", "add"}
    bad = oracle.check(cases, tmp_path)
    assert not bad, bad


@pytest.mark.parametrize("family", [movement_cases, elementwise_cases, weighted_cases, arith_cases],
                         ids=["movement", "elementwise", "weighted", "arith"])
def test_operator_family_sample_matches_tflm(tmp_path, family):
    """TRANSPOSE, BROADCAST_TO, SLICE, STRIDED_SLICE, GATHER, DEPTH_TO_SPACE/SPACE_TO_DEPTH, MIRROR_PAD, SPLIT,
    SPLIT_V, UNPACK/PACK, CONCATENATION of a constant, the resizes (tests/tflite_cases_movement.py); ADD, SUB,
    MUL, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE with constant and broadcast operands, REDUCE_MAX/MIN and SUM, ABS,
    LEAKY_RELU, ELU, PRELU, RSQRT (tests/tflite_cases_elementwise.py); BATCH_MATMUL, TRANSPOSE_CONV
    (tests/tflite_cases_weighted.py); SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND and the arithmetic of issue 29
    (tests/tflite_cases_arith.py): two random cases of each generator."""
    cases = oracle.cases(seed=29, n=2 * len(family.MAKERS), makers=family.MAKERS)
    assert {c.name.split("_", 2)[-1] for c in cases} == set(family.MAKERS)
    bad = oracle.check(cases, tmp_path)
    assert not bad, bad


def test_a_grouped_conv2d_matches_tflm(tmp_path):
    """A grouped CONV_2D (Keras Conv2D(groups=g): filters of fewer input channels than the input has) was read as
    an ordinary convolution: `edgec inspect` called it supported and the build's reference stopped with "cannot
    reshape array" (keras_grouped_shuffle_cifar of the corpus). It is edgec's `group_conv2d` now, or up to 8 groups
    a conv2d over block-diagonal weights (the fast kernels: 21 instructions a MAC on group_conv2d's portable kernel),
    both bit-identical with TFLite Micro on random groups, shapes, strides and paddings."""
    from edgec.frontend import tflite as importer
    from edgec.ops.conv.importers import BLOCK_DIAGONAL_GROUPS

    cases = oracle.cases(seed=44, n=8, makers={"grouped": weighted_cases.grouped_conv_case})
    kinds = set()
    for k, case in enumerate(cases):
        f = tmp_path / f"grouped{k}.tflite"
        f.write_bytes(oracle.write(case))
        w, x = case.tensors[1].shape, case.tensors[0].shape
        groups = x[-1] // w[-1]
        (op,) = importer.load(f, "m").ops
        assert op.kind == ("conv2d" if groups <= BLOCK_DIAGONAL_GROUPS else "group_conv2d"), groups
        kinds.add(op.kind)
    assert kinds == {"conv2d", "group_conv2d"}
    bad = oracle.check(cases, tmp_path / "check")
    assert not bad, bad


def test_constant_operands_become_tables_bit_identical_to_tflm(tmp_path):
    """A Keras Rescaling (MUL by one constant, then ADD of one; as TFLiteConverter writes it first in MobileNetV3)
    and a per-channel constant SUB (either operand first) run as `lut` tables (edgec/ops/binary/tflite.py
    `_as_tables`), not the broadcasting kernel, bit-identical with TFLite Micro at the int8 limits; a fused RELU or
    RELU6 (keras_tcn_kws's per-channel ADD) is clamped inside the tables."""
    from edgec.frontend import tflite as importer

    rng = np.random.default_rng(37)
    cases = []
    for k, (xz, first) in enumerate(((-128, False), (127, True), (5, False))):
        c = rng.integers(-128, 128, (4,)).astype(np.int8)
        tensors = [oracle.T((1, 5, 3, 4), [0.02], [xz]), oracle.T((1,), [0.004], [-128], data=np.array([127], np.int8)),
                   oracle.T((1, 5, 3, 4), [0.011], [-3]), oracle.T((), [0.5], [0], data=np.array(-128, np.int8)),
                   oracle.T((1, 5, 3, 4), [0.07], [9]), oracle.T((4,), [0.03], [2], data=c),
                   oracle.T((1, 5, 3, 4), [0.05], [-20])]
        opts = lambda op, f=0: (f"{op.title()}Options", dict(FusedActivationFunction=f))     # noqa: E731
        nodes = [oracle.Node("MUL", [1, 0] if first else [0, 1], 2, opts("MUL")),
                 oracle.Node("ADD", [2, 3], 4, opts("ADD", (1, 3, 0)[k])),    # fused RELU / RELU6: in the tables
                 oracle.Node("SUB", [5, 4] if first else [4, 5], 6, opts("SUB", (3, 0, 1)[k]))]
        x = rng.permutation(np.arange(300) % 256 - 128).astype(np.int8).reshape(5, 1, 5, 3, 4)   # every int8 value
        cases.append(oracle.Case(f"tables{k}", tensors, nodes, 0, 6, x))
        model = tmp_path / f"tables{k}.tflite"
        model.write_bytes(oracle.write(cases[-1]))
        assert [op.kind for op in importer.load(model, "m").ops] == ["lut"] * 3
    bad = oracle.check(cases, tmp_path / "check")
    assert not bad, bad


def test_tile_matches_numpy(tmp_path):
    """TILE (not registered by TFLite Micro: numpy.tile of the bytes is its definition)."""
    for name, (maker, expected) in movement_cases.NUMPY_MAKERS.items():
        cases = oracle.cases(seed=29, n=4, makers={name: maker})
        bad = oracle.check(cases, tmp_path / name, expect=expected)
        assert not bad, bad


def test_int16_tile_is_refused_in_one_line(tmp_path, monkeypatch):
    """int16 TILE: TFLite Micro registers no TILE and TF Lite 2.21's kernel refuses int16 ("Type 'INT16' is not
    supported by tile"), so there is nothing to match; edgec names the operator and the type."""
    from edgec.errors import EdgecError
    from edgec.frontend import tflite as importer

    monkeypatch.chdir(tmp_path)
    case = oracle.Case("tile16", [oracle.T((1, 2, 3), [0.01], [0], 7),
                                  oracle.T((3,), [], [], oracle.INT32, np.array([2, 1, 2], np.int32)),
                                  oracle.T((2, 2, 6), [0.01], [0], 7)],
                       [oracle.Node("TILE", [0, 1], 2, ("TileOptions", {}))], 0, 2)
    Path("tile16.tflite").write_bytes(oracle.write(case))
    with pytest.raises(EdgecError) as err:
        importer.load("tile16.tflite", "tile16")
    msg = str(err.value)
    assert "\n" not in msg and "TILE (operator #0" in msg and "int16" in msg, msg


def test_space_to_batch_padding_matches_numpy(tmp_path):
    """SPACE_TO_BATCH_ND with paddings: TFLite Micro pads with an offset it never sets (arena garbage), so the
    padded cases are checked against NumPy's definition (the zero point as padding)."""
    for name, (maker, expected) in arith_cases.NUMPY_MAKERS.items():
        cases = oracle.cases(seed=29, n=6, makers={name: maker})
        bad = oracle.check(cases, tmp_path / name, expect=expected)
        assert not bad, bad


def test_oracle_sees_a_wrong_kernel(tmp_path):
    """The comparison can fail: edgec's own LUT softmax (what its ONNX softmax runs) rounds a few outputs in
    a million differently from TFLite's fixed-point one. On rows where the two differ, TFLM sides with the
    TFLite variant a .tflite model gets, and against the LUT one."""
    from edgec.frontend import tflite as importer
    from edgec.ops import softmax
    from edgec.quant import reference

    scale, cols = float(np.float32(0.1)), 12
    x = np.random.default_rng(3).integers(-128, 128, (200000, cols)).astype(np.int8)
    lut = softmax.softmax_s8(x, softmax.softmax_table(scale, 1.0))
    mult, shift, diff_min = softmax.tflite_softmax_scaling(scale, 1.0)
    p = dict(rows=len(x), cols=cols, diff_min=diff_min)
    exact = softmax.softmax_tflite_s8(p, softmax.tflite_exp_table(mult, shift, diff_min), x).reshape(x.shape)
    rows = x[np.any(lut != exact, axis=1)]
    assert len(rows) >= 1
    case = oracle.Case("rows", [oracle.T((len(rows), cols), [scale], [0]), oracle.T((len(rows), cols), [1 / 256], [-128])],
                       [oracle.Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=1.0)))], 0, 1)
    model = tmp_path / "rows.tflite"
    model.write_bytes(oracle.write(case))
    want = oracle.tflm(model.read_bytes(), rows[None]).reshape(rows.shape)
    got = np.asarray(reference.run(importer.load(model, "rows"), rows.reshape(-1))).reshape(rows.shape)
    assert np.array_equal(got, want)
    assert not np.array_equal(softmax.softmax_s8(rows, softmax.softmax_table(scale, 1.0)), want)


@pytest.mark.sweep
def test_thousand_cases_match_tflm(tmp_path):
    bad = []
    for batch in range(5):
        bad += oracle.check(oracle.cases(seed=1000 + batch, n=200), tmp_path / str(batch))
    for family in (movement_cases, elementwise_cases, weighted_cases, arith_cases):
        for batch in range(2):
            bad += oracle.check(oracle.cases(seed=2000 + batch, n=150, makers=family.MAKERS),
                                tmp_path / f"{family.__name__}{batch}")
    assert not bad, bad[:20]


def test_mean_matches_tflm(tmp_path):
    """TFLite's MEAN (Keras GlobalAveragePooling2D, and any axes, keep_dims or not, the input's quantization
    kept or changed, axes out of order and negative; a transpose first where the axes are not contiguous):
    bit-identical with TFLite Micro on the reference and every C path."""
    cases = oracle.cases(seed=29, n=18, kinds=["mean"])
    assert any(c.tensors[0].scale != c.tensors[2].scale for c in cases)
    bad = oracle.check(cases, tmp_path)
    assert not bad, bad


def test_operators_of_issue_29_refuse_what_they_cannot_honour_in_one_line(tmp_path, monkeypatch):
    """LOG_SOFTMAX quantized unlike TFLite's (16/256, 127), ARG_MAX with int64 indices, ADD_N of inputs quantized
    apart, L2_NORMALIZATION with a fused activation and a comparison of an input scaled 1 or more are named in one
    error, each with its reason."""
    from edgec.errors import EdgecError
    from edgec.frontend import tflite as importer

    T, Node, BOOL, INT64 = oracle.T, oracle.Node, 6, 4
    tensors = [T((2, 4), [0.1], [0]), T((2, 4), [0.1], [0]), T((1,), [1.0], [0], oracle.INT32, np.array([1], np.int32)),
               T((2,), [1.0], [0], INT64), T((2, 4), [0.2], [1]), T((2, 4), [0.1], [0]), T((2, 4), [1 / 128], [0]),
               T((2, 4), [1.5], [0]), T((2, 4), [1.0], [0], BOOL)]
    nodes = [Node("LOG_SOFTMAX", [0], 1), Node("ARG_MAX", [0, 2], 3, ("ArgMaxOptions", dict(OutputType=INT64))),
             Node("ADD_N", [0, 4], 5), Node("L2_NORMALIZATION", [0], 6, ("L2NormOptions", dict(FusedActivationFunction=1))),
             Node("GREATER", [7, 0], 8)]
    monkeypatch.chdir(tmp_path)        # a short path: the one line is cut at 600 characters, the path included
    path = Path("refused.tflite")
    path.write_bytes(oracle.write(oracle.Case("refused", tensors, nodes, [0, 4, 7], [1, 3, 5, 6, 8])))
    with pytest.raises(EdgecError) as err:
        importer.load(path, "refused")
    msg = str(err.value)
    assert "\n" not in msg and "cannot honour 5 operator(s)" in msg, msg
    for what in ("LOG_SOFTMAX (operator #0: int8 log-softmax output quantized", "ARG_MAX (operator #1: int64 indices",
                 "ADD_N (operator #2: inputs of different shapes or quantizations",
                 "L2_NORMALIZATION (operator #3: an input above 4-D or a fused activation",
                 "GREATER (operator #4: input 0 has scale 1.5"):
        assert what in msg, (what, msg)
