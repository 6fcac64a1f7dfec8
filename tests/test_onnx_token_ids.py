"""nn.Embedding's token ids into an ONNX model (edgec/ops/gather.py import_onnx_embedding, the int32 port of
edgec/frontend/canonicalize.py): tests/data/torch_text_embedding_mean.onnx (tests/data/make_torch_token_ids.py:
torch 2.14.1's TorchScript exporter, an Embedding(100, 16) over int64 ids [1, 12], the mean over the tokens, a
Linear to 4 classes, seed 0) builds with an int32 input port; the calibration set's integer ids calibrate it;
the device (host, and the emulated Cortex-M4 in the sweep) agrees with edgec's NumPy reference bit for bit and
the output is close to ONNX Runtime's float; an id outside the table fails the inference (EDGEC_ERROR_INDEX) as
a .tflite's GATHER does. What still cannot build (token ids read by other than an embedding's Gather) is one line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgec import api
from edgec.errors import EdgecError
from edgec.ops.float_tail import IndexOutside

MODEL = Path(__file__).parent / "data" / "torch_text_embedding_mean.onnx"


def ids(n: int, seed: int) -> np.ndarray:
    """n samples of 12 token ids in [0, 100), every end of the table among them."""
    x = np.random.default_rng(seed).integers(0, 100, (n, 12)).astype(np.int32)
    x[0, 0], x[-1, -1] = 0, 99
    return x


def sqnr(want: np.ndarray, got: np.ndarray) -> float:
    want, got = np.asarray(want, np.float64).reshape(-1), np.asarray(got, np.float64).reshape(-1)
    return float(10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2)))


def test_integer_token_ids_calibrate_and_match_onnxruntime():
    """The ids calibrate the model (ONNX Runtime gets them as int64); the reference is close to float."""
    r = api.calibrate(MODEL, ids(64, 1))
    assert r.graph.tensors[r.graph.input].dtype == "int32"
    assert [op.kind for op in r.graph.ops][0] == "embedding_gather"
    x = ids(16, 2)
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    want = np.concatenate([sess.run(None, {"ids": s[None].astype(np.int64)})[0] for s in x])
    got = np.concatenate([np.asarray(api.reference(r, s.astype(np.float32)).y).reshape(1, -1) for s in x])
    assert sqnr(want, got) > 25, sqnr(want, got)
    with pytest.raises(IndexOutside, match="index 100 outside the axis of 100"):
        bad = x[0].copy()
        bad[3] = 100
        api.reference(r, bad.astype(np.float32))


@pytest.mark.parametrize("board", ["host", pytest.param("qemu-cortex-m4", marks=pytest.mark.sweep)])
def test_token_id_model_builds_and_the_device_matches_the_reference(tmp_path, board):
    np.savez(tmp_path / "calib.npz", x=ids(64, 1).astype(np.float32))
    np.savez(tmp_path / "test.npz", x=ids(8, 3).astype(np.float32))
    out = tmp_path / "build"
    rep = api.build(MODEL, tmp_path / "calib.npz", board, out)
    assert rep["input"]["bytes"] == 48 and (rep["input"]["scale"], rep["input"]["zero_point"]) == (1.0, 0)
    header = (out / "model" / "torch_text_embedding_mean.h").read_text()
    assert "int32_t *torch_text_embedding_mean_input(void);" in header and "int64 ids are this int32 port" in header
    r = api.bench(out, tmp_path / "test.npz", report_dir=None)
    assert r["samples"] == 8 and r["agreement"]["device_vs_reference"] == 1.0, r["agreement"]


def test_token_ids_read_by_other_than_an_embedding_are_refused():
    """Integer ids read by anything but a Gather of a constant table stay refused in one line."""
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Cast", ["ids"], ["f"], name="cast", to=TensorProto.FLOAT)], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 6])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    from edgec.frontend import canonicalize, loader
    with pytest.raises(EdgecError) as e:
        canonicalize.canonicalize(loader.prepare(model), "m")
    assert "\n" not in str(e.value) and "input 'ids' is INT64" in str(e.value), str(e.value)


@pytest.mark.parametrize("path", ["reference", "sanitized"])
def test_the_generated_c_matches_the_reference_and_fails_on_an_id_outside_the_table(tmp_path, path):
    """The generated C (the reference kernels; ASan/UBSan) agrees with the NumPy reference on the ids; an id above
    the table or below 0 makes NAME_invoke() fail (EDGEC_ERROR_INDEX: the host driver's exit code 4)."""
    import subprocess

    import tflite_oracle as oracle
    from edgec.quant import reference
    g = api.calibrate(MODEL, ids(64, 1)).graph
    x = ids(4, 5)
    got = oracle.run_c([g], [x.view(np.int8).reshape(len(x), -1)], tmp_path / "ok", path)[0]
    want = np.stack([np.asarray(reference.run(g, s)).reshape(-1) for s in x])
    assert np.array_equal(np.asarray(got).reshape(len(x), -1), want)
    for k, bad in enumerate((100, -1)):
        y = x[:1].copy()
        y[0, 5] = bad
        with pytest.raises(subprocess.CalledProcessError) as e:
            oracle.run_c([g], [y.view(np.int8).reshape(1, -1)], tmp_path / f"bad{k}", path)
        assert e.value.returncode == 4


@pytest.mark.parametrize("axis, after", [(1, "transpose"), (1, "reduce"), (-2, "reduce")])
def test_token_ids_into_a_table_along_another_axis(tmp_path, axis, after):
    """A table stored transposed ([D, V] gathered on axis 1, `W[:, ids]`; a [2, V, 3] table on axis -2) at ids
    [1, T]: it was refused ("along an axis other than 0"); the table is moved at build time, the output held
    with the ids' axes first, and the reference is close to ONNX Runtime's float (read through a Transpose, or
    reduced over the ids' axes in ONNX's layout)."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(7)
    table = rng.normal(size=(6, 20) if axis == 1 else (2, 20, 3)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed", axis=axis)]
    if after == "transpose":          # [6, 1, 5] -> [1, 5, 6]
        nodes.append(helper.make_node("Transpose", ["e"], ["y"], name="t", perm=[1, 2, 0]))
        yshape = [1, 5, 6]
    else:                             # the mean over the ids' axes, in ONNX's layout
        nodes.append(helper.make_node("ReduceMean", ["e"], ["y"], name="mean", axes=[1, 2], keepdims=0))
        yshape = [6] if axis == 1 else [2, 3]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)],
                          [helper.make_tensor("table", TensorProto.FLOAT, table.shape, table.reshape(-1))])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    x = np.random.default_rng(8).integers(0, 20, (32, 5)).astype(np.int32)
    r = api.calibrate(path, x)
    assert "embedding_gather" in [op.kind for op in r.graph.ops]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.stack([sess.run(None, {"ids": s[None].astype(np.int64)})[0].reshape(-1) for s in x[:8]])
    got = np.stack([np.asarray(api.reference(r, s.astype(np.float32)).y).reshape(-1) for s in x[:8]])
    assert sqnr(want, got) > 30, sqnr(want, got)
