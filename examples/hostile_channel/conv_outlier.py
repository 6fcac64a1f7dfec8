"""The digits CNN (examples/digits_cnn) with one channel scaled x50 and compensated in the next layer: the float
function is unchanged, one ReLU output gets one channel 50 times wider than the rest (the outlier-channel pattern
of issue 34: per-tensor int8 activations lose that tensor's small channels). Test data: examples/digits_cnn/test.npz.

- `conv_outlier`: channel CHANNEL of bn1 (folded into conv1) has its scale and shift times FACTOR, so relu1's
  channel is FACTOR times larger; conv2's weights reading that channel are divided by FACTOR.
- `depthwise_outlier`: the depthwise conv's output channel (bn3, folded into /dw/Conv) times FACTOR, so relu3's
  channel is FACTOR times larger; a 1x1 conv inserted before the residual Add (identity but 1/FACTOR on that
  channel) brings it back.

    python conv_outlier.py      # writes conv_outlier.onnx and depthwise_outlier.onnx next to this file
"""
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

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


def depthwise_outlier(src: Path = DIGITS / "model.onnx", channel: int = CHANNEL, factor: float = FACTOR):
    m = onnx.load(str(src))
    init = {i.name: i for i in m.graph.initializer}
    for name in ("bn3.weight", "bn3.bias"):
        a = numpy_helper.to_array(init[name]).copy()
        a[channel] *= factor
        init[name].CopyFrom(numpy_helper.from_array(a.astype(np.float32), name))
    c = numpy_helper.to_array(init["dw.weight"]).shape[0]
    w = np.eye(c, dtype=np.float32)
    w[channel, channel] = 1.0 / factor
    m.graph.initializer.extend([numpy_helper.from_array(w.reshape(c, c, 1, 1), "back.weight"),
                                numpy_helper.from_array(np.zeros(c, np.float32), "back.bias")])
    add = next(n for n in m.graph.node if n.op_type == "Add")
    relu3 = next(n for n in m.graph.node if n.output[0] in add.input and n.op_type == "Relu")
    back = helper.make_node("Conv", [relu3.output[0], "back.weight", "back.bias"], ["/back/Conv_output_0"],
                            name="/back/Conv", kernel_shape=[1, 1])
    add.input[list(add.input).index(relu3.output[0])] = "/back/Conv_output_0"
    nodes = list(m.graph.node)
    nodes.insert(nodes.index(add), back)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    onnx.checker.check_model(m)
    return m


def write(which: str, folder: Path = HERE) -> Path:
    """`which` ("conv_outlier" or "depthwise_outlier") made anew and written to folder/<which>.onnx (what
    scripts/quant_table.py and tests/test_fixes.py measure)."""
    path = Path(folder) / f"{which}.onnx"
    onnx.save({"conv_outlier": conv_outlier, "depthwise_outlier": depthwise_outlier}[which](), str(path))
    return path


if __name__ == "__main__":
    write("conv_outlier")
    write("depthwise_outlier")
