"""The input both engines of benchmarks/peers.py get: each input of the model in its own type and shape (int8, uint8,
int16, int32 token ids; several inputs each by its name), written as edgec's data file (float values that quantize
back to exactly those integers) and as the TFLM driver's .npz (x<i>: the integers in the input's type, which
../shared/peers' run_tflm.py copies into the input tensors as they are; a float input of the file: the same float
values, which its QUANTIZE maps to edgec's integers). edgec's bench then sends each input to the device in its own
type and byte size (edgec/ports.py `sample_bytes`, the one place that lays them out); integers given in a data file
are taken in the input's type by `ports.typed_input`, as edgec.testing takes them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgec import ports
from edgec.errors import EdgecError
from edgec.ir import DTYPES

SEED = 12345


def _first_row(arrays, graph) -> list[np.ndarray]:
    """Each input's first sample in its own type and shape (1, *shape) from a data file's arrays (x, x_int8, x_q as
    the corpus oracle's, or x_<name>): integer data as it is (refused where the input's type cannot hold it), float
    data quantized with the input's scale and zero point."""
    keys = [p.name for p in ports.inputs(graph)]
    if len(keys) == 1:
        key = next(k for k in ("x_int8", "x_q", "x", f"x_{keys[0]}") if k in arrays)
        given = [np.asarray(arrays[key][:1])]
    else:
        given = [np.asarray(arrays[f"x_{name}"][:1]) for name in keys]
    return [ports.typed_input(graph, p, x).reshape((1,) + tuple(p.onnx_shape[1:]))
            for p, x in zip(ports.inputs(graph), given)]


def _oracle(path: Path) -> Path | None:
    """The corpus's stored oracle beside a model (tests/corpus/<name>/oracle.npz, x_q its integer inputs)."""
    oracle = path.parent / "oracle.npz"
    return oracle if oracle.is_file() else None


def input_row(model, graph) -> list[np.ndarray]:
    """The input both engines get, one array per input in its own type (int8, uint8, int16, int32) and shape
    (1, *shape): the data file's first sample; without one, seeded pseudo-random values over each input's integer
    type (any value of a quantized input is an input). An int32 input (token ids, which index a table: most values
    are no input) takes the first sample of the corpus oracle beside the file, or needs a data file."""
    source = model.golden or model.data
    ids = [p.name for p in ports.inputs(graph) if graph.tensors[p.tensor].dtype == "int32"]
    if source is None and ids:
        source = _oracle(model.path)
        if source is None:
            raise EdgecError(f"input {ids[0]} of {model.path.name} is int32 (token ids?): random values are no input; "
                             "give a data file (a manifest's \"data\", or <stem>.npz beside the model)")
    if source is not None:
        with np.load(source) as arrays:
            return _first_row(arrays, graph)
    rng = np.random.default_rng(SEED)
    out = []
    for p in ports.inputs(graph):
        dtype = DTYPES[graph.tensors[p.tensor].dtype]
        info = np.iinfo(dtype)
        out.append(rng.integers(info.min, info.max + 1, (1, p.size)).astype(dtype)
                   .reshape((1,) + tuple(p.onnx_shape[1:])))
    return out


def float_inputs(tflite: Path) -> list[bool]:
    """Which graph inputs of the .tflite file are float32 (a QUANTIZE at the model's start, as MLCommons Tiny's
    ToyCar and TinyEngine's MCUNet files): TFLM is fed floats there, which its QUANTIZE maps to edgec's bytes."""
    import tflite as schema
    g = schema.Model.GetRootAsModel(tflite.read_bytes(), 0).Subgraphs(0)
    return [g.Tensors(g.Inputs(i)).Type() == schema.TensorType.FLOAT32 for i in range(g.InputsLength())]


def write_inputs(graph, xs: list[np.ndarray], folder: Path, floats_in: list[bool] | None = None) -> tuple[Path, Path]:
    """The same input for both (xs: input_row's arrays, one an input in its own type): edgec's data file (float
    values that quantize back to exactly these integers) and TFLM's .npz (x<i> in input order: the integers in the
    input's own type, which the driver copies into the tensor as they are, or for a float input of the file the
    same float values)."""
    floats, ints = {}, {}
    inputs = ports.inputs(graph)
    for i, (p, q) in enumerate(zip(inputs, xs)):
        t = graph.tensors[p.tensor]
        q = np.asarray(q).reshape((1,) + tuple(p.onnx_shape[1:]))
        f = ((q.astype(np.float64) - t.zero_point) * np.float32(t.scale)).astype(np.float32)
        floats["x" if len(inputs) == 1 else f"x_{p.name}"] = f
        ints[f"x{i}"] = f if floats_in and floats_in[i] else q
    edgec_data, tflm_data = folder / "edgec-input.npz", folder / "tflm-input.npz"
    np.savez(edgec_data, **floats)
    np.savez(tflm_data, **ints)
    if not np.array_equal(edgec_sample(graph, edgec_data).reshape(1, -1), ports.pack(graph, xs)):
        raise EdgecError(f"{edgec_data}: the float input does not quantize back to the chosen integers")
    return edgec_data, tflm_data


def edgec_sample(graph, data: Path) -> np.ndarray:
    """edgec's integer input from its data file, as its bench quantizes it (what its reference runs on)."""
    return ports.quantize_inputs(graph, ports.load_data(data, graph, labels=False).x)
