"""int32 token ids into a .tflite (edgec/ops/float_tail/tflite.py import_gather, edgec/ops/signal/integer.py):
GATHER of a constant int8 table at int32 indices the model takes as input, and the int32 LESS / ADD / SELECT_V2
that Keras' Embedding writes before it (negative ids wrapped), on random single-operator files: TFLite Micro's
interpreter (tests/tflite_oracle.py), edgec's NumPy reference and the generated C on the host agree bit for bit;
an index outside the table fails the inference in all three. The whole path (the int32 graph input through the C
API, `edgec bench` and the host runner) on Keras text models: tests/corpus/keras_text_* (tests/test_corpus.py).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess

import numpy as np
import pytest

import tflite_oracle as oracle
from tflite_oracle import INT32, Case, Node, T
from edgec.frontend import tflite as importer
from edgec.ops.float_tail import IndexOutside
from edgec.quant import reference

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)
BOOL = 6


def gather_case(rng, name: str) -> Case:
    """GATHER of a [1.., rows, inner..] int8 table along `rows` at int32 ids of 1 or 2 dimensions (the graph's
    input); every row id among the samples' ends."""
    lead = (1,) * int(rng.integers(0, 2))
    rows = int(rng.integers(1, 40))
    inner = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(0, 3))))
    table = rng.integers(-128, 128, (*lead, rows, *inner)).astype(np.int8)
    ids_shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 3))))
    s, z = float(rng.uniform(0.01, 0.2)), int(rng.integers(-128, 128))
    axis = len(lead) - (len(lead) + 1 + len(inner)) * int(rng.integers(0, 2))   # as given or negative
    out = (*lead, *ids_shape, *inner)
    case = Case(name, [T(ids_shape, [], [], INT32), T(table.shape, [s], [z], data=table), T(out, [s], [z])],
                [Node("GATHER", [1, 0], 2, ("GatherOptions", {"Axis": axis}))], 0, 2)
    case.x = rng.integers(0, rows, (4, *ids_shape)).astype(np.int32)
    case.x[0].flat[0], case.x[1].flat[-1] = 0, rows - 1
    return case


def keras_embedding_case(rng, name: str) -> Case:
    """What Keras' Embedding writes: ids < 0 (LESS), ids + rows (ADD), the one or the other (SELECT_V2), GATHER."""
    rows, n, cols = int(rng.integers(2, 30)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
    table = rng.integers(-128, 128, (rows, cols)).astype(np.int8)
    s, z = 0.05, int(rng.integers(-128, 128))
    tensors = [T((1, n), [], [], INT32), T((), [], [], INT32, data=np.array(0, np.int32)),
               T((1, n), [], [], BOOL), T((), [], [], INT32, data=np.array(rows, np.int32)),
               T((1, n), [], [], INT32), T((1, n), [], [], INT32), T(table.shape, [s], [z], data=table),
               T((1, n, cols), [s], [z])]
    nodes = [Node("LESS", [0, 1], 2), Node("ADD", [0, 3], 4, ("AddOptions", {})), Node("SELECT_V2", [2, 4, 0], 5),
             Node("GATHER", [6, 5], 7, ("GatherOptions", {"Axis": 0}))]
    case = Case(name, tensors, nodes, 0, 7)
    case.x = rng.integers(-rows, rows, (4, 1, n)).astype(np.int32)
    case.x[0, 0, 0], case.x[1, 0, 0] = -rows, -1
    case.table = table
    return case


def compare_case(rng, name: str, op: str) -> Case:
    """An int32 comparison of the ids with a constant (one value, or one per id): bool bytes."""
    n = int(rng.integers(1, 9))
    b = rng.integers(-3, 4, 1 if rng.random() < 0.5 else n).astype(np.int32)
    case = Case(name, [T((n,), [], [], INT32), T(b.shape, [], [], INT32, data=b), T((n,), [], [], BOOL)],
                [Node(op, [0, 1], 2)], 0, 2)
    case.x = rng.integers(-4, 5, (4, n)).astype(np.int32)
    return case


def run(cases, work, expect=None) -> list[str]:
    """Each case through TFLite Micro (or `expect`), edgec's reference and its generated C: what differs."""
    bad, graphs, wants = [], [], []
    work.mkdir(parents=True, exist_ok=True)
    for case in cases:
        f = work / f"{case.name}.tflite"
        f.write_bytes(oracle.write(case))
        want = oracle.tflm(f.read_bytes(), case.x) if expect is None else expect(case)
        want = np.asarray(want).reshape(len(case.x), -1)
        g = importer.load(f, case.name)
        got = np.stack([np.asarray(reference.run(g, xi.reshape(-1))).reshape(-1) for xi in case.x])
        if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
            bad.append(f"{case.name} reference")
        graphs.append(g)
        wants.append(want)
    outs = oracle.run_c(graphs, [c.x.reshape(len(c.x), -1).view(np.int8) for c in cases], work / "c", "reference")
    for case, want, got in zip(cases, wants, outs):
        if not np.array_equal(np.ascontiguousarray(got).view(want.dtype), want):
            bad.append(f"{case.name} C")
    return bad


def test_gather_at_int32_ids_matches_tflm(tmp_path):
    """GATHER at the ids the graph takes (1-D and 2-D ids, a leading axis of size 1, negative axis, rows 1..39,
    the first and last rows): TFLite Micro, the reference and the C byte for byte."""
    rng = np.random.default_rng(38)
    bad = run([gather_case(rng, f"g{k}") for k in range(8)], tmp_path)
    assert not bad, bad


def test_int32_comparisons_match_tflm(tmp_path):
    rng = np.random.default_rng(39)
    ops = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
    bad = run([compare_case(rng, f"c{k}", op) for k, op in enumerate(ops)], tmp_path)
    assert not bad, bad


def test_keras_embedding_wraps_negative_ids(tmp_path):
    """Keras' LESS / ADD / SELECT_V2 / GATHER: ids in [-rows, rows) name row id % rows. TFLite Micro's SELECT_V2
    takes no int32 (TF Lite's does), so the expectation is NumPy's take of the table's bytes; TFLM refuses it."""
    rng = np.random.default_rng(40)
    cases = [keras_embedding_case(rng, f"k{k}") for k in range(4)]
    with pytest.raises(RuntimeError):
        oracle.tflm(oracle.write(cases[0]), cases[0].x)
    bad = run(cases, tmp_path, expect=lambda c: np.take(c.table, c.x % len(c.table), axis=0))
    assert not bad, bad


def test_an_id_outside_the_table_fails_the_inference_as_in_tflm(tmp_path):
    """TFLite Micro's GATHER fails its Invoke on an index outside the table (above or below 0); so does edgec's
    reference (IndexOutside, naming the operator and the id) and the generated C (invoke returns
    EDGEC_ERROR_INDEX: the host program stops with its invoke-failed exit code)."""
    rng = np.random.default_rng(41)
    for k, bad_id in enumerate((-1, 10_000)):
        case = gather_case(rng, f"o{k}")
        case.x = case.x[:1].copy()
        case.x.flat[-1] = bad_id
        model = oracle.write(case)
        with pytest.raises(RuntimeError):
            oracle.tflm(model, case.x)
        f = tmp_path / f"{case.name}.tflite"
        f.write_bytes(model)
        g = importer.load(f, case.name)
        with pytest.raises(IndexOutside, match=rf"GATHER#0: id {bad_id} outside"):
            reference.run(g, case.x[0].reshape(-1))
        with pytest.raises(subprocess.CalledProcessError) as e:
            oracle.run_c([g], [case.x.reshape(1, -1).view(np.int8)], tmp_path / f"c{k}", "reference")
        assert e.value.returncode == 4          # hostrun's driver: NAME_invoke() != 0
