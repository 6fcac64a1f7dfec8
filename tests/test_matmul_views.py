"""edgec/ops/matmul.py read_through_views on a quantized .tflite graph (edgec/frontend/tflite.py, scalars=False):
a BATCH_MATMUL operand made by a TRANSPOSE on the same grid is read through strides from the TRANSPOSE's input (no
copy. The numbers are the oracle tests' (tests/test_tflite16.py, tests/test_corpus.py): this checks which graph
runs them."""
from __future__ import annotations

import numpy as np

from tflite_oracle import Case, Node, T, write
from edgec.frontend import tflite as importer

INT16 = 7


def _graph(tmp_path, ys_t: float):
    """x [2, 3, 4] times TRANSPOSE(x) [2, 4, 3] (16x8), the transposed tensor on scale ys_t (TFLite's TRANSPOSE
    keeps its input's)."""
    xs = 0.001
    tensors = [T((2, 3, 4), [xs], [0], INT16), T((3,), [1.0], [0], 2, np.array([0, 2, 1], np.int32)),
               T((2, 4, 3), [ys_t], [0], INT16), T((2, 3, 3), [0.01], [0], INT16)]
    nodes = [Node("TRANSPOSE", [0, 1], 2, ("TransposeOptions", {})),
             Node("BATCH_MATMUL", [0, 2], 3, ("BatchMatMulOptions", dict(AdjX=False, AdjY=False)))]
    path = tmp_path / f"views_{ys_t}.tflite"
    path.write_bytes(write(Case("views", tensors, nodes, 0, 3)))
    return importer.load(path, "views")


def test_a_transpose_on_the_same_grid_is_read_through_strides(tmp_path):
    g = _graph(tmp_path, 0.001)
    assert [op.kind for op in g.ops] == ["matmul"]
    mm = g.ops[0]
    assert mm.inputs == (g.input, g.input)
    # B = x^T read from x [2][3][4]: row (k) stride 1, column (n) stride 4, batch 12
    assert (mm.params["b_batch_stride"], mm.params["b_row_stride"], mm.params["b_col_stride"]) == (12, 1, 4)

