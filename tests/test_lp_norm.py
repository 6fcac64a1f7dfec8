"""edgec/ops/norm.py's ONNX import of LpNormalization p=2 (TFLite's int8 L2_NORMALIZATION kernel, `l2_norm`): over
the channels of a Conv's NCHW output (the values' physical order made to end with that axis) and over the last axis;
the INT8 reference close to ONNX Runtime's float and the generated C on the host bit-exact with it; p=1 named."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import check_generated_c, check_generated_c_gcc_and_clang, make_model, save, snr_against_ort
from edgec import api
from edgec.errors import EdgecError


def lp_model(axis: int, p: int = 2):
    """[1, 3, 6, 5] -> Conv 3->8 -> Relu -> LpNormalization(axis, p)."""
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("LpNormalization", ["r"], ["y"], axis=axis, p=p, name="l2")]
    inits = {"w": rng.normal(size=(8, 3, 3, 3)) * 0.4, "b": rng.normal(size=8) * 0.2}
    return make_model(nodes, ("x", [1, 3, 6, 5]), ("y", [1, 8, 6, 5]), inits, opset=13)


@pytest.mark.parametrize("axis", [1, -1])
def test_lp_normalization_is_tflite_s_l2_norm(axis, tmp_path):
    path = save(lp_model(axis), tmp_path)
    rng = np.random.default_rng(5)
    calib = rng.normal(size=(16, 3, 6, 5)).astype(np.float32)
    quant = api.calibrate(path, calib)
    norm = [op for op in quant.graph.ops if op.kind == "l2_norm"]
    assert len(norm) == 1 and norm[0].attrs["cols"] == (8 if axis == 1 else 5)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = rng.normal(size=(4, 1, 3, 6, 5)).astype(np.float32)
    want = np.stack([sess.run(None, {"x": xi})[0].reshape(-1) for xi in x]).astype(np.float64)
    got = np.stack([np.asarray(api.reference(quant, xi).y, np.float64).reshape(-1) for xi in x])
    snr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert snr > 30, snr
    check_generated_c(quant.graph, x, tmp_path / "c")


def test_lp_normalization_p1_is_named(tmp_path):
    path = save(lp_model(1, p=1), tmp_path)
    with pytest.raises(EdgecError, match=r"LpNormalization is supported with p=2 only") as e:
        api.calibrate(path, np.zeros((2, 3, 6, 5), np.float32))
    assert "\n" not in str(e.value)


def test_an_l2_normalization_tail_runs_int16_where_it_gains_and_leaves_as_an_int16_port(tmp_path):
    """The default (QuantOptions.tail_int16 None, ptq.tail_choice): the L2 normalization computing the output and the
    conv feeding it run int16 (edgec_l2_norm_s16, Q0.15 out) when that gains more than 0.5 dB on the calibration
    samples, and the output port is int16; closer to ONNX Runtime's float than the int8 tail on held-out inputs;
    the generated C bit-exact with the reference (gcc; clang with sanitizers)."""
    path = save(lp_model(1), tmp_path)
    rng = np.random.default_rng(7)
    calib = rng.normal(size=(16, 3, 6, 5)).astype(np.float32)
    default, int8 = api.calibrate(path, calib), api.calibrate(path, calib, tail_int16=False)
    assert default.tail.startswith("output tail int16")
    out = default.graph.tensors[default.graph.output]
    assert (out.dtype, out.scale, out.zero_point) == ("int16", 1.0 / 32768.0, 0)
    assert [(op.kind, default.graph.tensors[op.output].dtype) for op in default.graph.ops][-3:] == [
        ("conv2d", "int16"), ("l2_norm", "int16"), ("transpose", "int16")]     # (NHWC -> the NCHW output)
    assert int8.graph.tensors[int8.graph.output].dtype == "int8" and int8.tail == ""
    x = rng.normal(size=(8, 1, 3, 6, 5)).astype(np.float32)
    snr = snr_against_ort(path, x)
    assert snr(default) > snr(int8) + 0.5, (snr(default), snr(int8))
    check_generated_c_gcc_and_clang(default.graph, x, tmp_path)
