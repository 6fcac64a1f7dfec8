"""Layer normalization as one op (edgec/ops/norm.py, runtime_c/edgec_norm.c): the C kernel against its NumPy twin
bit for bit (quantizer-made parameters over odd widths, offsets, constant rows, epsilon swamping the variance),
the twin against float, and ONNX LayerNormalization through the pipeline: over the last axis one `layer_norm` op,
over another axis (or with its Mean output) still its expanded ONNX function body."""
from __future__ import annotations

import ctypes

import numpy as np
import onnx
import pytest
from onnx import helper

from ckernels import make, ptr
from conftest import check_generated_c, make_model
from edgec import api
from edgec.frontend import canonicalize, loader
from edgec.ir import Op, Tensor
from edgec.ops import norm
from edgec.quant import calibrate, quantize, reference
from edgec.fixedpoint import scheme


def _quantized_op(r, rows, cols, spread):
    """A layer_norm op quantized for int8 inputs of scale s_in around an offset, as the quantizer makes it."""
    gamma, beta = r.normal(1, spread, cols), r.normal(0, spread, cols)
    op = Op("layer_norm", "ln", ("x",), "y", attrs=dict(rows=rows, cols=cols, gamma=gamma, beta=beta,
                                                        epsilon=float(r.choice([1e-5, 1e-3, 10.0]))))
    x = Tensor("x", (rows, cols), "x", float(r.uniform(0.001, 0.2)), int(r.integers(-128, 128)))
    y = Tensor("y", (rows, cols), "y", float(r.uniform(0.005, 0.1)), int(r.integers(-20, 20)))
    norm.quantize_layer_norm(op, [x], y)
    return op


def _c(lib, op, x):
    out = np.full(x.size, 99, np.int8)
    lib.edgec_layer_norm_s8(ctypes.byref(make("edgec_layer_norm_params", op.params)), ptr(x),
                            ptr(op.arrays["gamma"]), ptr(op.arrays["beta"]), ptr(out))
    return out


def test_kernel_matches_twin(ck):
    r = np.random.default_rng(60)
    for case in range(300):
        rows, cols = int(r.integers(1, 6)), int(r.choice([1, 2, 3, 7, 16, 33, 64, 768]))
        op = _quantized_op(r, rows, cols, float(r.choice([0.1, 3.0])))
        x = r.integers(-128, 128, rows * cols).astype(np.int8)
        if case % 5 == 0:
            x[:cols] = x[0]                                     # a constant row: only epsilon in the variance
        np.testing.assert_array_equal(_c(ck.lib, op, x), norm.layer_norm_s8(op.params, x, op.arrays["gamma"],
                                                                              op.arrays["beta"]), err_msg=str(case))


def test_twin_tracks_float():
    """Dequantized, the integer layer norm is the float one (on the dequantized input) within 1.5 output steps."""
    r = np.random.default_rng(61)
    for cols in (4, 16, 100):
        gamma, beta = r.normal(1, 0.3, cols), r.normal(0, 0.3, cols)
        xf = r.normal(0.3, 1.0, (8, cols))
        s_in = float(np.abs(xf).max()) / 127
        op = Op("layer_norm", "ln", ("x",), "y", attrs=dict(rows=8, cols=cols, gamma=gamma, beta=beta, epsilon=1e-5))
        want = norm.float_layer_norm(op, [xf])
        s_out = float(np.abs(want).max()) / 127
        norm.quantize_layer_norm(op, [Tensor("x", (8, cols), "x", s_in, 0)], Tensor("y", (8, cols), "y", s_out, 0))
        xq = np.clip(np.round(xf / s_in), -128, 127).astype(np.int8)
        got = norm.layer_norm_s8(op.params, xq, op.arrays["gamma"], op.arrays["beta"]) * s_out
        want = norm.float_layer_norm(op, [xq.astype(np.float64) * s_in])
        assert np.abs(got - want).max() <= 1.5 * s_out, cols


def _model(shape, axis, mean_output=False, computed_scale=False):
    r = np.random.default_rng(1)
    inits = {"w": r.normal(0, 0.5, (shape[-1], shape[-1])), "g": r.normal(1, 0.2, shape[axis:]),
             "b": r.normal(0, 0.2, shape[axis:])}
    outs = ["y", "mean"] if mean_output else ["y"]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm")]
    if computed_scale:          # a Scale computed in the graph: the body takes it (folded), not the fused op
        nodes.append(helper.make_node("Sigmoid", ["g0"], ["g"], name="gate"))
        inits["g0"] = inits.pop("g")
    nodes.append(helper.make_node("LayerNormalization", ["h", "g", "b"], outs, axis=axis, epsilon=1e-5, name="ln"))
    return make_model(nodes, ("x", list(shape)), ("y", list(shape)), inits, opset=17)


@pytest.mark.parametrize("shape,axis,mean_output,computed,whole", [
    ((1, 6, 16), 2, False, False, True), ((1, 4, 6), 1, False, False, False), ((1, 5, 8), -1, True, False, False),
    ((1, 5, 8), -1, False, True, False)])
def test_onnx_layer_norm_taken_whole_or_expanded(shape, axis, mean_output, computed, whole):
    """Over the last axis, one op; over another axis, with its Mean output asked for or with a Scale computed at
    run time, its function body."""
    model = loader.prepare(_model(shape, axis, mean_output, computed), "ln_model")
    graph = canonicalize.canonicalize(model, "ln_model")
    assert (sum(op.kind == "layer_norm" for op in graph.ops) == 1) == whole
    assert (len(graph.ops) == 2) == whole


def test_onnx_layer_norm_end_to_end(tmp_path):
    shape = (1, 6, 16)
    model = loader.prepare(_model(shape, -1), "ln_model")
    graph = canonicalize.canonicalize(model, "ln_model")
    assert [op.kind for op in graph.ops][-1] == "layer_norm"
    x = np.random.default_rng(2).normal(0, 1, (32,) + shape[1:]).astype(np.float32)
    ranges = calibrate.calibrate(model, x, [t.source for t in graph.tensors.values()])
    graph = quantize.quantize(graph, ranges)
    tout = graph.tensors[graph.output]
    for i in range(4):
        want = calibrate.run_float(model, x[i:i + 1])[0]
        got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[i])))
        assert np.abs(got.reshape(want.shape) - want).max() <= 0.1 * np.ptp(want)
    check_generated_c(graph, x[:8], tmp_path)


def test_layer_norm_weights_shared_through_identity_taken_whole():
    """torch.onnx writes a weight equal to an earlier one as an Identity of it (timm's ViT: every norm2 and the final
    norm): still constants, so the LayerNormalization is one op, not its expanded body of int8 steps."""
    r = np.random.default_rng(3)
    inits = {"w": r.normal(0, 0.5, (8, 8)), "g0": r.normal(1, 0.2, 8), "b0": r.normal(0, 0.2, 8)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Identity", ["g0"], ["g"], name="share_g"),
             helper.make_node("Identity", ["b0"], ["b"], name="share_b"),
             helper.make_node("LayerNormalization", ["h", "g", "b"], ["y"], axis=-1, epsilon=1e-5, name="ln")]
    graph = canonicalize.canonicalize(make_model(nodes, ("x", [1, 5, 8]), ("y", [1, 5, 8]), inits, opset=17), "m")
    assert [op.kind for op in graph.ops].count("layer_norm") == 1 and len(graph.ops) == 2


def _token_model(indices, axis=1):
    """MatMul -> LayerNormalization over the last axis -> Gather of `indices` along `axis` (a ViT's class token)."""
    r = np.random.default_rng(4)
    inits = {"w": r.normal(0, 0.5, (8, 8)), "g": r.normal(1, 0.3, 8), "b": r.normal(0, 0.3, 8),
             "i": np.asarray(indices, np.int64)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("LayerNormalization", ["h", "g", "b"], ["n"], axis=-1, epsilon=1e-5, name="ln"),
             helper.make_node("Gather", ["n", "i"], ["y"], axis=axis, name="pick")]
    out = [1, *np.shape(indices), 8] if axis == 1 else [1, 5, *np.shape(indices)]
    return make_model(nodes, ("x", [1, 5, 8]), ("y", out), inits, opset=17)


@pytest.mark.parametrize("indices,axis,alone", [(0, 1, True), ([3, 1], 1, True), ([4, 3, 2, 1, 0], 1, False),
                                                ([0, 2], 2, False)])
def test_only_the_selected_rows_are_normalized(indices, axis, alone):
    """A Gather keeping some whole rows of a layer norm's output: the rows are selected first and normalized alone
    (rows = the selected ones), on the grid of the LayerNormalization's output; all rows, or parts of rows, leave
    the graph as it was."""
    graph = canonicalize.canonicalize(_token_model(indices, axis), "m")
    kinds = [op.kind for op in graph.ops if op.kind != "reshape"]
    ln = next(op for op in graph.ops if op.kind == "layer_norm")
    assert (kinds.index("remap") < kinds.index("layer_norm")) == alone
    assert ln.attrs["rows"] == (np.size(indices) if alone else 5)
    assert graph.tensors[ln.output].source == "n"


def test_class_token_normalized_alone_end_to_end(tmp_path):
    """The rewritten graph computes the model: calibrated as `edgec build` does (the selected rows are edgec's own
    tensor: their range from edgec's float run), the integer reference within two output steps of float (the
    kernels are unchanged: test_kernel_matches_twin holds the C to the reference)."""
    model = _token_model(0)
    x = np.random.default_rng(5).normal(0, 1, (16, 5, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    onnx.save(model, str(tmp_path / "m.onnx"))
    graph = api.calibrate(tmp_path / "m.onnx", tmp_path / "calib.npz", cache=False, sensitivity_samples=0,
                          method="minmax", bias_correction=False).graph
    assert [op.kind for op in graph.ops if op.kind != "reshape"][-2:] == ["remap", "layer_norm"]
    tout = graph.tensors[graph.output]
    for i in range(4):
        want = calibrate.run_float(model, x[i:i + 1])[0]
        got = scheme.dequantize(tout, reference.run(graph, scheme.quantize_input(graph.tensors[graph.input], x[i])))
        assert np.abs(got.reshape(want.shape) - want).max() <= 2 * tout.scale


def _c_l2_16(lib, rows, cols, x):
    out = np.full(x.size, 99, np.int16)
    lib.edgec_l2_norm_s16(ctypes.byref(make("edgec_l2_norm16_params", {"rows": rows, "cols": cols})), ptr(x),
                          ptr(out))
    return out


def test_int16_l2_norm_kernel_matches_twin(ck):
    """edgec_l2_norm_s16 (an int16 tail's L2 normalization) = norm.l2_norm_s16 bit for bit on random shapes, rows
    of zeros, a single value, full-scale and tiny rows."""
    r = np.random.default_rng(62)
    for case in range(300):
        rows, cols = int(r.integers(1, 6)), int(r.choice([1, 2, 3, 7, 24, 33, 128, 1000]))
        peak = int(r.choice([1, 3, 200, 32767]))
        x = r.integers(-peak, peak + 1, rows * cols).astype(np.int16)
        if case % 7 == 0:
            x[:cols] = 0                                        # a row of zeros: zeros out
        if case % 11 == 0:
            x[-cols:] = -32768                                  # the most negative value everywhere
        p = {"rows": rows, "cols": cols}
        want = norm.l2_norm_s16(p, x)
        np.testing.assert_array_equal(_c_l2_16(ck.lib, rows, cols, x), want, err_msg=str(case))
        if case % 7 == 0:
            assert not want[:cols].any()


def test_int16_l2_norm_twin_is_the_normalized_row_in_q15():
    """Dequantized (1/32768), the twin is x / ||x|| within 3 Q0.15 steps (its 15-bit square root)."""
    r = np.random.default_rng(63)
    for cols in (1, 5, 24, 300):
        x = r.integers(-32768, 32768, (6, cols)).astype(np.int16)
        x[1] //= 4000                                           # a small row
        got = norm.l2_norm_s16({"rows": 6, "cols": cols}, x).reshape(6, cols) / 32768.0
        xf = x.astype(np.float64)
        length = np.sqrt((xf * xf).sum(axis=1, keepdims=True))
        want = np.clip(xf / np.maximum(length, 1), -1, 32767 / 32768)     # a row of zeros: zeros
        assert np.abs(got - want).max() <= 3 / 32768, cols
