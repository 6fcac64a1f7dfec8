"""Train a tiny single-shot detector (one box per cell of a 4x4 grid, YOLO-v1 style without the confidence
output: three sigmoid class scores per cell) on synthetic 32x32 canvases holding one to three shapes (square,
disc, cross), and write it as ONNX ending in NonMaxSuppression, so edgec builds the whole detector including its
post-processing for the device.

Needs torch (not a dependency of edgec; its `corpus` extra: `pip install -e '.[corpus]'`):
    python examples/shapes_detector/train.py

Data: canvases drawn here (noise background on 8 levels; shapes of 7..13 pixels, one brightness a class, whose
centres fall in distinct grid cells):
4000 training canvases (seed 1), 256 calibration canvases drawn from the training distribution (seed 3) and 500
test canvases (seed 2), each set drawn independently. The ONNX graph (opset 13) is written with onnx.helper from
the trained weights:

    Conv 3x3 (8) Relu MaxPool, Conv 3x3 (16) Relu MaxPool, Conv 3x3 (24) Relu MaxPool, Conv 3x3 (24) Relu,
    Conv 1x1 (7): per cell 4 box values and 3 class logits -> Reshape [1, 7, 16]
    box: Slice [0:4] -> Transpose [1, 16, 4] -> Sigmoid -> Mul by a constant, Add the cell's corner: boxes
         (x centre, y centre, width, height) in 0..1 of the canvas
    class: Slice [4:7] -> Sigmoid: scores [1, 3, 16]
    NonMaxSuppression(boxes, scores, 4 a class, IoU 0.5, score 0.2, center_point_box 1): selected

Outputs: boxes, scores, selected (ONNX's [K, 3] (batch, class, box) indices). Writes next to this file:
model.onnx, calib.npz, test.npz (with ground-truth boxes, labels and box_count in edgec bench's format,
docs/benchmarking.md#detection-models) and float_map.json (the float model's mAP on test.npz, computed by
onnxruntime and edgec's metric). Deterministic on one thread.
"""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
S, G, C = 32, 4, 3                    # canvas side, grid side, classes
CELL = S // G
MAX_OBJECTS = 3
MAX_WH = 0.5                          # widths and heights are sigmoid * 0.5 of the canvas
WIDTHS = (8, 16, 24, 24)
MAX_PER_CLASS, IOU, SCORE = 4, 0.5, 0.2


def draw(kind: int, size: int, cy: float, cx: float, canvas: np.ndarray) -> tuple[float, float, float, float]:
    """Draws one shape centred at (cy, cx) in pixels; returns its box (ymin, xmin, ymax, xmax) in pixels."""
    yy, xx = np.mgrid[0:S, 0:S] + 0.5
    h = size / 2
    if kind == 0:                                             # filled square
        mask = (np.abs(yy - cy) <= h) & (np.abs(xx - cx) <= h)
    elif kind == 1:                                           # disc
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= h * h
    else:                                                     # cross, bars a third of the size wide
        t = max(size / 6, 1.0)
        mask = ((np.abs(yy - cy) <= h) & (np.abs(xx - cx) <= t)) | ((np.abs(xx - cx) <= h) & (np.abs(yy - cy) <= t))
    canvas[mask] = np.maximum(canvas[mask], 0.75 + kind / 8)
    ys, xs = np.nonzero(mask)
    return float(ys.min()), float(xs.min()), float(ys.max() + 1), float(xs.max() + 1)


def canvases(n: int, seed: int):
    """n canvases [n, 1, S, S] with their boxes [n, 3, 4] (ymin, xmin, ymax, xmax in 0..1), labels [n, 3] and
    box counts [n]."""
    rng = np.random.default_rng(seed)
    x = (rng.integers(0, 8, (n, 1, S, S)) / 32).astype(np.float32)     # noise on 8 levels: the .npz stay small
    boxes = np.zeros((n, MAX_OBJECTS, 4), np.float32)
    labels = np.zeros((n, MAX_OBJECTS), np.int64)
    count = rng.integers(1, MAX_OBJECTS + 1, n)
    for i in range(n):
        cells = rng.choice(G * G, count[i], replace=False)
        for j, cell in enumerate(cells):
            kind, size = int(rng.integers(0, C)), int(rng.integers(7, 14))
            gy, gx = divmod(int(cell), G)
            lo, hi = size / 2, S - size / 2                    # the whole shape on the canvas
            cy = float(np.clip((gy + rng.random()) * CELL, lo, hi))
            cx = float(np.clip((gx + rng.random()) * CELL, lo, hi))
            box = draw(kind, size, cy, cx, x[i, 0])
            boxes[i, j], labels[i, j] = np.array(box, np.float32) / S, kind
    return x, boxes, labels, count.astype(np.int64)


def targets(boxes, labels, count):
    """Per cell: the box (x centre, y centre, width, height; 0..1), the class one-hot and whether an object's
    centre falls in it."""
    n = len(boxes)
    box_t = np.zeros((n, G * G, 4), np.float32)
    cls_t = np.zeros((n, C, G * G), np.float32)
    pos = np.zeros((n, G * G), np.float32)
    for i in range(n):
        for j in range(count[i]):
            y0, x0, y1, x1 = boxes[i, j]
            cy, cx = (y0 + y1) / 2, (x0 + x1) / 2
            cell = min(int(cy * G), G - 1) * G + min(int(cx * G), G - 1)
            box_t[i, cell] = [cx, cy, x1 - x0, y1 - y0]
            cls_t[i, labels[i, j], cell] = 1.0
            pos[i, cell] = 1.0
    return box_t, cls_t, pos


def grid_constants():
    """The decode's constants [1, 16, 4]: box = sigmoid(t) * scale + offset (the cell's corner for the centre)."""
    gy, gx = np.divmod(np.arange(G * G), G)
    scale = np.array([[[1 / G, 1 / G, MAX_WH, MAX_WH]]], np.float32)            # [1, 1, 4], broadcast
    offset = np.stack([gx / G, gy / G, np.zeros(G * G), np.zeros(G * G)], 1).astype(np.float32)
    return scale, offset[None]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans, layers = [1, *WIDTHS], []
        for i in range(len(WIDTHS)):
            layers += [torch.nn.Conv2d(chans[i], chans[i + 1], 3, padding=1), torch.nn.ReLU()]
            if i < 3:
                layers.append(torch.nn.MaxPool2d(2))
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Conv2d(WIDTHS[-1], 4 + C, 1)
        scale, offset = grid_constants()
        self.register_buffer("scale", torch.from_numpy(scale))
        self.register_buffer("offset", torch.from_numpy(offset))

    def forward(self, x):
        h = self.head(self.body(x)).reshape(len(x), 4 + C, G * G)
        boxes = torch.sigmoid(h[:, :4].transpose(1, 2)) * self.scale + self.offset
        return boxes, h[:, 4:]                       # boxes, class logits


def train(x, box_t, cls_t, pos, epochs=60, batch=64):
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    xt, bt, ct, pt = (torch.from_numpy(a) for a in (x, box_t, cls_t, pos))
    gen = torch.Generator().manual_seed(0)
    for epoch in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for k in range(0, len(xt), batch):
            idx = perm[k:k + batch]
            boxes, logits = net(xt[idx])
            cls_loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, ct[idx], reduction="sum")
            box_loss = (torch.abs(boxes - bt[idx]).sum(-1) * pt[idx]).sum() * 20
            loss = (cls_loss + box_loss) / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        if epoch % 10 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch}: loss {total / len(xt):.4f}")
    return net.eval()


def to_onnx(net: Net) -> onnx.ModelProto:
    inits, nodes, prev = [], [], "input"
    convs = [m for m in net.body if isinstance(m, torch.nn.Conv2d)] + [net.head]
    for i, conv in enumerate(convs):
        w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
        inits += [numpy_helper.from_array(w, f"conv{i}.weight"), numpy_helper.from_array(b, f"conv{i}.bias")]
        k = w.shape[2] // 2
        out = "head" if conv is net.head else f"conv{i}"
        nodes.append(helper.make_node("Conv", [prev, f"conv{i}.weight", f"conv{i}.bias"], [out], name=out,
                                      kernel_shape=list(w.shape[2:]), pads=[k] * 4))
        prev = out
        if conv is not net.head:
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i}"], name=f"relu{i}"))
            prev = f"relu{i}"
            if i < 3:
                nodes.append(helper.make_node("MaxPool", [prev], [f"pool{i}"], name=f"pool{i}",
                                              kernel_shape=[2, 2], strides=[2, 2]))
                prev = f"pool{i}"
    scale, offset = grid_constants()
    inits += [numpy_helper.from_array(np.array([1, 4 + C, G * G], np.int64), "cells_shape"),
              numpy_helper.from_array(np.array([0], np.int64), "box_from"),
              numpy_helper.from_array(np.array([4], np.int64), "box_to"),
              numpy_helper.from_array(np.array([4 + C], np.int64), "cls_to"),
              numpy_helper.from_array(np.array([1], np.int64), "axis1"),
              numpy_helper.from_array(scale, "box_scale"), numpy_helper.from_array(offset, "box_offset"),
              numpy_helper.from_array(np.array([MAX_PER_CLASS], np.int64), "max_per_class"),
              numpy_helper.from_array(np.array([IOU], np.float32), "iou_threshold"),
              numpy_helper.from_array(np.array([SCORE], np.float32), "score_threshold")]
    nodes += [helper.make_node("Reshape", ["head", "cells_shape"], ["cells"], name="cells"),
              helper.make_node("Slice", ["cells", "box_from", "box_to", "axis1"], ["box_raw"], name="box_raw"),
              helper.make_node("Transpose", ["box_raw"], ["box_t"], name="box_t", perm=[0, 2, 1]),
              helper.make_node("Sigmoid", ["box_t"], ["box_sig"], name="box_sig"),
              helper.make_node("Mul", ["box_sig", "box_scale"], ["box_scaled"], name="box_scaled"),
              helper.make_node("Add", ["box_scaled", "box_offset"], ["boxes"], name="boxes"),
              helper.make_node("Slice", ["cells", "box_to", "cls_to", "axis1"], ["logits"], name="logits"),
              helper.make_node("Sigmoid", ["logits"], ["scores"], name="scores"),
              helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_per_class", "iou_threshold",
                                                     "score_threshold"], ["selected"], name="nms",
                               center_point_box=1)]
    graph = helper.make_graph(
        nodes, "shapes_detector", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, S, S])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, G * G, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, C, G * G]),
         helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgec-example")
    onnx.checker.check_model(model)
    return model


def float_detections(model: onnx.ModelProto, x: np.ndarray):
    """onnxruntime's detections of every canvas: (boxes (ymin, xmin, ymax, xmax) [k, 4], classes [k], scores [k])."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = []
    for xi in x:
        boxes, scores, sel = sess.run(None, {"input": xi[None]})
        b = boxes[0, sel[:, 2]]
        corners = np.stack([b[:, 1] - b[:, 3] / 2, b[:, 0] - b[:, 2] / 2, b[:, 1] + b[:, 3] / 2,
                            b[:, 0] + b[:, 2] / 2], 1)
        out.append((corners, sel[:, 1], scores[0, sel[:, 1], sel[:, 2]]))
    return out


def main():
    torch.set_num_threads(1)
    x, boxes, labels, count = canvases(4000, seed=1)
    net = train(x, *targets(boxes, labels, count))
    with torch.no_grad():
        want_boxes, want_logits = net(torch.from_numpy(x[:8]))
    model = to_onnx(net)
    onnx.save(model, os.path.join(HERE, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = [sess.run(["boxes", "scores"], {"input": x[i:i + 1]}) for i in range(8)]
    assert np.allclose(np.concatenate([g[0] for g in got]), want_boxes.numpy(), atol=1e-5)
    assert np.allclose(np.concatenate([g[1] for g in got]), torch.sigmoid(want_logits).numpy(), atol=1e-5)
    cx, *_ = canvases(256, seed=3)
    np.savez_compressed(os.path.join(HERE, "calib.npz"), x=cx)
    tx, tb, tl, tc = canvases(500, seed=2)
    np.savez_compressed(os.path.join(HERE, "test.npz"), x=tx, boxes=tb, labels=tl, box_count=tc)
    try:          # edgec's metric, when edgec is installed beside torch
        from edgec.bench.detection_metrics import Detections, mean_average_precision
    except ImportError:
        return
    dets = [Detections.of(b, c, s) for b, c, s in float_detections(model, tx)]
    truth = [Detections.of(tb[i, :tc[i]], tl[i, :tc[i]]) for i in range(len(tx))]
    m = mean_average_precision(dets, truth)
    print(f"float mAP@0.5 {100 * m['map50']:.2f}, mAP@0.5:0.95 {100 * m['map50_95']:.2f}")
    with open(os.path.join(HERE, "float_map.json"), "w") as f:
        json.dump({"map50": m["map50"], "map50_95": m["map50_95"], "test_canvases": len(tx)}, f, indent=1)


if __name__ == "__main__":
    main()
