"""GATHER of an int8 activation at int32 indices known only at run time (edgec/ops/gather.py, kind gather_ids,
runtime_c/edgec_gather.c): random two-input single-operator files (the values and the indices both graph inputs)
through TFLite Micro's interpreter (tests/tflite_oracle.py), edgec's NumPy reference and the generated C (plain
and under ASan/UBSan) byte for byte. The shapes cover what TFLite Micro's gather_test.cc covers: axis 0, inner and
last (given negative too), scalar and 2-D indices, batch_dims 1 and 2 (given negative too), a repeated index, the
first and last index of the axis. An index outside the axis fails the inference in all three; int16 values
(TFLite Micro's GATHER takes int8 and float32 only) are refused in one line.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess

import numpy as np
import pytest

import tflite_oracle as oracle
from tflite_oracle import INT32, Case, Node, T
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.ops.float_tail import IndexOutside
from edgec.quant import reference

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)
INT16 = 7


def gather_case(rng, name: str, rank: int | None = None, batch_dims: int | None = None) -> Case:
    """GATHER of x [1, ...] (rank 2..4) along a random axis at indices of shape x.shape[:batch_dims] + 0..2 more dims
(their first axis 1, as every port's of a model with several inputs: edgec/ports.py);
    axis and batch_dims written negative half the time; 4 samples, the axis' first and last index among them."""
    r = rank or int(rng.integers(2, 5))
    shape = (1, *(int(d) for d in rng.integers(1, 6, r - 1)))     # (several inputs: each port's first axis is 1)
    axis = int(rng.integers(1, r))
    bd = int(rng.integers(0, axis + 1)) if batch_dims is None else batch_dims
    extra = int(rng.integers(0 if bd == 0 else 1, 3))           # (none: scalar indices, one index)
    ishape = (*shape[:bd], *(int(d) for d in rng.integers(1, 5, extra)))
    ishape = (1, *ishape[1:]) if ishape else ()
    out = (*shape[:axis], *ishape[bd:], *shape[axis + 1:])
    s, z = float(np.float32(rng.uniform(0.01, 0.5))), int(rng.integers(-128, 128))
    ys, yz = (s, z) if rng.random() < 0.5 else (float(np.float32(rng.uniform(0.01, 0.5))), int(rng.integers(-128, 128)))
    opts = {"Axis": axis - r if rng.random() < 0.5 else axis,
            "BatchDims": bd - len(ishape) if 0 < bd < len(ishape) and rng.random() < 0.5 else bd}
    case = Case(name, [T(shape, [s], [z]), T(ishape, [], [], INT32), T(out, [ys], [yz])],
                [Node("GATHER", [0, 1], 2, ("GatherOptions", opts))], [0, 1], 2)
    n = 4
    xs = rng.integers(-128, 128, (n, *shape)).astype(np.int8)
    ids = rng.integers(0, shape[axis], (n, *ishape)).astype(np.int32)
    ids[0].flat[0], ids[1].flat[-1] = 0, shape[axis] - 1
    case.x = [xs, ids]
    return case


def packed(case: Case) -> np.ndarray:
    """Each sample's values then indices, as the reference takes several inputs (edgec/ports.py)."""
    xs, ids = case.x
    return np.concatenate([xs.reshape(len(xs), -1).astype(np.int64), ids.reshape(len(ids), -1)], axis=1)


def device_bytes(case: Case) -> np.ndarray:
    """Each sample's input bytes as the host program reads them: the int8 values, then the int32 indices."""
    xs, ids = case.x
    return np.concatenate([xs.reshape(len(xs), -1), ids.reshape(len(ids), -1).view(np.int8)], axis=1)


def run(cases, work, paths=("reference", "sanitized")) -> list[str]:
    """Each case through TFLite Micro, edgec's reference and its generated C: what differs."""
    bad, graphs, wants = [], [], []
    work.mkdir(parents=True, exist_ok=True)
    for case in cases:
        f = work / f"{case.name}.tflite"
        f.write_bytes(oracle.write(case))
        want = oracle.tflm(f.read_bytes(), case.x).astype(np.int8)
        g = importer.load(f, case.name)
        assert [op.kind for op in g.ops] == ["gather_ids"], (case.name, [op.kind for op in g.ops])
        got = np.stack([np.asarray(reference.run(g, xi)).reshape(-1) for xi in packed(case)])
        if not np.array_equal(got, want):
            bad.append(f"{case.name} reference")
        graphs.append(g)
        wants.append(want)
    for path in paths:
        outs = oracle.run_c(graphs, [device_bytes(c) for c in cases], work / path, path)
        for case, want, got in zip(cases, wants, outs):
            if not np.array_equal(got, want):
                bad.append(f"{case.name} C {path}")
    return bad


def test_gather_of_an_activation_at_run_time_indices_matches_tflm(tmp_path):
    """Random ranks, axes and batch_dims (negative among them), a scalar index, and batch_dims 2 of a rank-4
    input as in TFLite Micro's gather_test.cc: TFLite Micro, the reference and the C agree byte for byte."""
    rng = np.random.default_rng(2910)
    cases = [gather_case(rng, f"g{k}") for k in range(5)] + [gather_case(rng, "bd2", rank=4, batch_dims=2)]
    bds = {c.nodes[0].options[1]["BatchDims"] for c in cases}
    assert bds & {-1, -2} and bds & {1, 2} and any(c.tensors[1].shape == () for c in cases), bds
    bad = run(cases, tmp_path, paths=("reference",))
    assert not bad, bad


@pytest.mark.sweep
def test_gather_at_run_time_indices_sweep_matches_tflm_also_sanitized(tmp_path):
    """60 more random cases, the C also under ASan/UBSan."""
    rng = np.random.default_rng(2901)
    bad = run([gather_case(rng, f"s{k}") for k in range(60)], tmp_path, paths=("reference", "sanitized"))
    assert not bad, bad


def test_scalar_indices_and_a_repeated_index_match_tflm(tmp_path):
    """gather_test.cc's scalar-index and repeated-index cases: a [1,3,4] input at one index along axis 1 (a row
    out) and a [1,2,3] input along axis 2 at [[2, 2, 0, 2]] (batch_dims 0)."""
    c1 = Case("sc", [T((1, 3, 4), [0.1], [3]), T((), [], [], INT32), T((1, 4), [0.1], [3])],
              [Node("GATHER", [0, 1], 2, ("GatherOptions", {"Axis": 1, "BatchDims": 0}))], [0, 1], 2)
    c1.x = [np.arange(-6, 6, dtype=np.int8).reshape(1, 1, 3, 4).repeat(3, 0), np.array([0, 2, 1], np.int32)]
    c2 = Case("rep", [T((1, 2, 3), [0.1], [3]), T((1, 4), [], [], INT32), T((1, 2, 1, 4), [0.1], [3])],
              [Node("GATHER", [0, 1], 2, ("GatherOptions", {"Axis": 2, "BatchDims": 0}))], [0, 1], 2)
    c2.x = [np.array([[[[-128, 0, 127], [1, 2, 3]]]], np.int8), np.array([[[2, 2, 0, 2]]], np.int32)]
    bad = run([c1, c2], tmp_path, paths=("reference",))
    assert not bad, bad
    assert np.array_equal(reference.run(importer.load(tmp_path / "rep.tflite", "rep"), packed(c2)[0]).reshape(-1),
                          [127, 127, -128, 127, 3, 3, 1, 3])


def test_a_constant_table_with_batch_dims_or_an_inner_axis_matches_tflm(tmp_path):
    """Run-time indices into a constant int8 table where the row lookup (edgec/ops/float_tail) does not apply: with
    batch_dims 1 ([3,4,5] table, [3,2] indices along axis 1) and along axis 1 after an axis of 2 (batch_dims 0);
    the table stored with the op, TFLite Micro's outputs byte for byte in the reference and the C."""
    rng = np.random.default_rng(2904)
    cases = []
    for name, tshape, ishape, axis, bd in (("tb", (3, 4, 5), (3, 2), 1, 1), ("ti", (2, 6), (1, 3), 1, 0)):
        table = rng.integers(-128, 128, tshape).astype(np.int8)
        out = (*tshape[:axis], *ishape[bd:], *tshape[axis + 1:])
        c = Case(name, [T(ishape, [], [], INT32), T(tshape, [0.05], [-7], data=table), T(out, [0.05], [-7])],
                 [Node("GATHER", [1, 0], 2, ("GatherOptions", {"Axis": axis, "BatchDims": bd}))], 0, 2)
        c.x = rng.integers(0, tshape[axis], (4, *ishape)).astype(np.int32)
        cases.append(c)
    graphs, wants = [], []
    for c in cases:
        f = tmp_path / f"{c.name}.tflite"
        f.write_bytes(oracle.write(c))
        wants.append(oracle.tflm(f.read_bytes(), c.x).astype(np.int8))
        graphs.append(importer.load(f, c.name))
        assert [op.kind for op in graphs[-1].ops] == ["gather_ids"] and "table" in graphs[-1].ops[0].arrays
        got = np.stack([np.asarray(reference.run(graphs[-1], xi)).reshape(-1) for xi in c.x])
        assert np.array_equal(got, wants[-1]), c.name
    outs = oracle.run_c(graphs, [c.x.reshape(len(c.x), -1).view(np.int8) for c in cases], tmp_path / "c", "sanitized")
    for c, want, got in zip(cases, wants, outs):
        assert np.array_equal(got, want), c.name


def test_an_index_outside_the_axis_fails_the_inference_as_in_tflm(tmp_path):
    """TFLite Micro's Invoke fails on an index below 0 or past the axis; edgec's reference raises IndexOutside
    naming the operator and the index, and the generated invoke returns EDGEC_ERROR_INDEX (the host program exits
    with its invoke-failed code)."""
    rng = np.random.default_rng(2902)
    for k, outside in enumerate((-1, None)):
        case = gather_case(rng, f"o{k}", rank=3, batch_dims=0)
        axis = case.nodes[0].options[1]["Axis"] % 3
        bad_id = case.tensors[0].shape[axis] if outside is None else outside
        case.x = [case.x[0][:1].copy(), case.x[1][:1].copy()]
        case.x[1].flat[-1] = bad_id
        model = oracle.write(case)
        with pytest.raises(RuntimeError):
            oracle.tflm(model, case.x)
        f = tmp_path / f"{case.name}.tflite"
        f.write_bytes(model)
        g = importer.load(f, case.name)
        with pytest.raises(IndexOutside, match=rf"GATHER#0: index {bad_id} outside"):
            reference.run(g, packed(case)[0])
        with pytest.raises(subprocess.CalledProcessError) as e:
            oracle.run_c([g], [device_bytes(case)], tmp_path / f"c{k}", "reference")
        assert e.value.returncode == 4          # hostrun's driver: NAME_invoke() != 0


def test_int16_values_are_refused_in_one_line_as_tflm_refuses_them(tmp_path, monkeypatch):
    """TFLite Micro's GATHER takes int8 and float32 values only: int16 values at run-time indices are refused,
    naming the operator and the type."""
    case = Case("i16", [T((2, 3), [0.1], [0], INT16), T((2,), [], [], INT32), T((2, 3), [0.1], [0], INT16)],
                [Node("GATHER", [0, 1], 2, ("GatherOptions", {"Axis": 0}))], [0, 1], 2)
    model = oracle.write(case)
    case.x = [np.zeros((1, 2, 3), np.int16), np.zeros((1, 2), np.int32)]
    with pytest.raises(RuntimeError):
        oracle.tflm(model, case.x)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "i16.tflite").write_bytes(model)
    with pytest.raises(EdgecError) as err:
        importer.load("i16.tflite", "i16")
    msg = str(err.value)
    assert "\n" not in msg and "GATHER (operator #0" in msg and "int16" in msg, msg


def test_an_index_port_without_a_batch_axis_is_taken_whole(tmp_path):
    """Indices of shape [3] (a first axis that is no batch of 1): the port is all three ids (edgec/ports.py
    Port.sample_shape), as the C reads the tensor; before, a port's first axis was always dropped and the
    sample was refused as too long."""
    from edgec import ports

    case = Case("flat", [T((1, 5, 4), [0.1], [3]), T((3,), [], [], INT32), T((1, 3, 4), [0.1], [3])],
                [Node("GATHER", [0, 1], 2, ("GatherOptions", {"Axis": 1, "BatchDims": 0}))], [0, 1], 2)
    rng = np.random.default_rng(2911)
    case.x = [rng.integers(-128, 128, (3, 1, 5, 4)).astype(np.int8), np.array([[4, 0, 2], [1, 1, 3], [0, 4, 4]],
                                                                             np.int32)]
    f = tmp_path / "flat.tflite"
    f.write_bytes(oracle.write(case))
    g = importer.load(f, "flat")
    assert [(p.size, p.sample_shape) for p in ports.inputs(g)] == [(20, (5, 4)), (3, (3,))]
    bad = run([case], tmp_path, paths=("reference",))
    assert not bad, bad
