"""scikit-learn models through skl2onnx (sklearn-onnx), as a user who trained a small model in scikit-learn exports
it: an MLPRegressor anomaly scorer over sensor features (MatMul/Add/Relu, the batch dimension dynamic). Trained on
seeded synthetic data; calibration rows drawn as export_torch.py's `inputs` (so evaluation.py draws them again).
skl2onnx's classifiers end in ai.onnx.ml operators (Scaler, ArrayFeatureExtractor for the label, ZipMap), which
edgec refuses by name (docs/corpus.md).

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install skl2onnx scikit-learn onnx
    /tmp/skl/bin/python scripts/corpus/export_sklearn.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402

OWN = "Apache-2.0 (this repository)"
FEATURES = 24


def mlp_anomaly_score():
    """An MLP regressor scoring how far a feature row is from normal operation (higher: more anomalous)."""
    from sklearn.neural_network import MLPRegressor
    rng = np.random.default_rng(29)
    x = rng.standard_normal((2000, FEATURES)).astype(np.float32)
    score = np.abs(x[:, :6]).sum(1) + 0.5 * np.maximum(x[:, 6:12], 0).sum(1)
    return MLPRegressor(hidden_layer_sizes=(32, 16), max_iter=400, random_state=0).fit(x, score)


MODELS = {"skl_mlp_anomaly_score": ("anomaly", mlp_anomaly_score)}


def export(name: str) -> None:
    import onnx
    import sklearn
    import skl2onnx
    kind, make = MODELS[name]
    model = make()
    calib = np.random.default_rng(sum(map(ord, name))).standard_normal((32, FEATURES)).astype(np.float32)
    onx = skl2onnx.to_onnx(model, calib[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    out = manifest.corpus_file(name)
    onnx.save(onx, str(out))
    manifest.save_calibration(out.parent, calib)
    manifest.record_export(name, kind, out, "scripts/corpus/export_sklearn.py", "python", OWN,
                           {"architecture": f"scikit-learn {sklearn.__version__} MLPRegressor",
                            "exporter": f"skl2onnx {skl2onnx.__version__} to_onnx (opset 17)",
                            "weights": "trained on seeded synthetic rows (scripts/corpus/export_sklearn.py)"}, True)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
