"""Keras detectors through TFLiteConverter full-INT8 post-training quantization, with what makes them detectors
on the device (issue 30):

- keras_ssd_mobilenet_v2_postprocess: an SSD head on MobileNetV2 (alpha 0.35, 96x96, two feature maps 6x6 and 3x3, 3
  anchors a cell, 3 classes and a background) ending in TFLite's `TFLite_Detection_PostProcess`, made the way
  TensorFlow's object detection API makes it (`export_tflite_graph_lib_tf2.py`): a `tf.function` annotated
  `experimental_implements="TFLite_Detection_PostProcess ..."` which the converter fuses into the custom
  operator, the anchors a constant. The dummy function returns zeros of the outputs' shapes ([1, D, 4], [1, D],
  [1, D], [1]): the object detection API returns scalars, the converter then writes scalar output shapes and
  TFLite Micro, which cannot resize a tensor, writes the detections past them (seen here: its outputs read
  [0.5], [10.], ...). The converter lists the four outputs in its own order (here the operator's outputs 1, 3,
  0, 2); edgec takes them in the operator's order, so the file's subgraph output list is put in that order
  (four int32 written in place; tensors, operators and the signature unchanged).
- keras_fomo_mobilenet_v2: FOMO as Edge Impulse describes it: MobileNetV2 (alpha 0.35, 96x96) cut at
  `block_6_expand_relu` (1/8 resolution: a 12x12 grid), a 1x1 convolution of 32 and a 1x1 convolution to the
  classes and a background, softmax per cell: the heat map; centroids are the cells whose best class is not the
  background.

Random (seeded) weights, BatchNorm statistics from the calibration inputs. Runs in TensorFlow's environment:

    /work/venv-tf/bin/python scripts/corpus/export_tf_detectors.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402
from export_tf import (KERAS, WEIGHTS, L, calibration, corpus_file, keras, ptq_converter,  # noqa: E402
                       record, set_batchnorm_from, tf)

SHAPE, CLASSES, ANCHORS, MAX_DETECTIONS = (96, 96, 3), 3, 3, 10
SSD_OPTIONS = {"max_detections": MAX_DETECTIONS, "max_classes_per_detection": 1, "detections_per_class": 10,
               "use_regular_nms": False, "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5,
               "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0, "num_classes": CLASSES}


def implements_string(options: dict) -> str:
    """The object detection API's `experimental_implements` string: the operator's name and its attributes."""
    def value(v):
        return f"b: {str(v).lower()}" if isinstance(v, bool) else f"i: {v}" if isinstance(v, int) else f"f: {v:f}"
    return " ".join(['name: "TFLite_Detection_PostProcess"']
                    + [f'attr {{ key: "{k}" value {{ {value(v)} }} }}' for k, v in options.items()])


def grid_anchors(sizes=(6, 3), scales=(0.3, 0.6), ratios=(1.0, 2.0, 0.5)) -> np.ndarray:
    """SSD anchors (y centre, x centre, height, width) per feature-map cell, in the heads' reshape order."""
    out = []
    for n, s in zip(sizes, scales):
        for i in range(n):
            for j in range(n):
                out += [((i + 0.5) / n, (j + 0.5) / n, s / np.sqrt(r), s * np.sqrt(r)) for r in ratios]
    return np.asarray(out, np.float32)


def ssd_postprocess():
    base = keras.applications.MobileNetV2(input_shape=SHAPE, alpha=0.35, weights=None, include_top=False)
    maps = (base.get_layer("block_13_expand_relu").output, base.get_layer("block_16_project_BN").output)
    boxes = [L.Reshape((-1, 4))(L.Conv2D(ANCHORS * 4, 3, padding="same")(t)) for t in maps]
    scores = [L.Reshape((-1, CLASSES + 1))(L.Conv2D(ANCHORS * (CLASSES + 1), 3, padding="same")(t)) for t in maps]
    anchors = tf.constant(grid_anchors())
    d = MAX_DETECTIONS

    @tf.function(experimental_implements=implements_string(SSD_OPTIONS))
    def postprocess(box_encodings, class_predictions, anchors):
        return (tf.zeros([1, d, 4]), tf.zeros([1, d]), tf.zeros([1, d]), tf.zeros([1]))

    class PostProcess(L.Layer):
        def call(self, b, c):
            return postprocess(b, c, anchors)

    out = PostProcess()(L.Concatenate(1)(boxes), L.Activation("sigmoid")(L.Concatenate(1)(scores)))
    return keras.Model(base.input, list(out))


def fomo():
    base = keras.applications.MobileNetV2(input_shape=SHAPE, alpha=0.35, weights=None, include_top=False)
    x = base.get_layer("block_6_expand_relu").output
    x = L.Conv2D(32, 1, activation="relu")(x)
    return keras.Model(base.input, L.Softmax()(L.Conv2D(CLASSES + 1, 1)(x)))


# name: (constructor, float outputs, what the file is)
MODELS = {
    "keras_ssd_mobilenet_v2_postprocess": (ssd_postprocess, True, "SSD MobileNetV2 ending in TFLite_Detection_"
                                           "PostProcess (fused from experimental_implements, as TF's object "
                                           "detection API exports)"),
    "keras_fomo_mobilenet_v2": (fomo, False, "FOMO-style MobileNetV2 (cut at block_6_expand_relu, 1x1 head, "
                                "softmax heat map 12x12x4)"),
}


def operator_order(data: bytes) -> bytes:
    """The file with its subgraph's outputs in the order of the operator computing them (the four outputs of
    TFLite_Detection_PostProcess), the vector rewritten in place."""
    from tensorflow.lite.python import schema_py_generated as schema
    sg = schema.Model.GetRootAs(data, 0).Subgraphs(0)
    outs = [int(t) for t in sg.OutputsAsNumpy()]
    print("subgraph outputs as converted:", [sg.Tensors(t).Name().decode() for t in outs])
    op = next(sg.Operators(i) for i in range(sg.OperatorsLength())
              if set(outs) <= set(int(t) for t in sg.Operators(i).OutputsAsNumpy()))
    order = [int(t) for t in op.OutputsAsNumpy()]
    pos = sg._tab.Vector(sg._tab.Offset(8))          # SubGraph.outputs: field 2 (vtable slot 8)
    buf = bytearray(data)
    buf[pos:pos + 4 * len(order)] = np.asarray(order, "<i4").tobytes()
    return bytes(buf)


def export(name: str) -> None:
    make, float_out, what = MODELS[name]
    keras.utils.set_random_seed(sum(map(ord, name)))
    model = make()
    calib = calibration(name, SHAPE, 32)
    set_batchnorm_from(model, calib)
    conv = ptq_converter(model, calib)
    conv.inference_input_type = tf.int8
    if float_out:                                   # the custom operator's outputs are float32
        conv.allow_custom_ops = True
    else:
        conv.inference_output_type = tf.int8
    data = conv.convert()
    out = corpus_file(name, "model.tflite")
    out.write_bytes(operator_order(data) if float_out else data)
    how = (f"TFLiteConverter full-INT8 PTQ (int8 input, {'float32 detections' if float_out else 'int8'} output), "
           f"TensorFlow {tf.__version__}")
    source = {"architecture": KERAS[1], "model": what, "exporter": how, "weights": WEIGHTS}
    if float_out:
        source["postprocess_options"] = SSD_OPTIONS
        source["edit"] = "subgraph outputs listed in the operator's order (the converter listed its outputs " \
                         "1, 3, 0, 2)"
    record(name, "detection", out, "scripts/corpus/export_tf_detectors.py",
           "Apache-2.0 (this repository; Keras: Apache-2.0)", source, committed=True)


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
