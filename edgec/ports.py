"""A model's inputs and outputs by name, and the packed layout that carries several of them as one vector.

A model with one input and one output is fed and read as it always was: an array in the ONNX input's
shape, an array in the output's shape.  A model with several inputs or outputs (multi-task heads, a
detector's box and score heads, a stateful model that takes its state back) keeps each by its ONNX name
(`Port`); where one vector is needed (the data set's samples, the serial link, the bench's comparisons)
the ports are *packed*: each flattened in its ONNX layout and concatenated in the ONNX model's order.
A packed int8 sample is what the bench firmware's link writes into the inputs, one after the other, and
reads back from the outputs (runtime_c/harness/edgec_link.c, `edgec_link_part`).

Data files: `x_<input name>` / `y_<output name>` for several inputs/outputs; `x` / `y` for one.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from edgec.data import Dataset, Samples, load_dataset, load_named, open_named_samples, open_samples
from edgec.limits import DEFAULT as DEFAULT_MEMORY_LIMIT
from edgec.errors import EdgecError
from edgec.ir import DTYPES, Graph
from edgec.fixedpoint.scheme import dequantize, quantize_input
from edgec.templating import c_identifier


@dataclass(frozen=True)
class Port:
    """One input or output of the model."""

    name: str                     # ONNX value name
    tensor: str                   # the graph tensor holding it
    onnx_shape: tuple[int, ...]   # batch included
    start: int                    # first element in the packed vector
    size: int                     # elements

    @property
    def c_name(self) -> str:
        """The name's C identifier part (NAME_input_<c_name>()); the names the single-I/O API already uses
        (NAME_input_scale, NAME_input_zero_point) get `_port` added."""
        ident = c_identifier(self.name)
        return f"{ident}_port" if ident in ("scale", "zero_point") else ident

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """One sample's shape: the shape without its batch axis of 1; a first axis of another length is no batch
        (a .tflite port of shape [8]): the whole tensor is one sample, as the C code reads it."""
        return sample_shape(self.onnx_shape)

    def of(self, packed: np.ndarray) -> np.ndarray:
        """This port's part of packed samples (N, total) -> (N, *sample shape)."""
        packed = np.asarray(packed)
        return packed[:, self.start:self.start + self.size].reshape(len(packed), *self.sample_shape)


def sample_shape(shape) -> tuple[int, ...]:
    """Port.sample_shape."""
    shape = tuple(shape)
    return shape[1:] if shape[:1] == (1,) else shape


def multi(graph: Graph) -> bool:
    """Whether the model has more than one input or more than one output."""
    return bool(graph.more_inputs or graph.more_outputs)


def _ports(graph: Graph, tensors: list[str]) -> list[Port]:
    out, start = [], 0
    for t in tensors:
        shape = tuple(graph.onnx_shape(t))
        size = int(np.prod(sample_shape(shape), dtype=np.int64))
        name = graph.port_names[t] if t in graph.port_names else graph.tensors[t].source   # (lazily: a named
        out.append(Port(name, t, shape, start, size))                                        # port needs no tensor)
        start += size
    return out


def inputs(graph: Graph) -> list[Port]:
    return _ports(graph, graph.inputs)


def outputs(graph: Graph) -> list[Port]:
    return _ports(graph, graph.outputs)


def packed_size(ports: list[Port]) -> int:
    return sum(p.size for p in ports)


def feed(graph: Graph, x: np.ndarray, dtype=None) -> dict[str, np.ndarray]:
    """{input tensor: array in its shape} for one sample: x is the input itself (one input) or the packed
    inputs (several)."""
    x = np.asarray(x) if dtype is None else np.asarray(x, dtype)
    if not graph.more_inputs:
        if graph.input_perm:        # host data in the ONNX layout, the input tensor channels-last
            x = x.reshape(graph.input_onnx_shape).transpose(graph.input_perm)
        return {graph.input: x.reshape(graph.tensors[graph.input].shape)}
    flat = x.reshape(-1)
    ports = inputs(graph)
    if flat.size != packed_size(ports):
        raise EdgecError(f"a sample of the model's {len(ports)} inputs has {flat.size} values; the inputs "
                         f"({', '.join(p.name for p in ports)}) take {packed_size(ports)}")
    return {p.tensor: flat[p.start:p.start + p.size].reshape(graph.tensors[p.tensor].shape) for p in ports}


def device_order(graph: Graph, xq: np.ndarray) -> np.ndarray:
    """Quantized samples (N, *ONNX input shape), or one sample, in the order the device's input takes them: as
    they are, or channels-last for an input taken so (--input-layout nhwc: Graph.input_perm)."""
    if not graph.input_perm:
        return xq
    one = xq.size == graph.tensors[graph.input].size
    batch = xq.reshape((-1, *graph.input_onnx_shape[1:]))
    moved = np.ascontiguousarray(batch.transpose(graph.input_perm))
    return moved.reshape(graph.tensors[graph.input].shape) if one else moved


def result(graph: Graph, env: dict[str, np.ndarray]) -> np.ndarray:
    """The output of one run (ONNX layout) or, with several outputs, the packed outputs."""
    if not graph.more_outputs:
        return env[graph.output].reshape(graph.output_onnx_shape)
    return np.concatenate([env[t].reshape(-1) for t in graph.outputs])


def quantize_inputs(graph: Graph, x: np.ndarray) -> np.ndarray:
    """Float samples (N, *input shape) or packed (N, total) -> int8 (a uint8 input: uint8; packed: its bytes as
    int8), each input with its own scale and zero point (the host's rounding: NumPy's half to even)."""
    if not graph.more_inputs:
        return quantize_input(graph.tensors[graph.input], x)
    return pack(graph, [quantize_input(graph.tensors[p.tensor], p.of(x)) for p in inputs(graph)])


def pack(graph: Graph, parts: list[np.ndarray]) -> np.ndarray:
    """Integer samples of each input, one array (N, ...) per input in the model's order, each in its own type ->
    the packed samples (N, total) the reference and sample_bytes take: int8 while every input is 8-bit (a uint8
    input's values as their int8 bytes), else the wider type that holds them all (an int32 index beside int8)."""
    n = len(parts[0])
    if not graph.more_inputs:          # the one input's values as they are (quantize_inputs')
        return np.asarray(parts[0]).reshape(n, -1)
    return np.concatenate([_bytes(np.asarray(q)).reshape(n, -1) for q in parts], axis=1)


def typed_input(graph: Graph, port: Port, a) -> np.ndarray:
    """Samples of one input in the input's own type (int8, uint8, int16, int32): an integer array as it is (already
    quantized; one line naming the input when its values do not fit the type), a float one quantized with the
    input's scale and zero point (edgec.testing's convention, and benchmarks/peers.py's)."""
    t, a = graph.tensors[port.tensor], np.asarray(a)
    if not np.issubdtype(a.dtype, np.integer):
        return quantize_input(t, a)
    info = np.iinfo(DTYPES[t.dtype])
    if a.size and (a.min() < info.min or a.max() > info.max):
        raise EdgecError(f"input {port.name} is {t.dtype}: the given integers {a.min()}..{a.max()} do not fit it; "
                         f"pass {t.dtype} values ({info.min}..{info.max}), or floats to be quantized")
    return a.astype(DTYPES[t.dtype])


def sample_bytes(graph: Graph, xq: np.ndarray) -> bytes:
    """One quantized sample (the input's values, or several inputs packed) -> the bytes the device's input takes
    over the link and in its buffers: each input in its own type and byte size (int8, uint8, int16, int32; little
    endian, as every edgec target), one after the other in the model's order, the one input in its device order
    (device_order). The one home of the typed input protocol: the bench, edgec.testing and benchmarks/peers.py."""
    if not graph.more_inputs:
        t = graph.tensors[graph.input]
        return np.asarray(device_order(graph, np.asarray(xq))).astype(
            np.dtype(DTYPES[t.dtype]).newbyteorder("<")).tobytes()
    flat = np.asarray(xq).reshape(-1)
    if flat.size != packed_size(inputs(graph)):
        raise EdgecError(f"a sample of the model's {len(graph.inputs)} inputs has {flat.size} values; the inputs "
                         f"({', '.join(p.name for p in inputs(graph))}) take {packed_size(inputs(graph))}")
    return b"".join(flat[p.start:p.start + p.size].astype(np.dtype(DTYPES[graph.tensors[p.tensor].dtype])
                                                          .newbyteorder("<")).tobytes() for p in inputs(graph))


def sample_rows(graph: Graph, xq: np.ndarray) -> np.ndarray:
    """Quantized samples (N, ...) -> their sample_bytes (N, bytes) uint8: what a dataset image holds per input."""
    return np.frombuffer(b"".join(sample_bytes(graph, x) for x in xq), np.uint8).reshape(len(xq), -1)


def saturated(graph: Graph, x: np.ndarray) -> np.ndarray:
    """Per sample: True where some input value lies beyond the range its input's scale and zero point can
    hold (quantize_inputs clips it to the integer type's end, and the int8 reference sees the clipped value
    too: agreement says nothing about such samples)."""
    out = np.zeros(len(x), bool)
    for rows in saturated_by_input(graph, x).values():
        out |= rows
    return out


def saturated_by_input(graph: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """saturated, input by input: {input name: per sample, True where a value of that input is clipped}."""
    out = {}
    for p in (inputs(graph) if graph.more_inputs else [None]):
        t = graph.tensors[graph.input if p is None else p.tensor]
        v = np.asarray(x if p is None else p.of(x))
        info = np.iinfo(DTYPES[t.dtype])
        with np.errstate(invalid="ignore", over="ignore"):
            q = np.round(v / t.scale) + t.zero_point
        name = inputs(graph)[0].name if p is None else p.name
        out[name] = ((q < info.min) | (q > info.max)).reshape(len(x), -1).any(axis=1)
    return out


def input_range(graph: Graph, port: Port) -> str:
    """The real values an input takes ("-2.56..2.54 (uint8, scale 0.02, zero point 128)"), for messages."""
    t = graph.tensors[port.tensor]
    info = np.iinfo(DTYPES[t.dtype])
    lo, hi = ((v - t.zero_point) * t.scale for v in (info.min, info.max))
    return f"{lo:.4g}..{hi:.4g} ({t.dtype}, scale {t.scale:.4g}, zero point {t.zero_point})"


def check_whole(graph: Graph, x: np.ndarray, path) -> None:
    """An int32 input read as it is (scale 1, zero point 0: token ids, indices) takes whole numbers only: a data
    file whose values for it have fractions is one line naming the input, not ids rounded without a word."""
    for p in inputs(graph):
        t = graph.tensors[p.tensor]
        if t.dtype != "int32" or (t.scale, t.zero_point) != (1.0, 0):
            continue
        v = np.asarray(x if not graph.more_inputs else p.of(x)).reshape(len(x), -1)
        bad = np.argwhere(v != np.round(v))
        if bad.size:
            i, j = (int(k) for k in bad[0])
            key = f"x_{p.name}" if graph.more_inputs else "x"
            raise EdgecError(f"{path}: {key}[{i}] holds {v[i, j]:g}, but input {p.name} is int32 (token ids or "
                             f"indices, taken as they are): give whole numbers")


def _bytes(q: np.ndarray) -> np.ndarray:
    """A uint8 input's values as the int8 bytes of the packed vector (the same bytes)."""
    return q.view(np.int8) if q.dtype == np.uint8 else q


def dequantize_outputs(graph: Graph, q: np.ndarray) -> np.ndarray:
    """Integer outputs (N, ...) or packed (N, total) -> float, each output with its own scale and zero point."""
    if not graph.more_outputs:
        return dequantize(graph.tensors[graph.output], q)
    q = np.asarray(q).reshape(len(q), -1)
    return np.concatenate([dequantize(graph.tensors[p.tensor], q[:, p.start:p.start + p.size])
                           for p in outputs(graph)], axis=1)


def mixed_outputs(graph: Graph) -> bool:
    """Whether the outputs have different number types (a detector's int8 boxes and scores beside its float32
    selection): their packed samples are then compared and carried as bytes (output_bytes)."""
    return len({graph.tensors[t].dtype for t in graph.outputs}) > 1


def output_bytes(graph: Graph, packed: np.ndarray) -> np.ndarray:
    """Packed output values (N, total), as the reference gives them, -> the bytes the device's link sends
    (N, bytes): each output in its own number type, one after the other."""
    packed = np.asarray(packed).reshape(len(packed), -1)
    parts = [np.ascontiguousarray(p.of(packed).reshape(len(packed), -1).astype(DTYPES[graph.tensors[p.tensor].dtype]))
             for p in outputs(graph)]
    return np.concatenate([q.view(np.uint8).reshape(len(packed), -1) for q in parts], axis=1)


def output_parts(graph: Graph, raw: np.ndarray) -> dict[str, np.ndarray]:
    """The link's output bytes (N, bytes) -> {output tensor: its values (N, *Port.sample_shape)}, each in
    its own number type."""
    raw = np.ascontiguousarray(raw, np.uint8).reshape(len(raw), -1)
    out, at = {}, 0
    for p in outputs(graph):
        dtype = np.dtype(DTYPES[graph.tensors[p.tensor].dtype])
        n = p.size * dtype.itemsize
        out[p.tensor] = np.ascontiguousarray(raw[:, at:at + n]).view(dtype).reshape(len(raw), *p.sample_shape)
        at += n
    return out


def check_names(ports: list[Port], what: str) -> None:
    """Two names that become the same C identifier would declare one function twice."""
    seen: dict[str, str] = {}
    for p in ports:
        if p.c_name in seen:
            raise EdgecError(f"{what}s '{seen[p.c_name]}' and '{p.name}' both become the C name '{p.c_name}'; "
                             f"rename one of them in the ONNX model")
        seen[p.c_name] = p.name


def c_number_type(dtype: str) -> dict:
    """The float boundary helpers' name suffix and C type for a port of `dtype` (edgec_nn.h: edgec_quantize_f32_<suffix>,
    edgec_dequantize_<suffix>_f32; a float32 port's "dequantization" is a copy)."""
    return {"int8": {"suffix": "s8", "ctype": "int8_t"}, "uint8": {"suffix": "u8", "ctype": "uint8_t"},
            "int16": {"suffix": "s16", "ctype": "int16_t"}, "float32": {"suffix": "f32", "ctype": "float"},
            "int32": {"suffix": "s32", "ctype": "int32_t"}, "bool": {"suffix": "b8", "ctype": "uint8_t"}}[dtype]


def c_typed(pointer: str, dtype: str) -> str:
    """The C expression of a port's place (an `int8_t *` into the arena or a buffer) as a pointer to the port's own
    C type (c_number_type): the int8 one as it is, the others through `void *` (every buffer is aligned for its
    type: the planner's alignment, NAME_ARENA_ALIGN for the caller's)."""
    return pointer if dtype == "int8" else f"({c_number_type(dtype)['ctype']} *)(void *)({pointer})"


def c_context(graph: Graph, pointer) -> dict | None:
    """What the C templates declare for each input and output of a model with several (None: one of each);
    pointer(tensor) is the C expression of a tensor's place in the arena."""
    if not multi(graph):
        return None

    def one(p: Port) -> dict:
        t = graph.tensors[p.tensor]
        return {"c": p.c_name, "C": p.c_name.upper(), "name": p.name, "bytes": t.nbytes, "dtype": t.dtype,
                "scale": repr(float(t.scale)), "zero_point": t.zero_point, "shape": list(p.onnx_shape),
                "pointer": pointer(p.tensor), "typed_pointer": c_typed(pointer(p.tensor), t.dtype),
                "elements": t.size, "q": c_number_type(t.dtype), "scale_value": float(t.scale)}
    ins, outs = inputs(graph), outputs(graph)
    check_names(ins, "input")
    check_names(outs, "output")
    return {"inputs": [one(p) for p in ins], "outputs": [one(p) for p in outs]}


def describe(graph: Graph) -> dict:
    """Every input and output with its quantization, for build.json, the summary and the exports."""
    def one(p: Port) -> dict:
        t = graph.tensors[p.tensor]
        return {"name": p.name, "c_name": p.c_name, "shape": list(p.onnx_shape), "dtype": t.dtype,
                "bytes": t.nbytes, "scale": t.scale, "zero_point": t.zero_point, "offset": p.start}
    return {"inputs": [one(p) for p in inputs(graph)], "outputs": [one(p) for p in outputs(graph)]}


# ---- data files ----

def load_data(path, graph: Graph, limit: int | None = None, float_labels: bool = False,
              labels: bool = True, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Dataset:
    """The data file of this model: `x` (one input) or `x_<name>` for each input, packed (several); with
    labels, `y` or `y_<name>` of the outputs that have them (float targets too with float_labels)."""
    if not multi(graph):
        return load_dataset(path, graph.input_onnx_shape, limit, float_labels=float_labels, memory_limit=memory_limit)
    return load_named(path, [(p.name, p.onnx_shape) for p in inputs(graph)],
                      [p.name for p in outputs(graph)] if labels else [], limit, float_labels=float_labels,
                      memory_limit=memory_limit)


def open_calibration(path, graph: Graph, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Samples:
    """The calibration samples of this model, the file opened once (edgec/data.py): streamed from it (one
    input), or loaded and packed (several)."""
    if not multi(graph):
        return open_samples(path, graph.input_onnx_shape, memory_limit)
    return open_named_samples(path, [(p.name, p.onnx_shape) for p in inputs(graph)], memory_limit)


def output_view(graph: Graph, port: Port) -> Graph:
    """The graph as if `port` were its only output (its ops up to the one that writes it): what the bench's
    per-output quality (task, classes) looks at."""
    last = max((i for i, op in enumerate(graph.ops) if op.output == port.tensor), default=len(graph.ops) - 1)
    return dataclasses.replace(graph, output=port.tensor, output_onnx_shape=port.onnx_shape, more_outputs=(),
                               ops=graph.ops[:last + 1])


# ---- a stateful model's state: an output fed back as an input ----

def state_pairs(graph: Graph, specs: tuple[str, ...]) -> list[tuple[Port, Port]]:
    """--state OUTPUT=INPUT: (output, input) pairs whose bytes the caller copies from one to the other."""
    outs, ins = {p.name: p for p in outputs(graph)}, {p.name: p for p in inputs(graph)}
    pairs = []
    for spec in specs:
        out, sep, inp = spec.partition("=")
        if not sep or out not in outs or inp not in ins:
            raise EdgecError(f"--state {spec}: expected OUTPUT=INPUT naming an output and an input of the model "
                             f"(outputs: {', '.join(outs)}; inputs: {', '.join(ins)})")
        if outs[out].onnx_shape != ins[inp].onnx_shape:
            raise EdgecError(f"--state {spec}: output {out} is {list(outs[out].onnx_shape)} but input {inp} is "
                             f"{list(ins[inp].onnx_shape)}; a state goes back into an input of its own shape")
        pairs.append((outs[out], ins[inp]))
    return pairs


def tie_ranges(graph: Graph, ranges: dict, pairs: list[tuple[Port, Port]]) -> dict:
    """Each state output and its input calibrated to the union of their ranges, so both get one scale and zero
    point and the output's bytes can be copied into the input as they are."""
    ranges = dict(ranges)
    for out, inp in pairs:
        a, b = graph.tensors[out.tensor].source, graph.tensors[inp.tensor].source
        ranges[a] = ranges[b] = (min(ranges[a][0], ranges[b][0]), max(ranges[a][1], ranges[b][1]))
    return ranges


def check_tied(graph: Graph, pairs: list[tuple[Port, Port]]) -> None:
    for out, inp in pairs:
        a, b = graph.tensors[out.tensor], graph.tensors[inp.tensor]
        if (a.scale, a.zero_point, a.dtype) != (b.scale, b.zero_point, b.dtype):
            raise EdgecError(f"--state {out.name}={inp.name}: the operator writing {out.name} fixes its quantization "
                             f"(scale {a.scale:.6g}, zero point {a.zero_point}), which the input {inp.name} does not "
                             f"have (scale {b.scale:.6g}, zero point {b.zero_point}); requantize the state in your code "
                             "instead of naming it in --state")
