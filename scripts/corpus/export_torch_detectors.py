"""A PyTorch detector ending in ONNX NonMaxSuppression, exported by torch.onnx (the TorchScript exporter) the way
YOLOv5's and YOLOv7's "end-to-end" ONNX exports write their NMS: a `torch.autograd.Function` whose `symbolic`
emits NonMaxSuppression with constant bounds and thresholds (static: at most MAX_PER_CLASS boxes a class),
so edgec builds the whole detector, post-processing included, for the device (issue 30).

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

NAME = "torch_shapes_detector_nms"


class StaticNMS(torch.autograd.Function):
    """ONNX NonMaxSuppression with constant bounds (YOLOv5's ORT_NMS pattern): in PyTorch, torchvision's per-class
    NMS with the same thresholds; in the ONNX graph, the operator itself."""

    @staticmethod
    def forward(ctx, boxes, scores, max_per_class: int, iou: float, score: float):
        rows = []
        xyxy = torch.cat([boxes[0, :, :2] - boxes[0, :, 2:] / 2, boxes[0, :, :2] + boxes[0, :, 2:] / 2], 1)
        for c in range(scores.shape[1]):
            s = scores[0, c]
            idx = torch.nonzero(s > score).reshape(-1)
            keep = idx[torchvision.ops.nms(xyxy[idx], s[idx], iou)][:max_per_class]
            rows += [[0, c, int(k)] for k in keep]
        return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)

    @staticmethod
    def symbolic(g, boxes, scores, max_per_class, iou, score):
        return g.op("NonMaxSuppression", boxes, scores,
                    g.op("Constant", value_t=torch.tensor([max_per_class], dtype=torch.int64)),
                    g.op("Constant", value_t=torch.tensor([iou], dtype=torch.float32)),
                    g.op("Constant", value_t=torch.tensor([score], dtype=torch.float32)), center_point_box_i=1)


class Detector(torch.nn.Module):
    def __init__(self, net: train.Net):
        super().__init__()
        self.net = net

    def forward(self, x):
        boxes, logits = self.net(x)
        scores = torch.sigmoid(logits)
        return boxes, scores, StaticNMS.apply(boxes, scores, train.MAX_PER_CLASS, train.IOU, train.SCORE)


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


def main() -> int:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    model = Detector(trained_net()).eval()
    folder = manifest.CORPUS / NAME
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "model.onnx"
    x = torch.from_numpy(np.load(HERE.parents[1] / "examples" / "shapes_detector" / "test.npz")["x"][:1])
    torch.onnx.export(model, (x,), str(out), opset_version=13, dynamo=False, input_names=["input"],
                      output_names=["boxes", "scores", "selected"], dynamic_axes={"selected": {0: "selected"}})
    calib = np.load(HERE.parents[1] / "examples" / "shapes_detector" / "calib.npz")["x"]
    np.savez_compressed(folder / "calib.npz", x=calib[:8])
    manifest.record(NAME, "detection", out, {
        "made_by": "scripts/corpus/export_torch_detectors.py", "architecture": "examples/shapes_detector/train.py",
        "exporter": f"torch.onnx (torchscript), torch {torch.__version__}; NonMaxSuppression from a "
                    "torch.autograd.Function symbolic (YOLOv5/YOLOv7 end-to-end export pattern)",
        "weights": "trained here (examples/shapes_detector/model.onnx)",
        "test_set": "examples/shapes_detector/test.npz"},
        "Apache-2.0 (this repository)", True,
        "/work/torch-venv/bin/python scripts/corpus/export_torch_detectors.py")
    print(f"{NAME}: {out.stat().st_size:,} bytes; ops: "
          + ", ".join(sorted({n.op_type for n in onnx.load(str(out)).graph.node})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
