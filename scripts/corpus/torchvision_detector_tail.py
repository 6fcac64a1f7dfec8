"""torchvision's SSDLite (ssdlite320_mobilenet_v3_large) exported WITH its post-processing by torch.onnx (the
TorchScript exporter, as a user exports `model.eval()`), then given to edgec: records whether edgec builds the
decode -> score threshold -> TopK -> batched NonMaxSuppression tail torchvision writes (docs/models.md,
"Detectors from public sources"). Random weights (seeded, 3 classes, 10 detections an image): the graph is what
matters. Nothing is written in the repository; the ONNX file goes to a temporary folder.

    pip install -e '.[corpus]'          # torch, torchvision
    python scripts/corpus/torchvision_detector_tail.py
"""
from __future__ import annotations

import collections
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
import torchvision

from edgec import api
from edgec.errors import EdgecError


def main() -> int:
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=3, detections_per_img=10, topk_candidates=50).eval()
    with tempfile.TemporaryDirectory(prefix="edgec-tv-detector-") as tmp:
        path = Path(tmp) / "ssdlite320_postprocess.onnx"
        torch.onnx.export(model, (torch.rand(1, 3, 320, 320),), str(path), opset_version=13, dynamo=False,
                          input_names=["images"], output_names=["boxes", "scores", "labels"])
        kinds = collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node)
        print(f"torchvision {torchvision.__version__} SSDLite320 with post-processing: "
              + ", ".join(f"{k} {kinds[k]}" for k in ("NonZero", "TopK", "GatherND", "If", "NonMaxSuppression")))
        np.savez(Path(tmp) / "calib.npz", x=np.random.default_rng(0).random((4, 3, 320, 320), np.float32))
        try:
            api.build(path, Path(tmp) / "calib.npz", "host", Path(tmp) / "build", firmware=False)
        except EdgecError as exc:
            print(f"refused: {exc}")
            return 0
        print("built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
