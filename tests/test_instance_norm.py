"""edgec/ops/norm.py's ONNX import of InstanceNormalization, as torch.onnx's TorchScript exporter writes a GroupNorm
(timm's MobileViTv2 and every GroupNorm(1, C) "LayerNorm2d": Reshape to [N, G, -1], InstanceNormalization with
ones and zeros, Reshape back, Mul and Add by the affine weights): it builds and its INT8 reference is close to
ONNX Runtime's float; so does a plain InstanceNormalization with a per-channel scale and bias (the rows, then a
per-channel table)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import make_model, save
from edgec import api


def group_norm_model(groups: int, scale=None):
    """[1, 3, 8, 8] -> Conv 3->8 -> GroupNorm(groups, 8) as torch.onnx writes it -> Relu."""
    rng = np.random.default_rng(3)
    c = 8
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Reshape", ["c", "grouped"], ["r"], name="gn/Reshape"),
             helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=1e-5,
                              name="gn/InstanceNormalization"),
             helper.make_node("Reshape", ["n", "back"], ["r2"], name="gn/Reshape_1"),
             helper.make_node("Mul", ["r2", "gamma"], ["m"], name="gn/Mul"),
             helper.make_node("Add", ["m", "beta"], ["a"], name="gn/Add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    inits = {"w": rng.normal(size=(c, 3, 3, 3)) * 0.3, "b": rng.normal(size=c) * 0.5,
             "grouped": np.array([1, groups, -1], np.int64),
             "ones": np.ones(groups) if scale is None else np.asarray(scale), "zeros": np.zeros(groups),
             "back": np.array([1, c, 8, 8], np.int64),
             "gamma": rng.uniform(0.5, 1.5, size=(c, 1, 1)), "beta": rng.normal(size=(c, 1, 1)) * 0.2}
    return make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, c, 8, 8]), inits, opset=17)


@pytest.mark.parametrize("groups", [1, 4])
def test_torch_group_norm_builds_close_to_float(groups, tmp_path):
    path = save(group_norm_model(groups), tmp_path)
    rng = np.random.default_rng(5)
    calib = rng.uniform(0, 1, (8, 3, 8, 8)).astype(np.float32)
    quant = api.calibrate(path, calib)
    assert any(op.kind == "layer_norm" for op in quant.graph.ops)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)
    want = sess.run(None, {"x": x})[0].reshape(-1)
    got = np.asarray(api.reference(quant, x).y, np.float64).reshape(-1)
    snr = 10 * np.log10(np.sum(want.astype(np.float64) ** 2) / np.sum((want - got) ** 2))
    assert snr > 25, snr


def test_per_channel_instance_norm_builds_close_to_float(tmp_path):
    """ONNX's own InstanceNormalization (test_instancenorm_example's form): a scale and a bias per channel."""
    rng = np.random.default_rng(7)
    c = 6
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("InstanceNormalization", ["c", "scale", "bias"], ["y"], epsilon=1e-5, name="in")]
    inits = {"w": rng.normal(size=(c, 3, 3, 3)) * 0.3, "b": rng.normal(size=c) * 0.5,
             "scale": rng.uniform(0.3, 2.0, size=c), "bias": rng.normal(size=c)}
    path = save(make_model(nodes, ("x", [1, 3, 8, 8]), ("y", [1, c, 8, 8]), inits, opset=17), tmp_path)
    calib = rng.uniform(0, 1, (8, 3, 8, 8)).astype(np.float32)
    quant = api.calibrate(path, calib)
    kinds = [op.kind for op in quant.graph.ops]
    assert kinds[-2:] == ["layer_norm", "lut"], kinds       # the rows, then the per-channel table
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)
    want = sess.run(None, {"x": x})[0].reshape(-1).astype(np.float64)
    got = np.asarray(api.reference(quant, x).y, np.float64).reshape(-1)
    snr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert snr > 25, snr
