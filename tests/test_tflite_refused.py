"""What edgec refuses by design in a .tflite (edgec/ops/variables.py REFUSED): control flow (IF, WHILE: other
subgraphs run at run time) and Arm Ethos-U command streams (CUSTOM ethos-u, compiled by Vela) are refused in one
line naming every such operator, each with why and what to do, whatever lies after it."""
from __future__ import annotations

import numpy as np
import pytest

import tflite_oracle as oracle
from tflite_oracle import Case, Node, T
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer

BOOL = 6


def test_control_flow_and_ethos_u_are_named_in_one_line(tmp_path):
    tensors = [T((1, 4), [0.1], [0]), T((), [], [], BOOL, data=np.array(True)), T((1, 4), [0.1], [0]), T((1, 4), [0.1], [0]),
               T((1, 4), [0.1], [0]), T((1, 4), [0.1], [0])]
    nodes = [Node("IF", [1, 0], 2, ("IfOptions", {"ThenSubgraphIndex": 1, "ElseSubgraphIndex": 2})),
             Node("WHILE", [2], 3, ("WhileOptions", {"CondSubgraphIndex": 3, "BodySubgraphIndex": 4})),
             Node("CUSTOM:ethos-u", [3], 4), Node("RELU", [4], 5)]
    case = Case("control", tensors, nodes, 0, 5)
    case.subgraphs = 5
    path = tmp_path / "control.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError) as e:
        importer.load(path, "control")
    line = str(e.value)
    assert "\n" not in line and "cannot honour 3 operator(s)" in line, line
    assert "IF (operator #0: control flow" in line and "WHILE (operator #1: control flow" in line, line
    assert "CUSTOM ethos-u (operator #2: a Vela-compiled Ethos-U NPU command stream" in line, line
    assert "unroll the loop" in line and "before Vela" in line and not line.endswith("..."), line


def test_other_subgraphs_without_if_or_while_are_refused_as_before(tmp_path):
    case = Case("subgraphs", [T((1, 4), [0.1], [0]), T((1, 4), [0.1], [0])], [Node("RELU", [0], 1)], 0, 1)
    case.subgraphs = 2
    path = tmp_path / "subgraphs.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match="2 subgraphs"):
        importer.load(path, "subgraphs")


def test_a_dynamic_range_tflite_with_token_ids_says_what_to_do(tmp_path):
    """A dynamic-range .tflite (TFLiteConverter's Optimize.DEFAULT without a representative dataset): int32 ids
    into an int8 table, DEQUANTIZE, then a float32 FULLY_CONNECTED. Its input is not float, so the graph input's
    hint never showed: one line says what the file is and what to do, instead of naming a float RESHAPE."""
    from tflite_oracle import INT32

    rng = np.random.default_rng(0)
    table = rng.integers(-128, 128, (20, 8)).astype(np.int8)
    w = rng.standard_normal((3, 8)).astype(np.float32)
    tensors = [T((1,), [], [], INT32), T(table.shape, [0.05], [0], data=table), T((1, 8), [0.05], [0]),
               T((1, 8), [], [], 0), T(w.shape, [], [], 0, data=w), T((1, 3), [], [], 0)]
    nodes = [Node("GATHER", [1, 0], 2, ("GatherOptions", {"Axis": 0})), Node("DEQUANTIZE", [2], 3),
             Node("FULLY_CONNECTED", [3, 4, -1], 5)]
    path = tmp_path / "dynamic.tflite"
    path.write_bytes(oracle.write(Case("dynamic", tensors, nodes, 0, 5)))
    with pytest.raises(EdgecError) as e:
        importer.load(path, "dynamic")
    line = str(e.value)
    assert "\n" not in line and "a float or dynamic-range .tflite" in line, line
    assert "quantize it fully with TFLiteConverter" in line and "ONNX with --calib" in line, line
