"""Run-time shape computations folded at import (edgec/frontend/tflite_fold.py): what they compute reaches the
operators that read it exactly as TFLite Micro computes it at run time, and a file shape that disagrees with it
(a placeholder the converter left) is named."""
from __future__ import annotations

import numpy as np
import pytest

from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

import tflite_oracle as oracle


def _dense_on_3d(rng, reshaped_to):
    """Keras's Dense on a [1, 4, 6] input with batch None: SHAPE -> GATHER (the leading dimensions) -> REDUCE_PROD,
    GATHER (the last) -> REDUCE_PROD, PACK -> RESHAPE to [4, 6] -> FULLY_CONNECTED; `reshaped_to`: the shape the
    file gives the RESHAPE's output."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    (s, z), (s2, z2) = oracle._act(rng, False), oracle._act(rng, False)
    prod = ("ReducerOptions", dict(KeepDims=False))
    tensors = [T((1, 4, 6), [s], [z]), T((3,), [], [], i32), T((2,), [], [], i32, np.array([0, 1], np.int32)),
               T((2,), [], [], i32), T((1,), [], [], i32, np.array([0], np.int32)), T((), [], [], i32),
               T((1,), [], [], i32, np.array([2], np.int32)), T((1,), [], [], i32), T((), [], [], i32),
               T((2,), [], [], i32), T(reshaped_to, [s], [z]), T((4, 5), [s2], [z2])]
    nodes = [Node("SHAPE", [0], 1), Node("GATHER", [1, 2], 3), Node("REDUCE_PROD", [3, 4], 5, prod),
             Node("GATHER", [1, 6], 7), Node("REDUCE_PROD", [7, 4], 8, prod),
             Node("PACK", [5, 8], 9, ("PackOptions", dict(ValuesCount=2, Axis=0))), Node("RESHAPE", [0, 9], 10),
             Node("FULLY_CONNECTED", [10, 12, 13], 11, ("FullyConnectedOptions", dict(FusedActivationFunction=0)))]
    wq, ws = oracle._weights(rng, (5, 6), 0, False)
    tensors += [T((5, 6), ws[:1], [0], data=wq), T((5,), [s * ws[0]], [0], i32, oracle._bias(rng, 5, False))]
    return oracle.Case("dense3d", tensors, nodes, 0, 11)


def test_reduce_prod_of_a_shape_folds(tmp_path):
    """REDUCE_PROD over a shape (Keras's Dense on a 3-D input) folds at import like the other shape computations;
    the result is TFLite Micro's on the same file with the computed shape given as a constant (TFLite Micro has
    no REDUCE_PROD)."""
    rng = np.random.default_rng(9)
    case = _dense_on_3d(rng, (4, 6))
    path = tmp_path / "dense3d.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "dense3d")
    assert [op.kind for op in graph.ops] == ["reshape", "fully_connected_rows"]       # nothing else on the device
    case.tensors[9] = oracle.T((2,), [], [], oracle.INT32, np.array([4, 6], np.int32))
    case.nodes = case.nodes[-2:]
    const = tmp_path / "const_shape.tflite"
    const.write_bytes(oracle.write(case))
    x = rng.integers(-128, 128, (5, 1, 4, 6)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(const.read_bytes(), x).reshape(len(x), -1))


def test_unresolved_run_time_shape_is_named(tmp_path):
    """A RESHAPE whose file shape is a placeholder (TFLiteConverter's [1, 1] for a shape known only at run time)
    is refused naming the shape its folded operand computes, not passed on to fail in the next operator."""
    path = tmp_path / "placeholder.tflite"
    path.write_bytes(oracle.write(_dense_on_3d(np.random.default_rng(9), (1, 1))))
    with pytest.raises(EdgecError, match=r"RESHAPE \(operator #6: the shape computed for its output, \[4, 6\], is "
                       r"not the file's \[1, 1\]"):
        importer.load(path, "placeholder")


def _constant_branch(rng, tile: bool):
    """x [1, 4, 3] and a constant c [2, 3] (int8, x's quantization) RESHAPEd to [1, 2, 3] (with `tile`: then
    TILEd to [1, 4, 3]), concatenated after x (output 0); the constant branch alone is output 1 (an SSD's
    anchors, as ST's model zoo exports them)."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    s, z = oracle._act(rng, False)
    c = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    rows = 4 if tile else 2
    tensors = [T((1, 4, 3), [s], [z]), T((2, 3), [s], [z], data=c), T((3,), [], [], i32, np.array([1, 2, 3], np.int32)),
               T((1, 2, 3), [s], [z]), T((1, rows, 3), [s], [z]), T((1, 4 + rows, 3), [s], [z]),
               T((3,), [], [], i32, np.array([1, 2, 1], np.int32))]
    nodes = [Node("RESHAPE", [1, 2], 3)]
    if tile:
        nodes.append(Node("TILE", [3, 6], 4))
    else:
        nodes.append(Node("RESHAPE", [3, 2], 4))
    nodes.append(Node("CONCATENATION", [0, 4], 5, ("ConcatenationOptions", dict(Axis=1, FusedActivationFunction=0))))
    expected = np.tile(c.reshape(1, 2, 3), (1, 2, 1)) if tile else c.reshape(1, 2, 3)
    return oracle.Case("constbranch", tensors, nodes, 0, [5, 4]), expected


def test_a_constant_branch_folds_and_is_written_where_it_is_read(tmp_path):
    """An int8 constant moved by RESHAPE (no TILE: TFLite Micro's Python interpreter lacks it) into a
    CONCATENATION and into a graph output of its own: folded at import, written by one constant op; bit-identical
    to TFLite Micro, and the generated C to the reference."""
    rng = np.random.default_rng(4)
    case, _ = _constant_branch(rng, tile=False)
    path = tmp_path / "c.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "c")
    assert sorted(op.kind for op in graph.ops).count("constant_tensor") == 1
    x = rng.integers(-128, 128, (4, 1, 4, 3)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(path.read_bytes(), x).reshape(len(x), -1))
    c_out = oracle.run_c([graph], [x.reshape(len(x), -1)], tmp_path, "reference")[0]
    assert np.array_equal(np.asarray(c_out).reshape(got.shape), got)


def test_a_tiled_constant_is_the_files_bytes(tmp_path):
    """TILE of an int8 constant (an SSD's anchor grid) folds to numpy.tile of the file's bytes, in the graph
    output that reads it and in the concatenation."""
    rng = np.random.default_rng(5)
    case, expected = _constant_branch(rng, tile=True)
    path = tmp_path / "t.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "t")
    assert "tile" not in {op.kind for op in graph.ops}
    x = rng.integers(-128, 128, (1, 4, 3)).astype(np.int8)
    got = np.asarray(reference.run(graph, x.reshape(-1))).reshape(-1)
    assert np.array_equal(got, np.concatenate([x.reshape(-1), expected.reshape(-1), expected.reshape(-1)]))


def test_a_constant_of_another_quantization_is_not_folded(tmp_path):
    """Folding moves bytes only: a constant whose quantization differs from the output's is left to the
    importers (here: refused naming the CONCATENATION), never silently requantized."""
    rng = np.random.default_rng(6)
    case, _ = _constant_branch(rng, tile=False)
    case.tensors[1].scale = [case.tensors[1].scale[0] * 2]
    path = tmp_path / "q.tflite"
    path.write_bytes(oracle.write(case))
    with pytest.raises(EdgecError, match="RESHAPE"):
        importer.load(path, "q")


def test_bench_runs_a_file_tflite_micro_cannot_load(tmp_path):
    """A file TFLite Micro's Python interpreter cannot load (TILE: not registered there) builds and benches:
    the device against edgec's reference, the interpreter's check reported as not made (a traceback before)."""
    from edgec import api

    rng = np.random.default_rng(7)
    case, _ = _constant_branch(rng, tile=True)
    path = tmp_path / "t.tflite"
    path.write_bytes(oracle.write(case))
    out = tmp_path / "b"
    api.build(path, None, "host", out)
    data = tmp_path / "d.npz"
    np.savez(data, x=rng.uniform(-1, 1, (3, 4, 3)).astype(np.float32))
    r = api.bench(out, data)
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["tflite"] == {"interpreter": None, "reference_vs_interpreter": None}


def test_batch_none_placeholder_takes_the_computed_shape(tmp_path):
    """The same RESHAPE and FULLY_CONNECTED with -1 in their outputs' shape signatures (what TFLiteConverter writes
    for a Keras batch of None; keras_kws_transformer in the corpus): the placeholder shapes ([1, 1], [1, 5]) stand
    for what the folded operand computes, and the result is TFLite Micro's on the file with the shapes resolved."""
    rng = np.random.default_rng(9)
    case = _dense_on_3d(rng, (1, 1))
    case.tensors[10].signature, case.tensors[11].signature = (-1, -1), (-1, 5)
    case.tensors[11].shape = (1, 5)
    path = tmp_path / "batch_none.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "batch_none")
    assert graph.tensors[graph.output].shape == (4, 5)
    case.tensors[9] = oracle.T((2,), [], [], oracle.INT32, np.array([4, 6], np.int32))
    case.tensors[10].shape, case.tensors[11].shape = (4, 6), (4, 5)
    case.nodes = case.nodes[-2:]
    const = tmp_path / "resolved.tflite"
    const.write_bytes(oracle.write(case))
    x = rng.integers(-128, 128, (5, 1, 4, 6)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(const.read_bytes(), x).reshape(len(x), -1))


def test_interpreter_check_is_skipped_where_tflite_micro_cannot_load_the_file(tmp_path):
    """edgec bench's TFLite Micro check (edgec/frontend/tflite_interpreter.py) on a file TFLite Micro cannot load
    (its REDUCE_PROD of a shape) gives no interpreter outputs instead of a traceback (the bench of the corpus's
    keras_kws_transformer crashed with "TFLM failed to allocate tensors")."""
    from edgec.frontend import tflite_interpreter

    case = _dense_on_3d(np.random.default_rng(9), (4, 6))
    path = tmp_path / "reduce_prod.tflite"
    path.write_bytes(oracle.write(case))
    assert tflite_interpreter.interpreter_outputs(path, np.zeros((1, 24), np.int8)) is None


def _dilated_conv1d(rng, batch_none: bool):
    """Keras's Conv1D(dilation_rate=2) on a [1, 9, 3] input as TFLiteConverter writes it: SPACE_TO_BATCH_ND
    (block 2, padding 1) -> EXPAND_DIMS -> CONV_2D (a 1x3 kernel) -> RESHAPE -> BATCH_TO_SPACE_ND. With
    batch_none, every tensor after the SPACE_TO_BATCH_ND has the converter's placeholder batch 1 and a shape
    signature of [-1, ...]; else the shapes TF Lite runs it with (batch 2 between the two)."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    (s, z), (s2, z2) = oracle._act(rng, False), oracle._act(rng, False)
    b = 1 if batch_none else 2
    wq, ws = oracle._weights(rng, (4, 1, 3, 3), 0, False)
    tensors = [T((1, 9, 3), [s], [z]), T((1,), [], [], i32, np.array([2], np.int32)),
               T((1, 2), [], [], i32, np.array([[0, 1]], np.int32)), T((b, 5, 3), [s], [z]),
               T((1,), [], [], i32, np.array([1], np.int32)), T((b, 1, 5, 3), [s], [z]),
               T((4, 1, 3, 3), ws, [0] * len(ws), data=wq), T((4,), [s * w for w in ws], [0] * len(ws), i32,
                                                           oracle._bias(rng, 4, False, ws)),
               T((b, 1, 3, 4), [s2], [z2]), T((3,), [], [], i32, np.array([-1, 3, 4], np.int32)),
               T((b, 3, 4), [s2], [z2]), T((1, 2), [], [], i32, np.array([[0, 0]], np.int32)),
               T((1, 6, 4), [s2], [z2])]
    if batch_none:
        for k in (3, 5, 8, 10, 12):
            tensors[k].signature = (-1, *tensors[k].shape[1:])
    conv = ("Conv2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FusedActivationFunction=0, DilationWFactor=1,
                                  DilationHFactor=1))
    nodes = [Node("SPACE_TO_BATCH_ND", [0, 1, 2], 3, ("SpaceToBatchNDOptions", {})),
             Node("EXPAND_DIMS", [3, 4], 5, ("ExpandDimsOptions", {})), Node("CONV_2D", [5, 6, 7], 8, conv),
             Node("RESHAPE", [8, 9], 10), Node("BATCH_TO_SPACE_ND", [10, 1, 11], 12, ("BatchToSpaceNDOptions", {}))]
    return oracle.Case("dilated", tensors, nodes, 0, 12)


def test_a_dilated_conv1d_with_batch_none_runs_its_blocks_as_rows(tmp_path):
    """A Keras TCN's dilated Conv1D exported with batch None (keras_tcn_kws in the corpus) was refused: the
    SPACE_TO_BATCH_ND's output ([2, 5, 3] at run time) has the placeholder [1, 5, 3] in the file, and the CONV_2D
    after it ran a batch of 1. Now the ops between take the run-time batch, the 1-row kernel runs the two blocks
    as rows, and the result is TFLite Micro's on the same file with the shapes TF Lite runs it with."""
    rng = np.random.default_rng(12)
    dynamic, static = _dilated_conv1d(rng, True), _dilated_conv1d(np.random.default_rng(12), False)
    path = tmp_path / "dyn.tflite"
    path.write_bytes(oracle.write(dynamic))
    graph = importer.load(path, "dyn")
    x = rng.integers(-128, 128, (4, 1, 9, 3)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(oracle.write(static), x).reshape(len(x), -1))


def test_a_class_token_broadcast_to_the_batch_folds(tmp_path):
    """keras.io's ViT class token: an int8 weight [1, 1, 3] BROADCAST_TO a shape PACKed from the input's batch
    (SHAPE -> STRIDED_SLICE), then concatenated before the patches. Was refused (keras_vit_gelu_32: "input 0 ... is
    a constant"); now the broadcast folds and the token's bytes lead the concatenation (data movement: TFLite
    Micro's BROADCAST_TO fails to prepare on a shape computed at run time, so NumPy's is the expected result)."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    rng = np.random.default_rng(6)
    s, z = oracle._act(rng, False)
    token = rng.integers(-128, 128, (1, 1, 3)).astype(np.int8)
    one = np.array([1], np.int32)
    tensors = [T((1, 4, 3), [s], [z]), T((3,), [], [], i32), T((1,), [], [], i32, np.array([0], np.int32)),
               T((1,), [], [], i32, one), T((1,), [], [], i32, one), T((), [], [], i32),
               T((), [], [], i32, np.array(1, np.int32)), T((), [], [], i32, np.array(3, np.int32)),
               T((3,), [], [], i32), T((1, 1, 3), [s], [z], data=token), T((1, 1, 3), [s], [z]),
               T((1, 5, 3), [s], [z])]
    nodes = [Node("SHAPE", [0], 1), Node("STRIDED_SLICE", [1, 2, 3, 4], 5,
                                         ("StridedSliceOptions", dict(ShrinkAxisMask=1))),
             Node("PACK", [5, 6, 7], 8, ("PackOptions", dict(ValuesCount=3, Axis=0))),
             Node("BROADCAST_TO", [9, 8], 10),
             Node("CONCATENATION", [10, 0], 11, ("ConcatenationOptions", dict(Axis=1, FusedActivationFunction=0)))]
    case = oracle.Case("token", tensors, nodes, 0, 11)
    path = tmp_path / "token.tflite"
    path.write_bytes(oracle.write(case))
    graph = importer.load(path, "token")
    assert "remap" not in {op.kind for op in graph.ops}
    x = rng.integers(-128, 128, (3, 1, 4, 3)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, np.concatenate([np.repeat(token.reshape(1, 3), 3, 0), x.reshape(3, -1)], axis=1))


def _dilated_conv2d(rng, batch_none: bool):
    """Keras's Conv2D(3, dilation_rate=2, padding="valid") on [1, 8, 8, 2]: SPACE_TO_BATCH_ND (block 2x2) -> a 3x3
    VALID CONV_2D on the 4 blocks -> BATCH_TO_SPACE_ND; with batch_none the placeholders as TFLiteConverter writes them."""
    T, Node, i32 = oracle.T, oracle.Node, oracle.INT32
    (s, z), (s2, z2) = oracle._act(rng, False), oracle._act(rng, False)
    b = 1 if batch_none else 4
    wq, ws = oracle._weights(rng, (3, 3, 3, 2), 0, False)
    block = T((2,), [], [], i32, np.array([2, 2], np.int32))
    tensors = [T((1, 8, 8, 2), [s], [z]), block, T((2, 2), [], [], i32, np.zeros((2, 2), np.int32)),
               T((b, 4, 4, 2), [s], [z]), T((3, 3, 3, 2), ws, [0] * len(ws), data=wq),
               T((3,), [s * w for w in ws] if len(ws) > 1 else [s * ws[0]], [0] * len(ws), i32,
                 oracle._bias(rng, 3, False, ws)),
               T((b, 2, 2, 3), [s2], [z2]), T((1, 4, 4, 3), [s2], [z2])]
    if batch_none:
        for k in (3, 6):
            tensors[k].signature = (-1, *tensors[k].shape[1:])
    conv = ("Conv2DOptions", dict(Padding=1, StrideW=1, StrideH=1, FusedActivationFunction=1, DilationWFactor=1,
                                  DilationHFactor=1))
    nodes = [Node("SPACE_TO_BATCH_ND", [0, 1, 2], 3, ("SpaceToBatchNDOptions", {})),
             Node("CONV_2D", [3, 4, 5], 6, conv),
             Node("BATCH_TO_SPACE_ND", [6, 1, 2], 7, ("BatchToSpaceNDOptions", {}))]
    return oracle.Case("dilated2d", tensors, nodes, 0, 7)


def test_a_dilated_conv2d_with_batch_none_drops_the_rows_between_blocks(tmp_path):
    """The 2-D form (a 3-row kernel): the four blocks stacked as rows of one image, the VALID convolution's rows that
    straddle two blocks computed and dropped; TFLite Micro's result on the file with the run-time shapes."""
    rng = np.random.default_rng(13)
    dynamic, static = _dilated_conv2d(rng, True), _dilated_conv2d(np.random.default_rng(13), False)
    path = tmp_path / "dyn2d.tflite"
    path.write_bytes(oracle.write(dynamic))
    graph = importer.load(path, "dyn2d")
    x = rng.integers(-128, 128, (4, 1, 8, 8, 2)).astype(np.int8)
    got = np.stack([np.asarray(reference.run(graph, xi.reshape(-1))).reshape(-1) for xi in x])
    assert np.array_equal(got, oracle.tflm(oracle.write(static), x).reshape(len(x), -1))
