"""TFLite's int8 GELU (edgec/ops/lut/tflite.py gelu_table): TFLite Micro registers no GELU, so TF Lite's reference
kernel is its definition; its outputs on every int8 input for 40 quantizations (exact and tanh-approximate) were
stored by scripts/tflite_gelu_oracle.py. A Keras ViT with activation="gelu" (keras_vit_gelu_32 in the corpus) was
refused ("GELU: operator not supported")."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgec.frontend import tflite as importer
from edgec.ops.lut.tflite import gelu_table
from edgec.quant import reference

import tflite_oracle as oracle

ORACLE = Path(__file__).resolve().parent / "data" / "tflite_gelu_int8.npz"


def test_gelu_table_is_tf_lites_on_every_input():
    o = np.load(ORACLE)
    for k in range(len(o["y"])):
        table = gelu_table(float(o["s_in"][k]), int(o["zp_in"][k]), float(o["s_out"][k]), int(o["zp_out"][k]),
                           bool(o["approximate"][k]))
        assert np.array_equal(table, o["y"][k]), k


def test_a_gelu_operator_imports_as_its_table(tmp_path):
    o = np.load(ORACLE)
    k = 3
    T, Node = oracle.T, oracle.Node
    case = oracle.Case("gelu", [T((1, 256), [float(o["s_in"][k])], [int(o["zp_in"][k])]),
                                T((1, 256), [float(o["s_out"][k])], [int(o["zp_out"][k])])],
                       [Node("GELU", [0], 1, ("GeluOptions", dict(Approximate=bool(o["approximate"][k]))))], 0, 1)
    path = tmp_path / "gelu.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "gelu")
    got = np.asarray(reference.run(graph, np.arange(-128, 128, dtype=np.int8))).reshape(-1)
    assert np.array_equal(got, o["y"][k])
