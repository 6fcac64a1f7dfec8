"""--input-layout nhwc (edgec/frontend/canonicalize.py, edgec/ports.py): an NCHW model's input taken channels-last,
so the first Conv reads it as it is (no input transpose on the device), while data files and the host's
reference keep the model's own layout; bit-exact on the emulated Cortex-M4."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import MLPERF, require_mlperf
from edgec import api, ports
from edgec.errors import EdgecError
from edgec.frontend import canonicalize, loader

IC = MLPERF / "ic_resnet8_fp32_nchw.onnx"
PLAIN = dict(method="minmax", equalize=False, bias_correction=False, sensitivity_samples=0)


@pytest.fixture(scope="module")
def data():
    require_mlperf(IC)
    rng = np.random.default_rng(5)
    return rng.uniform(0, 255, (16, 3, 32, 32)).astype(np.float32)


def test_no_input_transpose_with_nhwc(data):
    model = loader.load_model(IC, 1 << 30)
    own, last = canonicalize.canonicalize(model, "ic"), canonicalize.canonicalize(model, "ic", "nhwc")
    assert own.ops[0].kind == "transpose" and own.input_perm == ()
    assert last.ops[0].kind == "conv2d" and len(last.ops) == len(own.ops) - 1
    assert last.input_perm == (0, 2, 3, 1) and last.tensors[last.input].shape == (1, 32, 32, 3)
    assert last.input_onnx_shape == own.input_onnx_shape == (1, 3, 32, 32)      # data files: the model's layout
    # the host moves an NCHW sample into the channels-last input
    fed = ports.feed(last, data[0])[last.input]
    assert np.array_equal(fed[0], data[0].transpose(1, 2, 0))
    assert np.array_equal(ports.device_order(last, data[:2]), data[:2].transpose(0, 2, 3, 1))


def test_same_model_either_layout(data):
    own = api.calibrate(IC, data, **PLAIN)
    last = api.calibrate(IC, data, **PLAIN, input_layout="nhwc")
    for x in data[:3]:
        assert np.array_equal(api.reference(own, x).q, api.reference(last, x).q)


def test_refused_where_it_does_not_apply(tmp_path):
    with pytest.raises(EdgecError, match="--input-layout nhwc: input 'x' is \\[1, 8\\]"):
        import onnx
        from onnx import helper, TensorProto
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
        canonicalize.canonicalize(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "m", "nhwc")


def test_bench_on_qemu_channels_last(data, tmp_path):
    out = tmp_path / "ic"
    report = api.build(IC, data, "qemu-cortex-m4", out, **PLAIN, input_layout="nhwc")
    header = (out / "model" / "ic_resnet8_fp32_nchw.h").read_text()
    assert "shape [1, 32, 32, 3], channels-last (--input-layout nhwc" in header
    assert report["ops"] == len(api.calibrate(IC, data, **PLAIN).graph.ops) - 1      # no transpose layer
    r = api.bench(out, (data[:4], np.zeros(4, np.int64)))
    assert r["agreement"]["device_vs_reference"] == 1.0
