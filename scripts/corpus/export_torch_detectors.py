"""A PyTorch detector ending in ONNX NonMaxSuppression, exported by torch.onnx (the TorchScript exporter) the way
YOLOv5's and YOLOv7's "end-to-end" ONNX exports write their NMS: a `torch.autograd.Function` whose `symbolic`
emits NonMaxSuppression with constant bounds and thresholds (static: at most MAX_PER_CLASS boxes a class),
so edgec builds the whole detector, post-processing included, for the device (issue 30).

torch_yolo_tiny_nms: the corpus's tiny YOLO-style network (export_torch.YoloTiny: two scales, 6x6 and 12x12,
2 anchors a cell, 2 classes; random seeded weights, BatchNorm statistics from its calibration inputs) with
YOLOv5's decode written in PyTorch (sigmoid; centre (2s - 0.5 + cell) / grid, size (2s)^2 x anchor; score =
objectness x class) and the same NonMaxSuppression: no test set, the bench reports its boxes' agreement with the
float model's.

tv_ssdlite320_mnv3_static_tail: torchvision's SSDLite320 MobileNetV3-Large (random weights, 3 classes and the
background, at 160x160) whose own post-processing edgec refuses (`scripts/corpus/torchvision_detector_tail.py`:
the score threshold's run-time count, Greater -> NonZero, then TopK and a batched NMS inside an If): its backbone
and head exported with the tail written as its static-bound equivalent: torchvision's BoxCoder decode (weights 10,
10, 5, 5, exp of the clamped size deltas) against the anchors its DefaultBoxGenerator makes for this input (a
constant), softmax scores without the background, and NonMaxSuppression with a constant bound per class (the
score threshold inside the NMS instead of a NonZero before it; no TopK: every anchor is a candidate).

torch_shapes_detector_nms_dynamo: the same through the dynamo exporter (the NMS a `torch.library` custom
operator translated to NonMaxSuppression by `custom_translation_table`).

torch_shapes_detector_nms: the network of examples/shapes_detector (`train.Net`, its trained weights read from
that example's model.onnx), the decode in PyTorch (Reshape, Slice, Transpose, Sigmoid, Mul, Add as torch.onnx
writes them) and the NMS above; evaluated on the example's test canvases (`edgec bench ... --data
examples/shapes_detector/test.npz`: float / reference / device mAP). Deterministic: the same bytes again with
the same torch.

    /work/torch-venv/bin/python scripts/corpus/export_torch_detectors.py      # torch, onnx, onnxruntime
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "examples" / "shapes_detector"))
import manifest  # noqa: E402
import train  # noqa: E402
from export_torch import TORCH_PYTHON, WEIGHTS, YoloTiny, inputs, seeded, set_batchnorm_from, to_onnx  # noqa: E402

YOLO_ANCHORS = (((0.3, 0.3), (0.5, 0.25)), ((0.12, 0.12), (0.2, 0.1)))   # (w, h) a scale: 6x6, 12x12
YOLO_CLASSES, YOLO_MAX, YOLO_IOU, YOLO_SCORE = 2, 10, 0.45, 0.25


class StaticNMS(torch.autograd.Function):
    """ONNX NonMaxSuppression with constant bounds (YOLOv5's ORT_NMS pattern): in PyTorch, torchvision's per-class
    NMS with the same thresholds; in the ONNX graph, the operator itself."""

    @staticmethod
    def forward(ctx, boxes, scores, max_per_class: int, iou: float, score: float, center: int = 1):
        rows = []
        xyxy = torch.cat([boxes[0, :, :2] - boxes[0, :, 2:] / 2, boxes[0, :, :2] + boxes[0, :, 2:] / 2], 1) \
            if center else boxes[0]
        for c in range(scores.shape[1]):
            s = scores[0, c]
            idx = torch.nonzero(s > score).reshape(-1)
            keep = idx[torchvision.ops.nms(xyxy[idx], s[idx], iou)][:max_per_class]
            rows += [[0, c, int(k)] for k in keep]
        return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)

    @staticmethod
    def symbolic(g, boxes, scores, max_per_class, iou, score, center=1):
        return g.op("NonMaxSuppression", boxes, scores,
                    g.op("Constant", value_t=torch.tensor([max_per_class], dtype=torch.int64)),
                    g.op("Constant", value_t=torch.tensor([iou], dtype=torch.float32)),
                    g.op("Constant", value_t=torch.tensor([score], dtype=torch.float32)), center_point_box_i=center)


@torch.library.custom_op("edgec_corpus::static_nms", mutates_args=())
def static_nms(boxes: torch.Tensor, scores: torch.Tensor, max_per_class: int, iou: float, score: float,
               center: int) -> torch.Tensor:
    """The same NMS as a custom operator, for the dynamo exporter (which does not read `symbolic`)."""
    return StaticNMS.forward(None, boxes, scores, max_per_class, iou, score, center)


@static_nms.register_fake
def _static_nms_shape(boxes, scores, max_per_class, iou, score, center):
    return boxes.new_empty((torch.library.get_ctx().new_dynamic_size(), 3), dtype=torch.int64)


def static_nms_onnx(boxes, scores, max_per_class: int, iou: float, score: float, center: int):
    """The dynamo exporter's translation of static_nms (custom_translation_table): ONNX NonMaxSuppression."""
    from onnxscript import opset18 as op
    return op.NonMaxSuppression(boxes, scores, op.Constant(value_ints=[max_per_class]),
                                op.Constant(value_floats=[iou]), op.Constant(value_floats=[score]),
                                center_point_box=center)


class Detector(torch.nn.Module):
    def __init__(self, net: train.Net, dynamo: bool = False):
        super().__init__()
        self.net, self.dynamo = net, dynamo

    def forward(self, x):
        boxes, logits = self.net(x)
        scores = torch.sigmoid(logits)
        nms = static_nms if self.dynamo else StaticNMS.apply
        return boxes, scores, nms(boxes, scores, train.MAX_PER_CLASS, train.IOU, train.SCORE, 1)


class YoloDetector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = YoloTiny(classes=YOLO_CLASSES, anchors=2)
        for k, (p, anchors) in enumerate(zip((6, 12), YOLO_ANCHORS)):
            gy, gx = np.divmod(np.arange(p * p), p)
            grid = np.tile(np.stack([gx, gy], 1)[None], (len(anchors), 1, 1)).reshape(1, -1, 2) / p
            wh = np.repeat(np.asarray(anchors), p * p, 0).reshape(1, -1, 2)
            self.register_buffer(f"grid{k}", torch.tensor(grid, dtype=torch.float32))
            self.register_buffer(f"anchor{k}", torch.tensor(wh, dtype=torch.float32))

    def decode(self, p, grid, anchor):
        a, n, h = 2, 5 + YOLO_CLASSES, p.shape[2]
        t = torch.sigmoid(p.reshape(1, a, n, h * h).permute(0, 1, 3, 2).reshape(1, a * h * h, n))
        xy = (t[..., :2] * 2 - 0.5) / h + grid
        wh = t[..., 2:4] * 2
        return torch.cat([xy, wh * wh * anchor], 2), t[..., 4:5] * t[..., 5:]

    def forward(self, x):
        p5, p4 = self.net(x)
        b5, s5 = self.decode(p5, self.grid0, self.anchor0)
        b4, s4 = self.decode(p4, self.grid1, self.anchor1)
        boxes, scores = torch.cat([b5, b4], 1), torch.cat([s5, s4], 1).transpose(1, 2)
        return boxes, scores, StaticNMS.apply(boxes, scores, YOLO_MAX, YOLO_IOU, YOLO_SCORE)


class TorchvisionSsdLite(torch.nn.Module):
    SIZE = 160

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.image_list import ImageList
        m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                        num_classes=4).eval()
        self.backbone, self.head = m.backbone, m.head
        x = torch.zeros(1, 3, self.SIZE, self.SIZE)
        with torch.no_grad():
            feats = list(self.backbone(x).values())
            anchors = m.anchor_generator(ImageList(x, [(self.SIZE, self.SIZE)]), feats)[0]    # xyxy pixels
        wh = anchors[:, 2:] - anchors[:, :2]
        self.register_buffer("anchor_ctr", (anchors[:, :2] + 0.5 * wh)[None])
        self.register_buffer("anchor_wh", wh[None])
        self.clip = float(np.log(1000.0 / 16))

    def forward(self, x):
        out = self.head(list(self.backbone(x).values()))
        rel, logits = out["bbox_regression"], out["cls_logits"]
        ctr = rel[..., :2] / 10.0 * self.anchor_wh + self.anchor_ctr
        wh = torch.exp(torch.clamp(rel[..., 2:] / 5.0, max=self.clip)) * self.anchor_wh
        boxes = torch.cat([ctr - 0.5 * wh, ctr + 0.5 * wh], 2) / self.SIZE
        scores = torch.softmax(logits, -1)[..., 1:].transpose(1, 2)
        return boxes, scores, StaticNMS.apply(boxes, scores, 10, 0.55, 0.3, 0)


def trained_net() -> train.Net:
    """train.Net with the weights of examples/shapes_detector/model.onnx (conv0..conv4)."""
    inits = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
             for i in onnx.load(str(HERE.parents[1] / "examples" / "shapes_detector" / "model.onnx")).graph.initializer}
    net = train.Net().eval()
    convs = [m for m in net.body if isinstance(m, torch.nn.Conv2d)] + [net.head]
    with torch.no_grad():
        for i, conv in enumerate(convs):
            conv.weight.copy_(inits[f"conv{i}.weight"])
            conv.bias.copy_(inits[f"conv{i}.bias"])
    return net


def shapes_detector(dynamo: bool = False) -> tuple:
    x = np.load(HERE.parents[1] / "examples" / "shapes_detector" / "test.npz")["x"][:1]
    calib = np.load(HERE.parents[1] / "examples" / "shapes_detector" / "calib.npz")["x"][:8]
    return Detector(trained_net(), dynamo).eval(), x, calib, {
        "architecture": "examples/shapes_detector/train.py", "weights": "trained here (examples/shapes_detector/"
        "model.onnx)", "test_set": "examples/shapes_detector/test.npz"}


def yolo_tiny() -> tuple:
    torch.manual_seed(sum(map(ord, "torch_yolo_tiny_nms")))
    model = YoloDetector().eval()
    calib = inputs("torch_yolo_tiny_nms", (3, 96, 96), 32)
    set_batchnorm_from(model.net, torch.from_numpy(calib))
    return model.eval(), calib[:1], calib[:8], {
        "architecture": "scripts/corpus/export_torch.py YoloTiny + YOLOv5's decode",
        "weights": WEIGHTS}


def tv_ssdlite() -> tuple:
    model, calib = seeded("tv_ssdlite320_mnv3_static_tail", TorchvisionSsdLite, (3, 160, 160))
    return model, calib[:1], calib[:8], {
        "architecture": f"torchvision {torchvision.__version__} ssdlite320_mobilenet_v3_large (backbone, head, "
                        "anchors) + its BoxCoder decode and NMS with static bounds",
        "weights": WEIGHTS}


MODELS = {"torch_shapes_detector_nms": shapes_detector, "torch_yolo_tiny_nms": yolo_tiny,
          "torch_shapes_detector_nms_dynamo": lambda: shapes_detector(dynamo=True),
          "tv_ssdlite320_mnv3_static_tail": tv_ssdlite}


def export(name: str) -> None:
    model, x, calib, source = MODELS[name]()
    out = manifest.corpus_file(name)
    names = {"input_names": ["input"], "output_names": ["boxes", "scores", "selected"]}
    if name.endswith("_dynamo"):
        how = to_onnx(model, x, out, dynamo=True, **names,
                      custom_translation_table={torch.ops.edgec_corpus.static_nms.default: static_nms_onnx})
        how += "; NonMaxSuppression from a torch.library custom op and its custom_translation_table entry"
    else:
        how = to_onnx(model, x, out, 13, dynamic_axes={"selected": {0: "selected"}}, **names)
        how += ("; NonMaxSuppression from a torch.autograd.Function symbolic (YOLOv5/YOLOv7 end-to-end export "
                "pattern)")
    manifest.save_calibration(out.parent, calib)
    manifest.record_export(name, "detection", out, "scripts/corpus/export_torch_detectors.py", TORCH_PYTHON,
                           "BSD-3-Clause (torchvision)" if name.startswith("tv_") else "Apache-2.0 (this repository)",
                           {"exporter": how, **source})
    print("  ops: " + ", ".join(sorted({n.op_type for n in onnx.load(str(out)).graph.node})))


def main(argv=None) -> int:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
