"""TF Lite's int8 GELU on every int8 input, for random input and output quantizations, exact and tanh-approximate:
the oracle tests/test_lut_gelu.py holds edgec's table to (TFLite Micro registers no GELU, so TF Lite's reference
kernel is the definition). Needs TensorFlow (/work/venv-tf), not a dependency of edgec; run from the repository:

    /work/venv-tf/bin/python scripts/tflite_gelu_oracle.py       # writes tests/data/tflite_gelu_int8.npz
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = 40


def model(lo: float, hi: float, approximate: bool) -> bytes:
    """A Keras GELU on 256 values, full-INT8 PTQ calibrated on [lo, hi] (the quantization each case gets)."""
    inp = tf.keras.Input((256,), batch_size=1)
    m = tf.keras.Model(inp, tf.keras.layers.Activation(lambda t: tf.nn.gelu(t, approximate=approximate))(inp))
    conv = tf.lite.TFLiteConverter.from_keras_model(m)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([np.linspace(lo, hi, 256, dtype=np.float32)[None]] for _ in range(2))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


def main() -> int:
    rng = np.random.default_rng(29)
    rows = {k: [] for k in ("s_in", "zp_in", "s_out", "zp_out", "approximate", "y")}
    for k in range(CASES):
        lo, hi = -float(10 ** rng.uniform(-1.5, 1)), float(10 ** rng.uniform(-1.5, 1))
        approximate = bool(k % 2)
        it = tf.lite.Interpreter(model_content=model(lo, hi, approximate),
                                 experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        ops = [d["op_name"] for d in it._get_ops_details()]
        assert ops == ["GELU"], ops
        i, o = it.get_input_details()[0], it.get_output_details()[0]
        it.set_tensor(i["index"], np.arange(-128, 128, dtype=np.int8)[None])
        it.invoke()
        for key, v in (("s_in", i["quantization"][0]), ("zp_in", i["quantization"][1]), ("s_out", o["quantization"][0]),
                       ("zp_out", o["quantization"][1]), ("approximate", approximate),
                       ("y", it.get_tensor(o["index"]).reshape(-1))):
            rows[key].append(v)
    out = ROOT / "tests" / "data" / "tflite_gelu_int8.npz"
    np.savez_compressed(out, s_in=np.array(rows["s_in"], np.float32), zp_in=np.array(rows["zp_in"], np.int32),
                        s_out=np.array(rows["s_out"], np.float32), zp_out=np.array(rows["zp_out"], np.int32),
                        approximate=np.array(rows["approximate"]), y=np.stack(rows["y"]).astype(np.int8),
                        tensorflow=np.array(tf.__version__))
    print(f"{out}: {CASES} cases, TensorFlow {tf.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
