"""Writes tests/data/brevitas_trunc_pool.onnx and brevitas_binary_act.onnx (Brevitas export_qonnx, QONNX opset 2)
and brevitas_qonnx_ops_data.npz (calibration and test inputs of each): QONNX's Trunc after average pools
(TruncAvgPool2d 2x2 rounding to a 4-bit unsigned grid, TruncAdaptiveAvgPool2d over a signed 8-bit 4x4 plane
truncating with FLOOR) and BipolarQuant on activations (SignedBinaryActPerTensorConst between binary-weight
convolutions). Random weights; calibrated activation scales. The tests never run torch or Brevitas; run this
again only to refresh the files (tests/test_qonnx.py):

    /work/torch-venv/bin/python tests/data/make_brevitas_qonnx_ops.py
"""
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


def trunc_pool() -> nn.Module:
    import brevitas.nn as qnn
    from brevitas.quant import Int8ActPerTensorFloat, TruncTo8bit

    class TruncPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = qnn.QuantIdentity(act_quant=Int8ActPerTensorFloat, return_quant_tensor=True)
            self.conv1 = qnn.QuantConv2d(3, 8, 3, padding=1, weight_bit_width=8, return_quant_tensor=True)
            self.relu = qnn.QuantReLU(bit_width=4, return_quant_tensor=True)
            self.pool1 = qnn.TruncAvgPool2d(kernel_size=2, stride=2, bit_width=4, return_quant_tensor=True)
            self.conv2 = qnn.QuantConv2d(8, 8, 3, padding=1, weight_bit_width=8, return_quant_tensor=True)
            self.act = qnn.QuantIdentity(act_quant=Int8ActPerTensorFloat, return_quant_tensor=True)
            self.pool2 = qnn.TruncAdaptiveAvgPool2d(1, trunc_quant=TruncTo8bit, return_quant_tensor=False)

        def forward(self, x):
            return self.pool2(self.act(self.conv2(self.pool1(self.relu(self.conv1(self.q(x)))))))
    return TruncPool()


def binary_act() -> nn.Module:
    import brevitas.nn as qnn
    from brevitas.quant import Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst

    class BinaryAct(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = qnn.QuantIdentity(act_quant=Int8ActPerTensorFloat, return_quant_tensor=True)
            self.conv1 = qnn.QuantConv2d(3, 8, 3, padding=1, weight_quant=SignedBinaryWeightPerTensorConst,
                                         bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.sign = qnn.QuantIdentity(act_quant=SignedBinaryActPerTensorConst, return_quant_tensor=True)
            self.conv2 = qnn.QuantConv2d(8, 4, 3, padding=1, weight_quant=SignedBinaryWeightPerTensorConst,
                                         bias=False)
            self.out = qnn.QuantIdentity(act_quant=Int8ActPerTensorFloat, return_quant_tensor=False)

        def forward(self, x):
            return self.out(self.conv2(self.sign(self.bn(self.conv1(self.q(x))))))
    return BinaryAct()


def main():
    from brevitas.export import export_qonnx
    from brevitas.graph.calibrate import calibration_mode

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = {}
    for name, make in (("brevitas_trunc_pool", trunc_pool), ("brevitas_binary_act", binary_act)):
        model = make()
        x = rng.standard_normal((40, 3, 8, 8)).astype(np.float32)
        if hasattr(model, "bn"):              # BatchNorm statistics from the inputs: signs of both kinds
            with torch.no_grad():
                h = model.conv1(model.q(torch.from_numpy(x)))
            model.bn.running_mean.copy_(h.mean((0, 2, 3)))
            model.bn.running_var.copy_(h.var((0, 2, 3)))
        model.eval()
        with torch.no_grad(), calibration_mode(model):
            model(torch.from_numpy(x[:32]))
        export_qonnx(model, args=torch.from_numpy(x[:1]), export_path=str(HERE / f"{name}.onnx"), opset_version=13,
                     dynamo=False)
        data[f"{name}_calib"], data[f"{name}_test"] = x[:32], x[32:]
    np.savez_compressed(HERE / "brevitas_qonnx_ops_data.npz", **data)


if __name__ == "__main__":
    main()
