"""Real architectures through PyTorch's real ONNX exporters (torch.onnx TorchScript and dynamo): torchvision and
timm networks at microcontroller resolutions, and the small audio/activity/anomaly/sequence/transformer
networks people train for microcontrollers. Weights are random (seeded); BatchNorm statistics are set from the
calibration inputs so no output is constant. Writes tests/corpus/<name>/model.onnx and calib.npz, and records
each in the manifest.

    pip install -e '.[corpus]'          # torch, torchvision, timm, onnxscript
    python scripts/corpus/export_torch.py [--only NAME ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402

TORCH_PYTHON = "/work/torch-venv/bin/python"    # the exporters' environment (the manifest's regenerate commands)
WEIGHTS = "random (seeded), BatchNorm statistics from the calibration inputs"


# ---- small networks people train for microcontrollers -------------------------------------------------------
def _cbr(cin, cout, k=3, s=1, groups=1, dims=2):
    conv, bn = (nn.Conv2d, nn.BatchNorm2d) if dims == 2 else (nn.Conv1d, nn.BatchNorm1d)
    return nn.Sequential(conv(cin, cout, k, s, k // 2, groups=groups, bias=False), bn(cout), nn.ReLU())


class DsCnnKws(nn.Module):       # the DS-CNN of "Hello Edge" on 49x10 MFCC
    def __init__(self, classes=12, c=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, (10, 4), (2, 2), (5, 1), bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.Sequential(*[nn.Sequential(_cbr(c, c, groups=c), _cbr(c, c, 1)) for _ in range(4)])
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class AudioEvents1d(nn.Module):  # 1-D CNN over log-mel frames (ESC-style audio events)
    def __init__(self, mels=40, classes=10):
        super().__init__()
        self.body = nn.Sequential(_cbr(mels, 64, 3, dims=1), nn.MaxPool1d(2), _cbr(64, 64, 3, dims=1), nn.MaxPool1d(2),
                                  _cbr(64, 96, 3, dims=1))
        self.head = nn.Linear(96, classes)

    def forward(self, x):
        return self.head(torch.amax(self.body(x), dim=2))


class AudioEvents2d(nn.Module):  # a small 2-D CNN over a log-mel spectrogram, with a softmax head
    def __init__(self, classes=8):
        super().__init__()
        self.body = nn.Sequential(_cbr(1, 16), nn.MaxPool2d(2), _cbr(16, 32), nn.MaxPool2d(2), _cbr(32, 48),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(48, classes), nn.Softmax(-1))

    def forward(self, x):
        return self.head(self.body(x))


class HarCnn(nn.Module):         # UCI-HAR: 128 samples x 9 channels, channels first
    def __init__(self, classes=6):
        super().__init__()
        self.body = nn.Sequential(_cbr(9, 32, 5, dims=1), _cbr(32, 32, 5, 2, dims=1), _cbr(32, 64, 3, 2, dims=1))
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        return self.head(self.body(x).mean(2))


class HarGru(nn.Module):
    def __init__(self, classes=6):
        super().__init__()
        self.gru = nn.GRU(9, 32, batch_first=True)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.head(y[:, -1])


class LstmClassifier(nn.Module):  # a sequence model: 2-layer LSTM over 28x28 rows (MNIST-LSTM style)
    def __init__(self, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(28, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


class FcAutoencoder(nn.Module):  # MLPerf Tiny AD shape: 640 -> 128x4 -> 8 -> 128x4 -> 640
    def __init__(self, d=640):
        super().__init__()
        def fc(i, o):
            return nn.Sequential(nn.Linear(i, o), nn.BatchNorm1d(o), nn.ReLU())
        self.net = nn.Sequential(fc(d, 128), fc(128, 128), fc(128, 8), fc(8, 128), fc(128, 128), nn.Linear(128, d))

    def forward(self, x):
        return self.net(x)


class ConvAutoencoder(nn.Module):  # a vibration-window anomaly detector: conv encoder, transposed-conv decoder
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(_cbr(3, 16, 3, 2, dims=1), _cbr(16, 32, 3, 2, dims=1))
        self.dec = nn.Sequential(nn.ConvTranspose1d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose1d(16, 3, 4, 2, 1))

    def forward(self, x):
        return self.dec(self.enc(x))


class ResNet8(nn.Module):         # MLPerf Tiny IC's ResNet-8 on 32x32
    def __init__(self, classes=10):
        super().__init__()
        self.stem = _cbr(3, 16)
        self.stages = nn.ModuleList()
        cin = 16
        for cout, s in ((16, 1), (32, 2), (64, 2)):
            self.stages.append(nn.ModuleList([
                nn.Sequential(_cbr(cin, cout, 3, s), nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)),
                nn.Identity() if (cin, s) == (cout, 1) else nn.Conv2d(cin, cout, 1, s)]))
            cin = cout
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stem(x)
        for body, skip in self.stages:
            x = torch.relu(body(x) + skip(x))
        return self.head(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class SsdLite(nn.Module):         # SSD-style detector: MobileNetV2-0.35 features, box and class heads at two scales
    def __init__(self, classes=3, anchors=3):
        super().__init__()
        import torchvision
        f = torchvision.models.mobilenet_v2(width_mult=0.35).features
        self.c4, self.c5 = f[:14], f[14:]
        self.box = nn.ModuleList([nn.Conv2d(c, anchors * 4, 3, padding=1) for c in (32, 1280)])
        self.cls = nn.ModuleList([nn.Conv2d(c, anchors * classes, 3, padding=1) for c in (32, 1280)])
        self.classes = classes

    def forward(self, x):
        a = self.c4(x)
        b = self.c5(a)
        boxes = torch.cat([h(t).permute(0, 2, 3, 1).reshape(1, -1, 4) for h, t in zip(self.box, (a, b))], 1)
        scores = torch.cat([h(t).permute(0, 2, 3, 1).reshape(1, -1, self.classes) for h, t in zip(self.cls, (a, b))], 1)
        return boxes, torch.sigmoid(scores)


class YoloTiny(nn.Module):        # YOLO-style: a conv backbone, an upsampled and concatenated second scale
    def __init__(self, classes=2, anchors=2):
        super().__init__()
        ch = [3, 8, 16, 32, 64]
        self.down = nn.ModuleList([nn.Sequential(_cbr(ch[i], ch[i + 1]), nn.MaxPool2d(2)) for i in range(4)])
        self.lat = _cbr(64, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        out = anchors * (5 + classes)
        self.head_small = nn.Conv2d(64, out, 1)
        self.head_big = nn.Conv2d(64, out, 1)

    def forward(self, x):
        feats = []
        for d in self.down:
            x = d(x)
            feats.append(x)
        p5 = self.head_small(x)
        p4 = self.head_big(torch.cat([self.up(self.lat(x)), feats[2]], 1))
        return p5, p4


class KwsTransformer(nn.Module):  # a keyword-spotting transformer: MFCC frames as tokens, 2 encoder layers
    def __init__(self, classes=12, d=64):
        super().__init__()
        self.embed = nn.Linear(10, d)
        self.pos = nn.Parameter(torch.randn(1, 49, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.enc(self.embed(x) + self.pos).mean(1))


def _tv(name, **kw):
    import torchvision
    return getattr(torchvision.models, name)(**kw)


def _timm(name, **kw):
    import timm
    return timm.create_model(name, pretrained=False, **kw)


def _vit():
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=32, patch_size=4, embed_dim=64, depth=4, num_heads=2, mlp_ratio=2,
                             num_classes=10)


# name: (kind, constructor, input shape without batch, exporter, license of the architecture's code, origin)
TV = ("BSD-3-Clause (torchvision)", "https://github.com/pytorch/vision")
TIMM = ("Apache-2.0 (timm)", "https://github.com/huggingface/pytorch-image-models")
OWN = ("Apache-2.0 (this repository)", "scripts/corpus/export_torch.py")
MODELS = {
    "tv_mobilenet_v2_035_96": ("classification", lambda: _tv("mobilenet_v2", width_mult=0.35, num_classes=10), (3, 96, 96), "torchscript", TV),
    "tv_mobilenet_v2_035_96_dynamo": ("classification", lambda: _tv("mobilenet_v2", width_mult=0.35, num_classes=10), (3, 96, 96), "dynamo", TV),
    "tv_mobilenet_v3_small_96": ("classification", lambda: _tv("mobilenet_v3_small", width_mult=0.5, num_classes=10), (3, 96, 96), "torchscript", TV),
    "tv_mobilenet_v3_small_96_dynamo": ("classification", lambda: _tv("mobilenet_v3_small", width_mult=0.5, num_classes=10), (3, 96, 96), "dynamo", TV),
    "tv_shufflenet_v2_x0_5_96": ("classification", lambda: _tv("shufflenet_v2_x0_5", num_classes=10), (3, 96, 96), "torchscript", TV),
    "tv_squeezenet1_1_96": ("classification", lambda: _tv("squeezenet1_1", num_classes=10), (3, 96, 96), "torchscript", TV),
    "tv_mnasnet0_5_96": ("classification", lambda: _tv("mnasnet0_5", num_classes=10), (3, 96, 96), "torchscript", TV),
    "timm_mobilenetv3_small_050": ("classification", lambda: _timm("mobilenetv3_small_050", num_classes=10), (3, 96, 96), "torchscript", TIMM),
    "timm_lcnet_050": ("classification", lambda: _timm("lcnet_050", num_classes=10), (3, 96, 96), "torchscript", TIMM),
    "timm_mobilenetv2_050_dynamo": ("classification", lambda: _timm("mobilenetv2_050", num_classes=10), (3, 96, 96), "dynamo", TIMM),
    "timm_ghostnet_050": ("classification", lambda: _timm("ghostnet_050", num_classes=10), (3, 96, 96), "torchscript", TIMM),
    "timm_vit_tiny_32": ("transformer", _vit, (3, 32, 32), "torchscript", TIMM),
    "timm_vit_tiny_32_dynamo": ("transformer", _vit, (3, 32, 32), "dynamo", TIMM),
    "timm_mobilevit_xxs_64": ("transformer", lambda: _timm("mobilevit_xxs", num_classes=10), (3, 64, 64), "torchscript", TIMM),
    "timm_mobilevitv2_050_64": ("transformer", lambda: _timm("mobilevitv2_050", num_classes=10), (3, 64, 64), "torchscript", TIMM),
    "torch_resnet8_cifar": ("classification", ResNet8, (3, 32, 32), "torchscript", OWN),
    "torch_resnet8_cifar_dynamo": ("classification", ResNet8, (3, 32, 32), "dynamo", OWN),
    "torch_ds_cnn_kws": ("kws", DsCnnKws, (1, 49, 10), "torchscript", OWN),
    "torch_ds_cnn_kws_dynamo": ("kws", DsCnnKws, (1, 49, 10), "dynamo", OWN),
    "torch_kws_transformer": ("transformer", KwsTransformer, (49, 10), "torchscript", OWN),
    "torch_kws_transformer_dynamo": ("transformer", KwsTransformer, (49, 10), "dynamo", OWN),
    "torch_audio_events_1d": ("audio-events", AudioEvents1d, (40, 101), "torchscript", OWN),
    "torch_audio_events_2d": ("audio-events", AudioEvents2d, (1, 40, 64), "dynamo", OWN),
    "torch_har_cnn": ("har", HarCnn, (9, 128), "torchscript", OWN),
    "torch_har_gru": ("har", HarGru, (128, 9), "torchscript", OWN),
    "torch_lstm_rows": ("sequence", LstmClassifier, (28, 28), "torchscript", OWN),
    "torch_ad_fc_autoencoder": ("anomaly", FcAutoencoder, (640,), "torchscript", OWN),
    "torch_ad_conv_autoencoder": ("anomaly", ConvAutoencoder, (3, 128), "dynamo", OWN),
    "torch_ssdlite_mnv2": ("detection", SsdLite, (3, 96, 96), "torchscript", OWN),
    "torch_yolo_tiny": ("detection", YoloTiny, (3, 96, 96), "torchscript", OWN),
    "torch_yolo_tiny_dynamo": ("detection", YoloTiny, (3, 96, 96), "dynamo", OWN),
}


def inputs(name: str, shape, n: int) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.standard_normal((n, *shape)).astype(np.float32)
    if len(shape) == 3 and shape[0] == 3:      # images: smooth, in [0, 1]-ish
        x = np.cumsum(x, axis=-1) / np.sqrt(shape[-1]) * 0.5 + 0.5
    return x.astype(np.float32)


def set_batchnorm_from(model: nn.Module, x: torch.Tensor) -> None:
    """BatchNorm running statistics = the statistics of the calibration inputs at each layer."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None                  # a cumulative average over the batches seen
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def seeded(name: str, make, shape, n: int = 32) -> tuple[nn.Module, np.ndarray]:
    """`make()` with its weights seeded by `name`, and its n calibration inputs (`inputs`), its BatchNorm
    statistics set from them."""
    torch.manual_seed(sum(map(ord, name)))
    model = make().eval()
    calib = inputs(name, shape, n)
    set_batchnorm_from(model, torch.from_numpy(calib))
    return model, calib


def to_onnx(model: nn.Module, example: np.ndarray, out: Path, opset: int | None = None, dynamo: bool = False,
            named: dict | None = None, note: str = "", **kw) -> str:
    """torch.onnx.export of `model` on `example` to `out` (TorchScript, or dynamo; at `opset`, else the exporter's
    default); returns the manifest's exporter text, which names the export keywords `named` (e.g.
    do_constant_folding=False) and `note`; `kw`: export keywords it does not name (input names, dynamic axes...)."""
    args = {**({"external_data": False} if dynamo else {}), **({"opset_version": opset} if opset else {}),
            **(named or {}), **kw}
    torch.onnx.export(model, (torch.from_numpy(example),), str(out), dynamo=dynamo, **args)
    how = ["dynamo" if dynamo else "torchscript", *(f"{k}={v}" for k, v in (named or {}).items()),
           *([f"opset {opset}"] if opset else []), *([note] if note else [])]
    return f"torch.onnx ({', '.join(how)}), torch {torch.__version__}"


def export_seeded(name: str, script: str, kind: str, make, shape, opset: int | None, licence: tuple[str, str],
                  dynamo: bool = False, input_names: list[str] | None = None, python: str = TORCH_PYTHON,
                  export_kw: dict | None = None, note: str = "", **kw) -> None:
    """One model of a corpus exporter script (`script`, in scripts/corpus/): `make()` with seeded random weights and
    BatchNorm statistics from its calibration inputs (`seeded`), exported by torch.onnx at `opset` (`to_onnx`:
    TorchScript, or dynamo; `export_kw` named in the manifest's exporter text, `kw` not), its calibration set saved
    and its manifest entry written (committed when small enough; made again by `python script --only name`)."""
    lic, origin = licence
    model, calib = seeded(name, make, shape)
    out = manifest.corpus_file(name)
    how = to_onnx(model, calib[:1], out, opset, dynamo, export_kw, note,
                  **({"input_names": input_names} if input_names else {}), **kw)
    manifest.save_calibration(out.parent, calib)
    manifest.record_export(name, kind, out, f"scripts/corpus/{script}", python, lic,
                           {"architecture": origin, "exporter": how, "weights": WEIGHTS})


def seeded_main(doc: str, script: str, models: dict, argv=None, licence: tuple[str, str] | None = None) -> int:
    """The command line of an exporter script whose `models` rows are (kind, constructor, input shape without
    batch, opset, dynamo?[, (license, origin)]) (`licence` for rows without one): each made by export_seeded, its
    input named "x"."""
    def export(name: str) -> None:
        kind, make, shape, opset, dynamo, *lic = models[name]
        export_seeded(name, script, kind, make, shape, opset, lic[0] if lic else licence, dynamo, ["x"])
    return manifest.export_all(doc, models, export, argv)


def export(name: str) -> None:
    kind, make, shape, exporter, licence = MODELS[name]
    dynamo = exporter == "dynamo"       # the dynamo exporter at its own default opset, TorchScript at 17
    export_seeded(name, "export_torch.py", kind, make, shape, None if dynamo else 17, licence, dynamo, python="python")


def main(argv=None) -> int:
    return manifest.export_all(__doc__, MODELS, export, argv)


if __name__ == "__main__":
    sys.exit(main())
