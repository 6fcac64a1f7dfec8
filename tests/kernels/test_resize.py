"""The resize family (runtime_c/edgec_resize.c) against its NumPy twin (edgec/ops/resize.py), bit for bit: linear resize."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ckernels import log_softmax_resize_cases, make, ptr
from edgec.ops import resize


@pytest.mark.parametrize("seed", range(6))
def test_resize_linear(ck, seed):
    _, (q, idx, frac, x) = log_softmax_resize_cases(seed)
    out = np.zeros(70, np.int8)
    ck.lib.edgec_resize_linear_s8(ctypes.byref(make("edgec_resize_params", q)), ptr(x), ptr(idx), ptr(frac), ptr(out))
    assert np.array_equal(out, resize.resize_linear_s8(q, idx, frac, x))


@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
def test_a_linear_resize_of_an_ncl_tensor_is_one_row_of_an_image(ctm):
    """torch's nn.Upsample(mode="linear") on (N, C, L) is an ONNX linear Resize of a 3-D tensor: it was refused
    ("supported over the two spatial axes of an NCHW tensor", a machine-sound autoencoder of the corpus); it is
    now `resize_linear` over one row, channels last, as onnxruntime computes it."""
    import onnxruntime as ort
    from onnx import helper

    from conftest import make_model
    from edgec.frontend import canonicalize
    from edgec.quant import floatref

    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                              coordinate_transformation_mode=ctm)]
    model = make_model(nodes, ("x", [1, 5, 12]), ("y", [1, 5, 30]), {"scales": np.array([1, 1, 2.5], np.float32)})
    graph = canonicalize.canonicalize(model, "m")
    assert "resize_linear" in [op.kind for op in graph.ops]
    x = np.random.default_rng(3).normal(size=(1, 5, 12)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(floatref.output(graph, x)).reshape(want.shape)
    assert np.allclose(got, want, atol=1e-5)
