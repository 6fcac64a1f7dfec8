"""MLPerf Tiny's official input encodings and result formats, and their host twins of what the
`--protocol mlperf` firmware does with them (runtime_c/harness/edgec_mlperf.c), bit for bit.

The runner sends each benchmark's dataset file as it is (mlcommons/tiny reference submissions):
  kws01  int8 MFCCs quantized with the reference int8 model's input scale 0.5847029 / zero point 83
  ic01   uint8 RGB pixels 0..255 (the float model takes the pixel values)
  vww01  uint8 RGB pixels 0..255 (the float model takes pixel / 255)
  ad01   float32 log-mel values, 640 per segment (2,560 bytes)
The device converts them to the edgec model's own input quantization.  Results are printed as the
reference firmwares print them ("%0.3f", KWS's truncated "0.%d%d%d", VWW's trailing comma, AD's one score).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# the C enums of edgec_mlperf.h
ENCODING_CODES = {"raw": 0, "int8": 1, "uint8": 2, "float32": 3}
FORMAT_CODES = {"fixed3": 0, "fixed3_trailing": 1, "trunc3": 2, "score": 3}


@dataclass(frozen=True)
class Encoding:
    dtype: str              # raw (the model's own int8 input), int8, uint8 or float32
    scale: float = 1.0      # int8/uint8: value v means (v - zero_point) * scale
    zero_point: int = 0
    results: str = "fixed3"  # a key of FORMAT_CODES

    def item_bytes(self) -> int:
        return 4 if self.dtype == "float32" else 1


# the official int8 models' input quantization (the .tflite files), as float32 values
OFFICIAL = {
    "kws01": Encoding("int8", float(np.float32(0.5847029)), 83, "trunc3"),
    "ic01": Encoding("uint8", 1.0, 0, "fixed3"),
    "vww01": Encoding("uint8", float(np.float32(1.0 / 255.0)), 0, "fixed3_trailing"),
    "ad01": Encoding("float32", 1.0, 0, "score"),
}
RAW = Encoding("raw")


def encoding_for(mlperf_model: str) -> Encoding:
    """The official encoding of an MLPerf Tiny benchmark name; other names take the model's raw int8 input."""
    return OFFICIAL.get(mlperf_model, RAW)


def chw_channels(onnx_shape) -> int:
    """Channels when a 4-D image/MFCC input is NCHW ([1,C,H,W], C of 1 or 3) while the official data are
    NHWC, else 0 (no transpose)."""
    shape = list(onnx_shape)
    if len(shape) == 4 and shape[1] in (1, 3) and shape[3] not in (1, 3):
        return int(shape[1])
    return 0


def values(raw: bytes, enc: Encoding) -> np.ndarray:
    """The float32 values an official-encoding buffer stands for."""
    if enc.dtype == "float32":
        return np.frombuffer(raw, "<f4").astype(np.float32)
    v = np.frombuffer(raw, np.int8 if enc.dtype == "int8" else np.uint8).astype(np.int32)
    return (v - enc.zero_point).astype(np.float32) * np.float32(enc.scale)


def to_model_input(raw: bytes, enc: Encoding, scale: float, zero_point: int, channels: int = 0) -> np.ndarray:
    """What the firmware's convert_input makes of the db bytes: the model's int8 input (flat, model layout)."""
    if enc.dtype == "raw":
        q = np.frombuffer(raw, np.int8).copy()
    else:
        v = values(raw, enc) / np.float32(scale)
        a = np.abs(v)
        a = np.where(a < np.float32(1000.0), a, np.float32(1000.0)).astype(np.float32)
        r = np.floor(a + np.float32(0.5)).astype(np.int32)
        q = np.clip(np.where(v < 0, -r, r) + int(zero_point), -128, 127).astype(np.int8)
    if channels:
        q = q.reshape(-1, channels).T.reshape(-1)
    return q


def dequantized(q_out: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (q_out.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)


def anomaly_score(q_out: np.ndarray, scale: float, zero_point: int, raw: bytes) -> np.float32:
    """AD's on-device score: the mean of (dequantized output - float input)^2, summed in order in float32."""
    d = dequantized(q_out.reshape(-1), scale, zero_point) - values(raw, OFFICIAL["ad01"])
    total = np.cumsum((d * d).astype(np.float32), dtype=np.float32)[-1]
    return np.float32(total) / np.float32(len(d))


def fixed3(v) -> str:
    return "%.3f" % float(np.float32(v))


def trunc3(v) -> str:
    f = np.float32(v)
    return "0.%d%d%d" % (int(f * np.float32(10)), int(f * np.float32(100)) % 10, int(f * np.float32(1000)) % 10)


def results_line(q_out: np.ndarray, scale: float, zero_point: int, enc: Encoding, raw: bytes = b"") -> str:
    """The m-results-[...] line the firmware prints for this output (and, for AD, this input)."""
    if enc.results == "score":
        return f"m-results-[{fixed3(anomaly_score(q_out, scale, zero_point, raw))}]"
    deq = dequantized(q_out.reshape(-1), scale, zero_point)
    text = ",".join((trunc3 if enc.results == "trunc3" else fixed3)(v) for v in deq)
    return f"m-results-[{text}{',' if enc.results == 'fixed3_trailing' else ''}]"


def encode(x: np.ndarray, enc: Encoding) -> bytes:
    """Float data (the float model's input values, NHWC) -> the official encoding's bytes."""
    x = np.asarray(x, np.float32).reshape(-1)
    if enc.dtype == "raw":
        raise ValueError("the raw encoding is the model's own int8 input: quantize with the build's input tensor")
    if enc.dtype == "float32":
        return x.astype("<f4").tobytes()
    info = np.iinfo(np.int8 if enc.dtype == "int8" else np.uint8)
    q = np.clip(np.round(x / np.float32(enc.scale)) + enc.zero_point, info.min, info.max)
    return q.astype(info.dtype).tobytes()


def write_dataset(folder, model: str, samples: list[np.ndarray], labels: list[int], classes: int,
                  segment_values: int = 640, stride_values: int = 128) -> list[str]:
    """Float samples -> FOLDER/<model>/ in the runner's layout: one .bin per sample in the official encoding
    and y_labels.csv (file, classes, class, bytes_to_send, stride; AD: segments of 640 float32 values at a
    stride of one 128-value frame, as the runner cuts them).  Returns the file names."""
    from pathlib import Path

    enc = OFFICIAL[model]
    out = Path(folder) / model
    out.mkdir(parents=True, exist_ok=True)
    names, rows = [], []
    for i, (x, label) in enumerate(zip(samples, labels)):
        name = f"{model}_{i:04d}.bin"
        (out / name).write_bytes(encode(x, enc))
        size = segment_values * 4 if model == "ad01" else len(encode(x, enc))
        stride = stride_values * 4 if model == "ad01" else size
        rows.append(f"{name},{classes},{int(label)},{size},{stride}")
        names.append(name)
    (out / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return names
