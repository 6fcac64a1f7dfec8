"""Two streaming models that keep their state in a tf.Variable updated at every call, converted by TensorFlow's
TFLiteConverter to full-INT8 .tflite files with resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE,
CALL_ONCE and its init subgraph): the test data of edgec/ops/variables.py (tests/test_variables.py).

- variable_recurrent.tflite: h = relu(x W + 0.5 h_prev); y = h U (a leaky recurrent cell, 8 units);
- variable_running_mean.tflite: a running mean m = tanh(0.75 m + 0.25 tanh(x)) kept in the variable (assigned
  from a TANH output, int8 of scale 1/128, read back through the variable's own quantization: the assignment's
  table); y = (x - m) D.
- variable_stream_conv.tflite: a streaming convolution whose frames are shifted in the variable (a float
  STRIDED_SLICE of the variable before its QUANTIZE): refused in one line (edgec takes a float32 variable read
  straight into one QUANTIZE).

Random weights (seed 0); calibration on random frames. Run with TensorFlow's environment:
    /work/venv-tf/bin/python scripts/make_variable_models.py tests/data
"""
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)


class Recurrent(tf.Module):
    def __init__(self):
        self.w = tf.constant(rng.normal(0, 0.4, (8, 8)).astype(np.float32))
        self.u = tf.constant(rng.normal(0, 0.3, (8, 4)).astype(np.float32))
        self.state = tf.Variable(tf.zeros([1, 8]), trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    def __call__(self, x):
        h = tf.nn.relu(tf.matmul(x, self.w) + 0.5 * self.state.read_value())
        self.state.assign(h)
        return tf.matmul(h, self.u)


class RunningMean(tf.Module):
    def __init__(self):
        self.d = tf.constant(rng.normal(0, 0.5, (8, 3)).astype(np.float32))
        self.mean = tf.Variable(tf.zeros([1, 8]), trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    def __call__(self, x):
        m = 0.75 * self.mean.read_value() + 0.25 * tf.tanh(x)
        self.mean.assign(tf.tanh(m))
        return tf.matmul(x - m, self.d)


class StreamConv(tf.Module):
    """Refused by edgec (the test of its refusal): the frames shifted in the variable by a float STRIDED_SLICE."""

    def __init__(self):
        self.k = tf.constant(rng.normal(0, 0.3, (24, 3)).astype(np.float32))
        self.frames = tf.Variable(tf.zeros([1, 24]), trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    def __call__(self, x):
        window = tf.concat([self.frames.read_value()[:, 8:], x], axis=1)
        self.frames.assign(window)
        return tf.matmul(window, self.k)


def convert(module) -> bytes:
    fn = module.__call__.get_concrete_function()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn], module)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]

    def frames():
        for _ in range(100):
            yield [rng.normal(0, 1, (1, 8)).astype(np.float32)]
    conv.representative_dataset = frames
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    conv.experimental_enable_resource_variables = True
    return conv.convert()


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data")
    for name, module in (("variable_recurrent", Recurrent()), ("variable_running_mean", RunningMean()),
                         ("variable_stream_conv", StreamConv())):
        (out / f"{name}.tflite").write_bytes(convert(module))
        print(name, (out / f"{name}.tflite").stat().st_size, "bytes")
