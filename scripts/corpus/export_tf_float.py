"""Keras networks through TFLiteConverter *without* quantization (a float32 .tflite, what users bring when they
skip the representative dataset), for the float .tflite operators edgec translates (edgec/frontend/tflite_float*.py,
docs/tflite-operators.md): Keras' MultiHeadAttention (BATCH_MATMUL, SOFTMAX, the RESHAPE / TRANSPOSE of heads
and its SHAPE -> GATHER -> REDUCE_PROD run-time shape subgraphs), LayerNormalization, GELU and a class token
(BROADCAST_TO), UpSampling2D (nearest: Keras 3 writes EXPAND_DIMS -> TILE -> RESHAPE; bilinear: RESIZE_BILINEAR),
unrolled LSTM / GRU (UNPACK, SPLIT, STRIDED_SLICE, FILL of the zero state of a batch of None), hard-swish
MobileNetV3 and Conv1D. Random (seeded) weights, BatchNorm statistics from the calibration inputs, the batch left
to None as Keras exports it (export_tf.py's helpers).

Beside each file: calib.npz (the first 8 of export_tf.py's `calibration` draws, as the corpus stores them), and
in --compare DIR: <name>_compare.npz with 16 held-out inputs (draws 32..47 of the same generator), TF Lite's
float outputs on them (`y_float`) and the outputs of TFLiteConverter's own full-INT8 PTQ of the same Keras model
calibrated on the same 8 inputs (`y_tflite_int8`, float input and output), what
scripts/corpus/float_tflite_vs_converter.py compares edgec's INT8 with.

    /work/venv-tf/bin/python scripts/corpus/export_tf_float.py [--only NAME ...] [--compare DIR]

MODELS go into the corpus (tests/corpus/<name>/model.tflite, manifest format tflite-float); MEASURED only into
--compare DIR (the other layer kinds, measured for docs/tflite-operators.md); FIXTURES into tests/data/float_tflite
(tests/test_tflite_float_movement.py, tests/test_tflite_float_ops.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_tf  # noqa: E402
import export_tf_layers  # noqa: E402
from export_tf import KERAS, OWN, L, keras, manifest, tf  # noqa: E402
import numpy as np  # noqa: E402

OWN = (OWN[0], "scripts/corpus/export_tf_float.py")
LAYERS_OWN = (OWN[0], "scripts/corpus/export_tf_layers.py")
BASE_OWN = (OWN[0], "scripts/corpus/export_tf.py")
HELD_OUT = 16


def unet(shape=(32, 32, 3)):
    """A small U-Net autoencoder: strided convs down, UpSampling2D nearest and bilinear back up, skip concats."""
    x = inp = keras.Input(shape)
    a = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 3, padding="same")(x)))
    b = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same")(a)))
    c = L.ReLU()(L.BatchNormalization()(L.Conv2D(24, 3, 2, padding="same")(b)))
    u = L.Concatenate()([L.UpSampling2D(2)(c), b])
    u = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(u)))
    u = L.Concatenate()([L.UpSampling2D(2, interpolation="bilinear")(u), a])
    u = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 3, padding="same")(u)))
    return keras.Model(inp, L.Conv2D(3, 1)(u))


def gru_unrolled(shape=(20, 9), classes=6):
    """export_tf_layers.py's unrolled GRU, the batch left to None (its zero state a FILL of a run-time shape)."""
    x = inp = keras.Input(shape)
    x = L.GRU(24, unroll=True)(x)
    return keras.Model(inp, L.Softmax()(L.Dense(classes)(x)))


def lstm_unrolled(shape=(24, 6), classes=4):
    x = inp = keras.Input(shape)
    x = L.LSTM(16, return_sequences=True, unroll=True)(x)
    x = L.LSTM(16, unroll=True)(x)
    return keras.Model(inp, L.Dense(classes)(x))


def _mnv3_small():
    return keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, minimalistic=False,
                                               weights=None, classes=2, include_preprocessing=False)


class Parts(L.Layer):
    """tf.split, tf.split with sizes, strided and reversed slices, tf.gather, tf.unstack / tf.stack and a nearest
    resize of one input: SPLIT, SPLIT_V, STRIDED_SLICE, GATHER, UNPACK, PACK, RESIZE_NEAREST_NEIGHBOR."""

    def call(self, x):
        a, b = tf.split(x, 2, axis=-1)
        c, d, e = tf.split(x, [1, 5, -1], axis=2)
        u = tf.unstack(x[:, :, 0, :], axis=1)
        return [a + b, c, d * 2.0, e, x[:, 1:5, 1:8:3, :], tf.gather(x, [3, 1, 1], axis=1),
                tf.stack(u[::-1], axis=2), tf.image.resize(x, (9, 11), method="nearest"), x[:, -1, ::-1, 3]]


def parts(shape=(6, 8, 4)):
    inp = keras.Input(shape)
    return keras.Model(inp, Parts()(inp))


def l2norm(shape=(6, 6, 3)):
    """tf.math.l2_normalize (TFLiteConverter: L2_NORMALIZATION) over the channels of a 4-D value and of a Dense's."""
    inp = keras.Input(shape)
    x = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = L.Lambda(lambda t: tf.math.l2_normalize(t, axis=-1))(x)
    x = L.Dense(6)(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, L.Lambda(lambda t: tf.math.l2_normalize(t, axis=-1))(x))


def where(shape=(6, 6, 3)):
    """tf.where(conv > 0.3, conv, 0.2 * tanh) (TFLiteConverter: GREATER -> SELECT_V2) and Keras' selu (GREATER ->
    SELECT_V2 of two activations) after a Dense."""
    inp = keras.Input(shape)
    x = L.Conv2D(8, 3, padding="same")(inp)
    x = L.Lambda(lambda t: tf.where(t > 0.3, t, 0.2 * tf.tanh(t)))(x)
    x = L.Dense(6, activation="selu")(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, L.Dense(4)(x))


def unitnorm(shape=(6, 6, 3)):
    """Keras' UnitNormalization (TFLiteConverter: MUL, SUM, MAXIMUM, RSQRT, MUL: x * rsqrt(max(sum(x^2), eps)))
    over a Conv2D's channels and a Dense's outputs."""
    inp = keras.Input(shape)
    x = L.UnitNormalization()(L.Conv2D(8, 3, padding="same", activation="relu")(inp))
    x = L.Dense(6)(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, L.UnitNormalization()(x))


class TF1Select:
    """A TF1-style graph (tf.compat.v1 placeholders and Session, tf.compat.v1.where: TF's Select; converted with
    tf.compat.v1.lite.TFLiteConverter.from_session): TFLite's SELECT (v1), once with a row mask [4] over a [4, 6]
    value (applied along axis 0) and once with a mask of its values' shape. Not a Keras model: `fixture` converts
    it itself."""

    inputs = [np.zeros((1, 8), np.float32)]

    @staticmethod
    def convert() -> bytes:
        rng = np.random.default_rng(1)
        w1 = (rng.standard_normal((8, 24)) * 0.5).astype(np.float32)
        w2 = (rng.standard_normal((24, 4)) * 0.3).astype(np.float32)
        with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
            x = tf.compat.v1.placeholder(tf.float32, (1, 8), name="x")
            h = tf.reshape(tf.matmul(x, w1), (4, 6))
            s1 = tf.compat.v1.where(tf.reduce_sum(h, axis=1) > 0.0, h, 0.5 * tf.tanh(h))
            s2 = tf.compat.v1.where(s1 > 0.1, s1, -0.3 * s1)
            y = tf.matmul(tf.reshape(s2, (1, 24)), w2, name="y")
            return tf.compat.v1.lite.TFLiteConverter.from_session(sess, [x], [y]).convert()


def rnn_while(cell, shape=(12, 5)):
    """A Keras LSTM / GRU built without unroll=True, batch fixed to 1 (with batch None TFLiteConverter cannot lower
    its tensor lists): a WHILE whose condition counts the 12 frames."""
    inp = keras.Input(shape, batch_size=1)
    return keras.Model(inp, L.Dense(3)(cell(8)(inp)))


# a test fixture (tests/data/float_tflite/<name>.tflite and <name>_oracle.npz: 4 inputs, TF Lite's float outputs)
FIXTURES = {"keras_parts_float32": parts, "keras_l2norm_float32": l2norm, "keras_where_float32": where,
            "keras_unitnorm_float32": unitnorm,
            "keras_lstm_while_float32": lambda: rnn_while(L.LSTM), "keras_gru_while_float32": lambda: rnn_while(L.GRU),
            "tf1_select_float32": TF1Select}

# name: (kind, constructor, origin)
MODELS = {
    "keras_float_kws_transformer": ("transformer", export_tf.tiny_transformer, BASE_OWN),
    "keras_float_unet": ("anomaly", unet, OWN),
    "keras_float_gru_unrolled": ("sequence", gru_unrolled, OWN),
}
MEASURED = {
    "keras_float_vit_gelu": ("transformer", export_tf_layers.vit_gelu, LAYERS_OWN),
    "keras_float_lstm_unrolled": ("sequence", lstm_unrolled, OWN),
    "keras_float_mobilenet_v3_small_96": ("classification", _mnv3_small, KERAS),
    "keras_float_har_cnn1d": ("har", export_tf.har_cnn, BASE_OWN),
}


def _run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """TF Lite's interpreter's outputs (each flattened, concatenated in the file's order) on each sample."""
    interp = tf.lite.Interpreter(model_content=model_bytes)
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    outs = []
    for xi in x:
        interp.set_tensor(d["index"], xi[None].astype(np.float32))
        interp.invoke()
        outs.append(np.concatenate([interp.get_tensor(o["index"]).reshape(-1) for o in interp.get_output_details()]))
    return np.stack(outs)


def export(name: str, compare: Path) -> None:
    kind, make, (lic, origin) = {**MODELS, **MEASURED}[name]
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = make()
    shape = tuple(model.inputs[0].shape[1:])
    drawn = export_tf.calibration(name, shape, 32 + HELD_OUT)
    if any(isinstance(layer, L.BatchNormalization) for layer in model.layers):
        export_tf.set_batchnorm_from(model, drawn[:32])
    float_bytes = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    folder = manifest.CORPUS / name if name in MODELS else compare / name
    folder.mkdir(parents=True, exist_ok=True)
    manifest.save_calibration(folder, drawn[:32])
    calib = np.load(folder / "calib.npz")["x"]
    conv = export_tf.ptq_converter(model, calib)
    x = drawn[32:]
    if manifest.is_image(x):
        x = (np.clip(np.round(x * 255), 0, 255) / 255).astype(np.float32)
    compare.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(compare / f"{name}_compare.npz", x=x, y_float=_run(float_bytes, x),
                        y_tflite_int8=_run(conv.convert(), x))
    out = folder / "model.tflite"
    out.write_bytes(float_bytes)
    if name in MODELS:
        how = f"TFLiteConverter float32 (no quantization), TensorFlow {tf.__version__}"
        export_tf.record(name, kind, out, "scripts/corpus/export_tf_float.py", lic,
                         export_tf.keras_source(model, origin, how), committed=True, format="tflite-float")
    print(f"{name}: float and TFLiteConverter INT8 outputs in {compare / (name + '_compare.npz')}")


def fixture(name: str) -> None:
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = FIXTURES[name]()
    if isinstance(model, TF1Select):
        data = model.convert()
    else:
        data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    out = manifest.ROOT / "tests" / "data" / "float_tflite"
    (out / f"{name}.tflite").write_bytes(data)
    x = np.random.default_rng(0).standard_normal((4, *model.inputs[0].shape[1:])).astype(np.float32)
    np.savez_compressed(out / f"{name}_oracle.npz", x=x, y=_run(data, x))
    print(f"{name}: {len(data):,} bytes")


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--compare", type=Path, default=Path("/tmp/export_tf_float"))
    args = ap.parse_args(argv)
    names = [n for n in {**MODELS, **MEASURED, **FIXTURES} if not args.only or n in args.only]
    if len(names) == 1:
        (fixture if names[0] in FIXTURES else export)(names[0], *([] if names[0] in FIXTURES else [args.compare]))
        return 0
    import subprocess             # (TFLiteConverter crashed on later conversions in one process: one each)

    for name in names:
        r = subprocess.run([sys.executable, __file__, "--only", name, "--compare", str(args.compare)])
        if r.returncode:
            print(f"{name}: export failed: the exporter process ended with {r.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
