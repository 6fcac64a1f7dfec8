"""Writes tests/data/skl_*.onnx and skl_heads_data.npz: scikit-learn linear classifiers as users export them with
skl2onnx 1.20 (`zipmap=False`: the label and the probabilities as two tensors), the ai.onnx.ml operators that
edgec/frontend/onnx_ml.py writes in ONNX operators:

- skl_logreg_multi.onnx: StandardScaler -> LogisticRegression over 3 classes (Scaler, LinearClassifier SOFTMAX);
- skl_logreg_binary.onnx: LogisticRegression over 2 classes (LinearClassifier LOGISTIC, one coefficient row,
  Normalizer L1);
- skl_linear_svc.onnx: LinearSVC over 4 classes (LinearClassifier NONE: the decision scores);
- skl_mlp_pipeline.onnx: StandardScaler -> MLPClassifier over 4 classes (Scaler, the network in ONNX operators,
  ArgMax -> ArrayFeatureExtractor of the class list -> Reshape -> Cast for the label);
- skl_logreg_strings.onnx: LogisticRegression with string labels (refused: edgec's outputs are numbers);
- skl_logreg_zipmap.onnx: skl_logreg_binary's model exported with skl2onnx's default ZipMap (refused: not a tensor).

Trained on seeded synthetic features (16 per row, as a network's pooled features). The npz holds 48 calibration
rows and 16 test rows. The tests never run scikit-learn; run this again only to refresh the files
(tests/test_onnx_ml.py):

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install skl2onnx scikit-learn onnx onnxruntime
    /tmp/skl/bin/python tests/data/make_sklearn_heads.py
"""
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FEATURES = 16


def main():
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(29)
    x = (rng.standard_normal((1200, FEATURES)) * 1.5 + 0.5).astype(np.float32)
    centres = rng.standard_normal((4, FEATURES)).astype(np.float32) * 1.2
    y4 = np.argmax(x @ centres.T + rng.standard_normal((1200, 4)) * 2.0, axis=1)
    models = {
        "skl_logreg_multi": (make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)), y4 % 3),
        "skl_logreg_binary": (LogisticRegression(max_iter=500), (y4 >= 2).astype(np.int64)),
        "skl_linear_svc": (LinearSVC(), y4),
        "skl_mlp_pipeline": (make_pipeline(StandardScaler(), MLPClassifier((24,), max_iter=400, random_state=0)), y4),
        "skl_logreg_strings": (LogisticRegression(max_iter=500), np.array(["low", "high"])[(y4 >= 2).astype(int)]),
    }
    for name, (model, labels) in models.items():
        model.fit(x[:1000], labels[:1000])
        options = {} if isinstance(model, LinearSVC) else {"zipmap": False}     # (LinearSVC writes no ZipMap)
        onx = to_onnx(model, x[:1], target_opset={"": 13, "ai.onnx.ml": 1}, options=options)
        (HERE / f"{name}.onnx").write_bytes(onx.SerializeToString())
    onx = to_onnx(models["skl_logreg_binary"][0], x[:1], target_opset={"": 13, "ai.onnx.ml": 1})
    (HERE / "skl_logreg_zipmap.onnx").write_bytes(onx.SerializeToString())
    np.savez_compressed(HERE / "skl_heads_data.npz", calib=x[1000:1048], test=x[1100:1116])


if __name__ == "__main__":
    main()
