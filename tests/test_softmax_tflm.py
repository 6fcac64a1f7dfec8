"""edgec/ops/softmax/__init__.py: TFLite's SOFTMAX with an int8 input and an int16 output (Softmax<int8_t, int16_t>, as
keyword_scrambled_8bit ends), bit-identical with TFLite Micro's interpreter on the NumPy reference and in the
generated C (runtime_c/edgec_softmax.c)."""
from __future__ import annotations

import numpy as np
import pytest

import tflite_oracle as oracle
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

INT16 = 7       # tflite.TensorType


def softmax16_case(rng, name: str, extreme: bool) -> oracle.Case:
    rows, cols = int(rng.integers(1, 5)), int(rng.choice([1, 2, 3, 10, 33, 256, 511]))
    s, z = oracle._act(rng, extreme)
    if extreme:
        s = float(np.float32(rng.choice([1e-3, 0.5, 3.0])))
    beta = float(np.float32(rng.choice([1.0, 0.5, 2.0])))
    tensors = [oracle.T((rows, cols), [s], [z]), oracle.T((rows, cols), [1 / 65536], [-32768], INT16)]
    case = oracle.Case(name, tensors, [oracle.Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=beta)))], 0, 1)
    x = rng.integers(-128, 128, (4, rows, cols)).astype(np.int8)
    x[0], x[1] = z, rng.choice([-128, 127], (rows, cols))
    case.x = x
    return case


def test_int8_to_int16_softmax_matches_tflm(tmp_path):
    rng = np.random.default_rng(29)
    graphs, xs, wants = [], [], []
    for k in range(8):
        case = softmax16_case(rng, f"sm16_{k}", k % 2 == 1)
        path = tmp_path / f"{case.name}.tflite"
        path.write_bytes(oracle.write(case))
        graph = importer.load(path, case.name)
        assert graph.tensors[graph.output].dtype == "int16"
        want = oracle.tflm(path.read_bytes(), case.x)
        got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in case.x])
        assert got.dtype == want.dtype == np.int16 and np.array_equal(got, want), case.name
        graphs.append(graph), xs.append(case.x.reshape(len(case.x), -1)), wants.append(want)
    assert any(len(np.unique(w)) > 2 for w in wants)      # not only saturated rows
    for c, want in zip(oracle.run_c(graphs, xs, tmp_path / "c", "reference"), wants):
        assert np.array_equal(np.ascontiguousarray(c).view(np.int16).reshape(want.shape), want)


def test_int16_softmax_output_of_another_quantization_is_refused(tmp_path):
    tensors = [oracle.T((1, 4), [0.1], [0]), oracle.T((1, 4), [1 / 32768], [0], INT16)]
    case = oracle.Case("sm16_bad", tensors, [oracle.Node("SOFTMAX", [0], 1, ("SoftmaxOptions", dict(Beta=1.0)))],
                       0, 1)
    path = tmp_path / "sm16_bad.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match=r"SOFTMAX \(operator #0: int16 softmax output quantized .*not "
                                         r"\(1/65536, -32768\)"):
        importer.load(path, "sm16_bad")
