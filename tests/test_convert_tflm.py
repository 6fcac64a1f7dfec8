"""edgec/ops/convert.py: TFLite's QUANTIZE from int16 or int8 to int32 (TFLite Micro's Requantize, as
keyword_scrambled_8bit's int32 graph output is made), bit-identical with TFLite Micro's interpreter on the NumPy
reference and in the generated C (runtime_c/edgec_convert.c), up to outputs near the int32 limits; uint8 -> int32,
which TFLite Micro does not take, refused in one line."""
from __future__ import annotations

import numpy as np
import pytest

import tflite_oracle as oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

INT16, INT32, UINT8 = 7, 2, 3      # tflite.TensorType


def requantize32_case(rng, name: str, k: int) -> oracle.Case:
    shape = tuple(int(v) for v in rng.integers(1, 6, 2))
    sixteen = k % 2 == 0
    s_in = float(np.float32(10 ** rng.uniform(-5, -2) if sixteen else 10 ** rng.uniform(-3, 0)))
    z_in = 0 if sixteen else int(rng.integers(-128, 128))
    # output scales from much finer (a large multiplier, 2^14 in case 6: int16 values to near 2^29) to coarser
    s_out = float(np.float32(s_in * (2.0 ** -14 if k == 6 else 10 ** rng.uniform(-4, 1))))
    z_out = int(rng.integers(-1000, 1000)) if k % 3 == 1 else 0
    tensors = [oracle.T(shape, [s_in], [z_in], INT16 if sixteen else oracle.INT8),
               oracle.T(shape, [s_out], [z_out], INT32)]
    case = oracle.Case(name, tensors, [oracle.Node("QUANTIZE", [0], 1)], 0, 1)
    lo, hi = (-32768, 32768) if sixteen else (-128, 128)
    x = rng.integers(lo, hi, (4, *shape))
    x[0], x[1] = z_in, rng.choice([lo, hi - 1], shape)
    case.x = x.astype(np.int16 if sixteen else np.int8)
    return case


def test_quantize_to_int32_matches_tflm(tmp_path):
    rng = np.random.default_rng(32)
    graphs, xs, wants = [], [], []
    for k in range(8):
        case = requantize32_case(rng, f"q32_{k}", k)
        path = tmp_path / f"{case.name}.tflite"
        path.write_bytes(oracle.write(case))
        graph = importer.load(path, case.name)
        assert graph.tensors[graph.output].dtype == "int32"
        want = oracle.tflm(path.read_bytes(), case.x)
        got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in case.x])
        assert got.dtype == want.dtype == np.int32 and np.array_equal(got, want), case.name
        graphs.append(graph), xs.append(case.x.reshape(len(case.x), -1).view(np.int8)), wants.append(want)
    assert np.abs(wants[6].astype(np.int64)).max() > 1 << 28
    for c, want in zip(oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        assert np.array_equal(np.ascontiguousarray(c).view(np.int32).reshape(want.shape), want)


def test_quantize_uint8_to_int32_is_refused(tmp_path):
    tensors = [oracle.T((1, 4), [0.1], [128], UINT8), oracle.T((1, 4), [0.01], [0], INT32)]
    path = tmp_path / "q32_u8.tflite"
    path.write_bytes(oracle.write(oracle.Case("q32_u8", tensors, [oracle.Node("QUANTIZE", [0], 1)], 0, 1)))
    with pytest.raises(EdgecError, match=r"QUANTIZE \(operator #0: a QUANTIZE from uint8 to int32"):
        importer.load(path, "q32_u8")
