"""Issue 34's int4 check on the KWS example's classifier: top-1 on the unseen-voice test set's features (the
micro_speech preprocessor's, data/features.npz) of the float model, the int8 build, and int4 weights with
nearest rounding and with the GPTQ-style rounding (edgec/quant/rounding.py), all by edgec's integer reference
(bit-exact with the device). Calibration: the features of 200 training clips.

    .venv/bin/python examples/kws_audio/int4.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgec import api
from edgec.quant import calibrate, reference
from edgec.frontend import loader
from edgec import ports

HERE = Path(__file__).resolve().parent


def main() -> None:
    f = np.load(HERE / "data" / "features.npz")
    calib = {"x": f["x_train"][:200].astype(np.float32)[:, None]}
    x, y = f["x_test"].astype(np.float32)[:, None], f["y_test"]
    model = HERE / "model.onnx"
    float_pred = calibrate.run_float(loader.load_model(model), x).reshape(len(x), -1).argmax(1)
    print(f"float: {100 * np.mean(float_pred == y):.2f} %")
    for label, opts in (("int8", {}), ("int4 nearest", {"weights": "int4", "rounding": "nearest"}),
                        ("int4 gptq", {"weights": "int4", "rounding": "gptq"})):
        g = api.calibrate(model, calib, **opts).graph
        xq = ports.quantize_inputs(g, x)
        pred = np.array([reference.run(g, v).reshape(-1).argmax() for v in xq])
        print(f"{label}: {100 * np.mean(pred == y):.2f} % (agreement with float top-1 "
              f"{100 * np.mean(pred == float_pred):.2f} %)")


if __name__ == "__main__":
    main()
