"""edgec/frontend/tflite_float_movement.py: the float TFLite operators that move or select values (STRIDED_SLICE,
SLICE, SPLIT, SPLIT_V, UNPACK, PACK, GATHER, TILE, BROADCAST_TO), each alone in a .tflite written with the
flatbuffers builder, translated to ONNX and run by ONNX Runtime against TFLite Micro's float interpreter on the
same file; and the build-time folding of integer shape subgraphs (SHAPE -> STRIDED_SLICE -> PACK -> BROADCAST_TO of
a class token, FILL of a zero state), which the file's static shapes decide."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import tflite_oracle as oracle
from tflite_oracle import Case, Node, T
from edgec.errors import EdgecError
from edgec.frontend import tflite_float

F32, I32 = 0, 2
SHAPE = (1, 4, 6, 5)


def _i32(v) -> T:
    v = np.asarray(v, np.int32)
    return T(v.shape, [], [], I32, data=v)


def _translated(tmp_path, model: bytes, x) -> np.ndarray:
    """ONNX Runtime's outputs of the translation, each flattened and concatenated in the file's order (as
    tflite_oracle.tflm packs several outputs)."""
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    sess = ort.InferenceSession(tflite_float.to_onnx(path).SerializeToString())
    name = sess.get_inputs()[0].name
    return np.stack([np.concatenate([y.reshape(-1) for y in sess.run(None, {name: xi})]) for xi in x])


def _check(tmp_path, tensors, nodes, outputs, shape=SHAPE):
    model = oracle.write(Case("one", [T(shape, [], [], F32), *tensors], nodes, 0, outputs))
    x = np.random.default_rng(2).standard_normal((3, *shape)).astype(np.float32)
    want = oracle.tflm(model, x)
    got = _translated(tmp_path, model, x)
    assert got.shape == want.shape and np.array_equal(got, want), np.abs(got - want).max()
    return got


def test_strided_slice_negative_stride_and_a_dropped_axis(tmp_path):
    """begin [0, 1, -1, 0], end [1, 4, 0, 5], strides [1, 2, -2, 1], shrink axis 0: [2, 3, 5] (rows 1 and 3,
    columns 5, 3, 1)."""
    ts = [_i32([0, 1, -1, 0]), _i32([1, 4, 0, 5]), _i32([1, 2, -2, 1]), T((2, 3, 5), [], [], F32)]
    _check(tmp_path, ts, [Node("STRIDED_SLICE", [0, 1, 2, 3], 4, ("StridedSliceOptions", {"ShrinkAxisMask": 1}))], 4)


def test_strided_slice_masks(tmp_path):
    """begin / end masks on axes 1 and 2 (from the start, to the end), shrink the last axis at index -2: [1, 3, 2]."""
    ts = [_i32([0, 3, 2, -2]), _i32([1, 3, 4, 0]), _i32([1, 1, 2, 1]), T((1, 3, 2), [], [], F32)]
    opts = {"BeginMask": 0b0010, "EndMask": 0b0100, "ShrinkAxisMask": 0b1000}
    _check(tmp_path, ts, [Node("STRIDED_SLICE", [0, 1, 2, 3], 4, ("StridedSliceOptions", opts))], 4)


def test_slice_with_a_size_to_the_end(tmp_path):
    ts = [_i32([0, 1, 2, 0]), _i32([1, 2, -1, 3]), T((1, 2, 4, 3), [], [], F32)]
    _check(tmp_path, ts, [Node("SLICE", [0, 1, 2], 3)], 3)


def test_split_and_split_v(tmp_path):
    """SPLIT (axis first, then the input) into 3 along the width; SPLIT_V into [1, -1, 2] along the channels."""
    ts = [_i32(2), *[T((1, 4, 2, 5), [], [], F32) for _ in range(3)], _i32([1, -1, 2]), _i32(3),
          T((1, 4, 6, 1), [], [], F32), T((1, 4, 6, 2), [], [], F32), T((1, 4, 6, 2), [], [], F32)]
    nodes = [Node("SPLIT", [1, 0], [2, 3, 4], ("SplitOptions", {"NumSplits": 3})),
             Node("SPLIT_V", [0, 5, 6], [7, 8, 9], ("SplitVOptions", {"NumSplits": 3}))]
    _check(tmp_path, ts, nodes, [4, 2, 3, 9, 7, 8])


def test_unpack_and_pack(tmp_path):
    """UNPACK into the 4 rows, PACK of rows 3 and 0 on a new axis 2."""
    rows = [T((1, 6, 5), [], [], F32) for _ in range(4)]
    ts = [*rows, T((1, 6, 2, 5), [], [], F32)]
    nodes = [Node("UNPACK", [0], [1, 2, 3, 4], ("UnpackOptions", {"Num": 4, "Axis": 1})),
             Node("PACK", [4, 1], 5, ("PackOptions", {"ValuesCount": 2, "Axis": 2}))]
    _check(tmp_path, ts, nodes, [5, 2])


def test_gather_constant_indices(tmp_path):
    ts = [_i32([3, 0, 0, 2]), T((1, 4, 4, 5), [], [], F32)]
    _check(tmp_path, ts, [Node("GATHER", [0, 1], 2, ("GatherOptions", {"Axis": 2}))], 2)


def test_broadcast_to(tmp_path):
    ts = [_i32([1, 4, 3, 5]), T((1, 4, 3, 5), [], [], F32)]
    _check(tmp_path, ts, [Node("BROADCAST_TO", [0, 1], 2)], 2, shape=(1, 4, 1, 5))


def test_tile_against_numpy(tmp_path):
    """TILE (TFLite Micro registers no TILE: NumPy's np.tile, which TF Lite's kernel computes, is the oracle)."""
    model = oracle.write(Case("tile", [T(SHAPE, [], [], F32), _i32([1, 2, 1, 3]), T((1, 8, 6, 15), [], [], F32)],
                              [Node("TILE", [0, 1], 2)], 0, 2))
    x = np.random.default_rng(4).standard_normal((2, *SHAPE)).astype(np.float32)
    got = _translated(tmp_path, model, x)
    assert np.array_equal(got, np.stack([np.tile(xi, (1, 2, 1, 3)).reshape(-1) for xi in x]))


def test_a_class_token_broadcast_to_a_shape_computed_at_run_time_folds(tmp_path):
    """keras.io's ViT class token, batch None: BROADCAST_TO(token, PACK(SHAPE(x)[0], 1, 5)), CONCATENATION before
    the tokens, plus an ADD of a FILL of SHAPE(the concatenation) (a recurrent layer's zero state of a run-time
    batch). The shape arithmetic folds at build time: no SHAPE, PACK or FILL is left in the ONNX model. (TFLite
    Micro cannot run the file: its BROADCAST_TO takes only a constant shape; NumPy is the oracle.)"""
    token = np.linspace(-1, 1, 5, dtype=np.float32).reshape(1, 1, 5)
    ts = [T((1, 4, 5), [], [], F32), T((3,), [], [], I32), _i32([0]), _i32([1]), _i32([1]),       # 0-4
          T((), [], [], I32), _i32(1), _i32(5), T((3,), [], [], I32),                                 # 5-8
          T((1, 1, 5), [], [], F32, data=token), T((1, 1, 5), [], [], F32), T((1, 5, 5), [], [], F32),  # 9-11
          T((), [], [], F32, data=np.array(0.5, np.float32)), T((1, 5, 5), [], [], F32),             # 12-13
          T((1, 5, 5), [], [], F32), T((3,), [], [], I32)]                                           # 14-15
    nodes = [Node("SHAPE", [0], 1, ("ShapeOptions", {"OutType": I32})),
             Node("STRIDED_SLICE", [1, 2, 3, 4], 5, ("StridedSliceOptions", {"ShrinkAxisMask": 1})),
             Node("PACK", [5, 6, 7], 8, ("PackOptions", {"ValuesCount": 3, "Axis": 0})),
             Node("BROADCAST_TO", [9, 8], 10),
             Node("CONCATENATION", [10, 0], 11, ("ConcatenationOptions", {"Axis": 1, "FusedActivationFunction": 0})),
             Node("SHAPE", [11], 15, ("ShapeOptions", {"OutType": I32})),
             Node("FILL", [15, 12], 13),
             Node("ADD", [11, 13], 14, ("AddOptions", {"FusedActivationFunction": 0}))]
    model = oracle.write(Case("token", ts, nodes, 0, 14))
    x = np.random.default_rng(6).standard_normal((3, 1, 4, 5)).astype(np.float32)
    got = _translated(tmp_path, model, x)
    want = np.stack([(np.concatenate([token, xi], 1) + np.float32(0.5)).reshape(-1) for xi in x])
    assert np.array_equal(got, want)
    kinds = {n.op_type for n in tflite_float.to_onnx(tmp_path / "m.tflite").graph.node}
    assert kinds == {"Concat", "Add"}, kinds


def test_what_cannot_be_expressed_is_named_with_its_reason(tmp_path):
    """A STRIDED_SLICE with an ellipsis mask and a GATHER with batch_dims: each named, why, in the one line."""
    ts = [T(SHAPE, [], [], F32), _i32([0, 1]), _i32([1, 3]), _i32([1, 1]), T((1, 4, 6, 2), [], [], F32),
          _i32([[1], [0]]), T((1, 4, 6, 1), [], [], F32)]
    nodes = [Node("STRIDED_SLICE", [0, 1, 2, 3], 4, ("StridedSliceOptions", {"EllipsisMask": 1})),
             Node("GATHER", [0, 5], 6, ("GatherOptions", {"Axis": 3, "BatchDims": 1}))]
    path = tmp_path / "m.tflite"
    path.write_bytes(oracle.write(Case("two", ts, nodes, 0, [4, 6])))
    with pytest.raises(EdgecError) as e:
        tflite_float.to_onnx(path)
    line = str(e.value)
    assert "\n" not in line and "2 operator(s)" in line, line
    assert "STRIDED_SLICE (operator #0: an ellipsis or new-axis mask)" in line, line
    assert "GATHER (operator #1: batch_dims 1)" in line, line


def test_tf_s_own_converter_file_translates_to_what_tf_lite_computes(tmp_path):
    """tests/data/float_tflite/keras_parts_float32.tflite (scripts/corpus/export_tf_float.py: tf.split, a split
    with sizes, strided and reversed slices, tf.gather, unstack / stack, a nearest resize, as TensorFlow 2.21's
    TFLiteConverter writes them): the translation's 9 outputs equal TF Lite's float interpreter's."""
    from pathlib import Path

    data = Path(__file__).parent / "data" / "float_tflite"
    o = np.load(data / "keras_parts_float32_oracle.npz")
    got = _translated(tmp_path, (data / "keras_parts_float32.tflite").read_bytes(), o["x"][:, None])
    assert got.shape == o["y"].shape and np.array_equal(got, o["y"])


def test_reverse_v2(tmp_path):
    """REVERSE_V2 along the width (a Bidirectional layer's backward pass)."""
    ts = [_i32([2]), T(SHAPE, [], [], F32)]
    _check(tmp_path, ts, [Node("REVERSE_V2", [0, 1], 2)], 2)


def test_tile_multiples_computed_from_the_input_shape_fold(tmp_path):
    """TILE's multiples [1, 2, 2, 1] computed from SHAPE(x) = [1, 2, 3, 1] as CONCATENATION([1], GATHER(shape, [1]),
    FLOOR_DIV(REDUCE_PROD(shape, keepdims), [3]), [1]): folded at build time, the model one ONNX Tile."""
    shape = (1, 2, 3, 1)
    ts = [T(shape, [], [], F32), T((4,), [], [], I32), _i32([1]), T((1,), [], [], I32), _i32([0]),
          T((1,), [], [], I32), _i32([3]), T((1,), [], [], I32), T((4,), [], [], I32), T((1, 4, 6, 1), [], [], F32)]
    nodes = [Node("SHAPE", [0], 1, ("ShapeOptions", {"OutType": I32})),
             Node("GATHER", [1, 2], 3, ("GatherOptions", {"Axis": 0})),
             Node("REDUCE_PROD", [1, 4], 5, ("ReducerOptions", {"KeepDims": True})),
             Node("FLOOR_DIV", [5, 6], 7),
             Node("CONCATENATION", [2, 3, 7, 2], 8, ("ConcatenationOptions", {"Axis": 0})),
             Node("TILE", [0, 8], 9)]
    model = oracle.write(Case("tile", ts, nodes, 0, 9))
    x = np.random.default_rng(5).standard_normal((2, *shape)).astype(np.float32)
    got = _translated(tmp_path, model, x)
    assert np.array_equal(got, np.stack([np.tile(xi, (1, 2, 2, 1)).reshape(-1) for xi in x]))
    assert [n.op_type for n in tflite_float.to_onnx(tmp_path / "m.tflite").graph.node] == ["Tile"]
