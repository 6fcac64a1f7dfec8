"""The digits CNN (examples/digits_cnn) with one conv channel scaled x50 and compensated in the next layer: the
float function is unchanged, the first layer's ReLU output gets one channel 50 times wider than the rest (the
outlier-channel pattern of issue 34: per-tensor int8 activations lose that tensor's small channels).

Channel CHANNEL of bn1 (folded into conv1) has its scale and shift times FACTOR, so relu1's channel is FACTOR times
larger; conv2's weights reading that channel are divided by FACTOR. Test data: examples/digits_cnn/test.npz.

    python conv_outlier.py      # writes conv_outlier.onnx next to this file
"""
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
DIGITS = HERE.parent / "digits_cnn"
CHANNEL, FACTOR = 3, 50.0


def conv_outlier(src: Path = DIGITS / "model.onnx", channel: int = CHANNEL, factor: float = FACTOR) -> onnx.ModelProto:
    m = onnx.load(str(src))
    init = {i.name: i for i in m.graph.initializer}

    def scaled(name, fn):
        a = numpy_helper.to_array(init[name]).copy()
        fn(a)
        init[name].CopyFrom(numpy_helper.from_array(a.astype(np.float32), name))
    scaled("bn1.weight", lambda a: a.__setitem__(channel, a[channel] * factor))
    scaled("bn1.bias", lambda a: a.__setitem__(channel, a[channel] * factor))
    scaled("conv2.weight", lambda a: a.__setitem__((slice(None), channel), a[:, channel] / factor))
    return m


if __name__ == "__main__":
    onnx.save(conv_outlier(), str(HERE / "conv_outlier.onnx"))
