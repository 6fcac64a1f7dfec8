"""ONNX NonMaxSuppression (edgec/ops/nms.py, runtime_c/edgec_nms.c) against ONNX Runtime: random single-node
models with float boxes and scores on int8 grids (what edgec's int8 activations stand for) run by onnxruntime, by
the NumPy twin and by the C kernel: random cases, ties in the scores, every box overlapping every other, no box
over the score threshold, max_output_boxes_per_class reached, both box formats, with and without a score
threshold; then the ONNX import of such a model, its reference and its generated C on the host."""
from __future__ import annotations

import ctypes

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ckernels import make, ptr
from edgec import cheader
from edgec.ops import nms

MODES = ("random", "ties", "overlap", "none", "max")


def nms_case(rng, mode: str, center_point_box: int, with_score_threshold: bool, batches: int | None = None):
    """(params, int8 boxes, int8 scores, fparams, ONNX model bytes) of one random case."""
    nb, nc = batches or int(rng.integers(1, 3)), int(rng.integers(1, 4))
    n = int(rng.integers(1, 30)) if mode != "max" else int(rng.integers(10, 40))
    most = int(rng.integers(1, 8)) if mode != "max" else int(rng.integers(1, 4))
    bscale, bzp = float(np.float32(10 ** rng.uniform(-2, 0))), int(rng.integers(-40, 40))
    sscale, szp = float(np.float32(1 / 256)), -128
    boxes = rng.integers(-128, 128, (nb, n, 4)).astype(np.int8)
    if center_point_box and rng.random() < 0.7:          # mostly positive widths and heights
        boxes[..., 2:] = rng.integers(bzp + 1, 128, (nb, n, 2))
    scores = rng.integers(-128, 128, (nb, nc, n)).astype(np.int8)
    threshold = float(rng.uniform(0.0, 0.8))
    iou = float(np.float32(rng.uniform(0.0, 1.0)))
    if mode == "ties":
        scores = rng.choice(rng.integers(-128, 128, 3), (nb, nc, n)).astype(np.int8)
    elif mode == "overlap":                              # one box with an area, copied
        boxes[:, 0] = [bzp, bzp, bzp + 50, bzp + 40] if center_point_box else [bzp - 50, bzp - 40, bzp + 30, bzp + 60]
        boxes[:] = boxes[:, :1]
    elif mode == "none":
        threshold = 1.0
    elif mode == "max":                                  # a row of small disjoint boxes: many kept
        k = np.arange(n, dtype=np.int32)
        boxes = np.zeros((nb, n, 4), np.int8)
        if center_point_box:
            boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3] = 3 * k - 64, 0, 2, 2
        else:
            boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3] = 0, 3 * k - 64, 2, 3 * k - 62
        bzp, threshold = 0, 0.0
    p = dict(num_batches=nb, num_classes=nc, num_boxes=n, max_per_class=min(most, n),
             center_point_box=center_point_box, has_score_threshold=int(with_score_threshold), boxes_zp=bzp,
             scores_zp=szp)
    fparams = np.array([bscale, sscale, iou, threshold], np.float32)
    inits = [helper.make_tensor("most", TensorProto.INT64, [1], [most]),
             helper.make_tensor("iou", TensorProto.FLOAT, [1], [iou])]
    ins = ["boxes", "scores", "most", "iou"]
    if with_score_threshold:
        inits.append(helper.make_tensor("thr", TensorProto.FLOAT, [1], [float(np.float32(threshold))]))
        ins.append("thr")
    node = helper.make_node("NonMaxSuppression", ins, ["sel"], center_point_box=center_point_box)
    graph = helper.make_graph([node], "nms", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [nb, n, 4]),
                                              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [nb, nc, n])],
                              [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return p, boxes, scores, fparams, model.SerializeToString()


def ort_run(p, boxes, scores, fparams, model: bytes) -> np.ndarray:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    fb = (boxes.astype(np.float32) - np.float32(p["boxes_zp"])) * fparams[0]
    fs = (scores.astype(np.float32) - np.float32(p["scores_zp"])) * fparams[1]
    return sess.run(None, {"boxes": fb, "scores": fs})[0]


def c_run(ck, p, boxes, scores, fparams) -> np.ndarray:
    """The C kernel's output; its scratch (as big as the header's get_buffer_size says) and output are followed by
    guard bytes it must not touch."""
    size, total = cheader.buffer_size("edgec_nms_s8", p), 3 * nms.max_selected(p) + 1
    scratch = np.full(size + 16, 0xA5, np.uint8)
    out = np.full(total + 4, np.nan, np.float32)
    ck.lib.edgec_nms_s8(ctypes.byref(make("edgec_nms_params", p)), ptr(boxes), ptr(scores), ptr(fparams),
                        ptr(scratch), ptr(out))
    assert np.all(scratch[size:] == 0xA5) and np.all(np.isnan(out[total:]))
    return out[:total]


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("mode", MODES)
def test_twin_and_c_match_onnxruntime(ck, mode, center_point_box):
    rng = np.random.default_rng(MODES.index(mode) * 2 + center_point_box)
    selected = reached = 0
    for k in range(25):
        p, boxes, scores, fparams, model = nms_case(rng, mode, center_point_box, with_score_threshold=k % 4 != 3)
        want = ort_run(p, boxes, scores, fparams, model)
        got = nms.nms(p, boxes, scores, fparams)
        np.testing.assert_array_equal(nms.selected(got, p), want)
        np.testing.assert_array_equal(c_run(ck, p, boxes, scores, fparams).view(np.uint32), got.view(np.uint32))
        selected += len(want)
        counts = np.unique(want[:, :2], axis=0, return_counts=True)[1] if len(want) else np.zeros(0)
        reached += int(np.any(counts == p["max_per_class"]))
        if mode == "none" and p["has_score_threshold"]:
            assert len(want) == 0                       # no score above 1.0
        if mode == "overlap" and fparams[2] < 1:
            assert np.all(counts == 1)                   # one box a class: it suppresses its copies
    assert selected > 0                 # ("none": the cases without a score threshold select boxes)
    if mode == "max":
        assert reached >= 18


def test_float_run_matches_onnxruntime_on_float_boxes():
    """The float run (edgec/quant/floatref.py's, from the op's attrs) on float boxes and scores off any int8 grid:
    onnxruntime's selection, every mode, both box formats, with and without a score threshold."""
    from edgec.ir import Op

    rng = np.random.default_rng(11)
    picked = 0
    for k in range(40):
        p, _, _, fparams, model = nms_case(rng, MODES[k % len(MODES)], k % 2, k % 4 != 3)
        nb, nc, n = p["num_batches"], p["num_classes"], p["num_boxes"]
        boxes = rng.normal(0, 1, (nb, n, 4)).astype(np.float32)
        if k % 2:
            boxes[..., 2:] = np.abs(boxes[..., 2:])
        scores = rng.uniform(0, 1, (nb, nc, n)).astype(np.float32)
        op = Op("nms", "nms", ("b", "s"), "y", attrs=dict(
            num_batches=nb, num_classes=nc, num_boxes=n, max_per_class=p["max_per_class"], center_point_box=k % 2,
            iou_threshold=fparams[2], score_threshold=fparams[3] if p["has_score_threshold"] else None))
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"boxes": boxes,
                                                                                        "scores": scores})[0]
        got = nms.run_float_nms(op, [boxes.astype(np.float64), scores.astype(np.float64)])
        np.testing.assert_array_equal(nms.selected(got, p), want)
        picked += len(want)
    assert picked > 40


def test_imported_model_reference_and_host_c_match_onnxruntime(tmp_path):
    """Single-node ONNX models (boxes and scores the model's inputs, so that the int8 inputs stand exactly for the
    float ones) through edgec's ONNX import and calibration: the NumPy reference of the graph and its generated C
    (compiled for the host) against onnxruntime on the dequantized inputs; the output is the static
    [selected x 3 | count]."""
    import onnx

    import tflite_oracle
    from edgec import api, ports
    from edgec.quant import artifact, reference

    rng = np.random.default_rng(7)
    graphs, xs, wants, picked = [], [], [], 0
    for i in range(4):
        p, boxes, scores, fparams, model = nms_case(rng, MODES[i % len(MODES)], i % 2, i != 3, batches=1)
        m = onnx.load_from_string(model)
        f = tmp_path / f"nms{i}.onnx"
        onnx.save(m, f)
        n, nc = p["num_boxes"], p["num_classes"]
        x = {"x_boxes": rng.uniform(-1, 1, (30, n, 4)).astype(np.float32),
             "x_scores": rng.uniform(0, 1, (30, nc, n)).astype(np.float32)}
        np.savez(tmp_path / f"calib{i}.npz", **x)
        out = tmp_path / f"build{i}"
        api.build(f, tmp_path / f"calib{i}.npz", "host", out, firmware=False)
        g = artifact.load_graph(out)
        xq = ports.quantize_inputs(g, np.concatenate([x["x_boxes"].reshape(30, -1), x["x_scores"].reshape(30, -1)], 1))
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        tb, ts = (g.tensors[t] for t in g.inputs)
        for q in xq[:10]:
            fb = (q[:n * 4].astype(np.float32) - np.float32(tb.zero_point)) * np.float32(tb.scale)
            fs = (q[n * 4:].astype(np.float32) - np.float32(ts.zero_point)) * np.float32(ts.scale)
            want = sess.run(None, {"boxes": fb.reshape(1, n, 4), "scores": fs.reshape(1, nc, n)})[0]
            got = np.asarray(reference.run(g, q), np.float32).reshape(-1)
            np.testing.assert_array_equal(nms.selected(got, g.ops[-1].params), want)
            picked += len(want)
        graphs.append(g)
        xs.append(xq[:10])
        wants.append(np.stack([np.asarray(reference.run(g, q), np.float32).reshape(-1) for q in xq[:10]]))
    assert picked > 0
    for got, want in zip(tflite_oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.float32).reshape(want.shape).view(np.uint32),
                                      want.view(np.uint32))


def test_what_edgec_cannot_bound_is_refused_in_one_line(tmp_path):
    """No max_output_boxes_per_class (ONNX: select nothing), a computed threshold, center_point_box 2: refused in
    one line naming the node and what to do."""
    from edgec.errors import EdgecError
    from edgec.frontend import loader
    from edgec.frontend.canonicalize import canonicalize

    def refused(ins, inits, nodes=(), **attrs):
        node = helper.make_node("NonMaxSuppression", ins, ["sel"], **attrs)
        g = helper.make_graph([*nodes, node], "nms",
                              [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 5, 4]),
                               helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 5])],
                              [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        with pytest.raises(EdgecError) as e:
            canonicalize(loader.prepare(m), "nms")
        assert "\n" not in str(e.value)
        return str(e.value)

    most = helper.make_tensor("most", TensorProto.INT64, [1], [3])
    assert "max_output_boxes_per_class" in refused(["boxes", "scores"], [])
    assert "center_point_box" in refused(["boxes", "scores", "most"], [most], center_point_box=2)
    computed = [helper.make_node("ReduceMax", ["scores"], ["thr"], keepdims=0)]
    assert "constant" in refused(["boxes", "scores", "most", "", "thr"], [most], computed)


@pytest.mark.slow
def test_a_detector_tail_on_cortex_m4_matches_the_reference(tmp_path):
    """Sigmoid scores and Relu boxes into NonMaxSuppression (two classes, at most 3 boxes a class, score and IoU
    thresholds), built for the emulated Cortex-M4 and run over the serial link: every device output equals the
    reference's bit for bit, and the reference's selection is onnxruntime's on the dequantized inputs of the
    NMS (checked above)."""
    import onnx

    from edgec import api, ports
    from edgec.device.device import open_device
    from edgec.quant import artifact, reference
    from edgec.targets.build_folder import load_build

    n, c = 12, 2
    inits = [helper.make_tensor("most", TensorProto.INT64, [1], [3]),
             helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.5]), helper.make_tensor("thr", TensorProto.FLOAT, [1], [0.8])]
    nodes = [helper.make_node("Sigmoid", ["logits"], ["scores"]), helper.make_node("Relu", ["raw"], ["boxes"]),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "most", "iou", "thr"], ["sel"])]
    g = helper.make_graph(nodes, "nmsnet", [helper.make_tensor_value_info("raw", TensorProto.FLOAT, [1, n, 4]),
                                            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, c, n])],
                          [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    rng = np.random.default_rng(0)
    raw = rng.uniform(0, 1, (24, n, 4)).astype(np.float32)
    raw[..., 2:] += raw[..., :2]
    logits = rng.normal(-1, 2, (24, c, n)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x_raw=raw, x_logits=logits)
    out = tmp_path / "build"
    api.build(tmp_path / "m.onnx", tmp_path / "calib.npz", "qemu-cortex-m4", out)
    graph = artifact.load_graph(out)
    xq = ports.quantize_inputs(graph, np.concatenate([raw.reshape(24, -1), logits.reshape(24, -1)], 1))
    _, board, firmware = load_build(out)
    counts = []
    with open_device(board, firmware) as dev:
        dev.link.hello()
        for q in xq:
            got = np.frombuffer(dev.link.run_checked(q.tobytes())["output"], np.float32)
            want = np.asarray(reference.run(graph, q), np.float32).reshape(-1)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
            counts.append(int(want[-1]))
    assert max(counts) > 0 and len(set(counts)) > 1        # boxes selected, not always as many
