"""Each input and output of a model with several, sent and read over the bench's serial link in its own type and
byte size (edgec/ports.py `pack`, `sample_bytes`, `output_parts`, `typed_input`): a .tflite with an int8 input, an
int32 index input and a uint8 input, and an int16, an int8 and a uint8 output (GATHER at run-time indices, then
QUANTIZE int8 -> int16 and int8 -> uint8; QUANTIZE uint8 -> int8), benched end to end on the host board through
`edgec bench --data` and edgec.testing.ModelDevice, bit-exact with edgec's reference and TFLite Micro's
interpreter. Before, the link sent the packed inputs widened to int32 (116 bytes for the device's 38) and
ModelDevice cast every input to int8; an int16 port beside others was refused at import. A data file whose int32
ids have fractions is one line naming the input; clipped inputs are named with the range they take. The sweep
adds the emulated Cortex-M4 and --dataset-in-flash (an int16 input in the images, a uint8 output read back)."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import tflite_oracle as oracle
from tflite_oracle import INT32, Case, Node, T
from edgec import api, ports
from edgec.errors import EdgecError
from edgec.frontend import tflite as importer
from edgec.quant import reference

INT16, UINT8 = 7, 3
N = 6


def typed_case() -> Case:
    """feat int8 [1,5,4], ids int32 [1,3], raw uint8 [1,6] in (tensors t0, t1, t2); out: emb int16 [1,3,4] (t4:
    feat's rows at ids, QUANTIZE to int16), raw8 int8 [1,6] (t5: QUANTIZE of raw) and embu uint8 [1,3,4] (t6: the
    rows QUANTIZEd to uint8)."""
    tensors = [T((1, 5, 4), [0.05], [3]), T((1, 3), [], [], INT32), T((1, 6), [0.02], [128], UINT8),
               T((1, 3, 4), [0.05], [3]), T((1, 3, 4), [0.001], [0], INT16), T((1, 6), [0.03], [-5]),
               T((1, 3, 4), [0.06], [120], UINT8)]
    nodes = [Node("GATHER", [0, 1], 3, ("GatherOptions", {"Axis": 1, "BatchDims": 1})),
             Node("QUANTIZE", [3], 4), Node("QUANTIZE", [2], 5), Node("QUANTIZE", [3], 6)]
    return Case("typed", tensors, nodes, [0, 1, 2], [4, 5, 6])


def integer_samples(seed: int = 0) -> dict[str, np.ndarray]:
    """N samples of each input in its own type; the first holds each type's ends."""
    rng = np.random.default_rng(seed)
    x = {"t0": rng.integers(-128, 128, (N, 5, 4)).astype(np.int8), "t1": rng.integers(0, 5, (N, 3)).astype(np.int32),
         "t2": rng.integers(0, 256, (N, 6)).astype(np.uint8)}
    x["t0"][0, 0, :2], x["t1"][0, :2], x["t2"][0, :2] = (-128, 127), (0, 4), (0, 255)
    return x


def real_values(graph, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """--data's convention: real values, (x_q - zero point) * scale, which edgec quantizes back to x_q."""
    out = {}
    for p in ports.inputs(graph):
        t = graph.tensors[p.tensor]
        out[f"x_{p.name}"] = ((x[p.name].astype(np.float64) - t.zero_point) * np.float32(t.scale)).astype(np.float32)
    return out


def check_tflm(report: dict) -> None:
    """The reference agrees with TFLite Micro's interpreter on every sample (where it is installed: CI needs it)."""
    if importlib.util.find_spec("tflite_micro") is not None:
        assert report["tflite"]["reference_vs_interpreter"] == 1.0
    elif os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter) is not installed", pytrace=False)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("typed")
    path = d / "typed.tflite"
    path.write_bytes(oracle.write(typed_case()))
    return path, importer.load(path, "typed")


def test_each_input_goes_on_the_link_in_its_own_type_and_byte_size(model):
    _, g = model
    x = integer_samples()
    xq = ports.pack(g, [x[p.name].reshape(N, -1) for p in ports.inputs(g)])
    assert xq.shape == (N, 20 + 3 + 6)
    raw = ports.sample_bytes(g, xq[0])
    assert len(raw) == 20 + 4 * 3 + 6 == g.tensors[g.inputs[0]].nbytes + sum(
        g.tensors[t].nbytes for t in g.inputs[1:])
    assert raw[:20] == x["t0"][0].tobytes()
    assert raw[20:32] == x["t1"][0].astype("<i4").tobytes()
    assert raw[32:] == x["t2"][0].tobytes()             # uint8 255 is the byte 0xff, not -1 widened
    with pytest.raises(EdgecError, match=r"has 28 values; the inputs \(t0, t1, t2\) take 29"):
        ports.sample_bytes(g, xq[0][:-1])


def test_outputs_come_back_each_in_its_own_type(model):
    _, g = model
    x = integer_samples()
    xq = ports.pack(g, [x[p.name].reshape(N, -1) for p in ports.inputs(g)])
    y = reference.run_sequence(g, xq)
    raw = ports.output_bytes(g, y)
    assert raw.shape == (N, 24 + 6 + 12) and raw.dtype == np.uint8
    parts = ports.output_parts(g, raw)
    emb, raw8, embu = (parts[t] for t in g.outputs)
    assert emb.dtype == np.int16 and emb.shape == (N, 3, 4) and raw8.dtype == np.int8 and raw8.shape == (N, 6)
    assert embu.dtype == np.uint8 and embu.shape == (N, 3, 4) and embu.max() > 127      # not -1 widened
    assert np.array_equal(emb.reshape(N, -1), y[:, :12]) and np.array_equal(raw8, y[:, 12:18])
    assert np.array_equal(embu.reshape(N, -1), y[:, 18:].astype(np.uint8))


def test_given_integers_are_taken_in_the_inputs_type_or_refused_in_one_line(model):
    _, g = model
    ids, raw = ports.inputs(g)[1], ports.inputs(g)[2]
    assert ports.typed_input(g, ids, np.array([[0, 4, 2]])).dtype == np.int32
    assert ports.typed_input(g, raw, np.array([[0, 255]])).tolist() == [[0, 255]]
    assert ports.typed_input(g, raw, np.array([[-2.56, 2.54]], np.float32)).tolist() == [[0, 255]]
    with pytest.raises(EdgecError, match=r"input t2 is uint8: the given integers -1\.\.3 do not fit it; pass uint8 "
                                         r"values \(0\.\.255\), or floats to be quantized"):
        ports.typed_input(g, raw, np.array([[-1, 3]]))


def test_fractional_token_ids_in_a_data_file_are_one_line(model, tmp_path):
    _, g = model
    x = real_values(g, integer_samples())
    ports.check_whole(g, np.concatenate([a.reshape(N, -1) for a in x.values()], axis=1), "d.npz")
    x["x_t1"] = x["x_t1"] + np.float32(0.5)
    with pytest.raises(EdgecError, match=r"d\.npz: x_t1\[0\] holds 0\.5, but input t1 is int32 \(token ids or "
                                         r"indices, taken as they are\): give whole numbers"):
        ports.check_whole(g, np.concatenate([a.reshape(N, -1) for a in x.values()], axis=1), "d.npz")


def test_clipped_inputs_are_named_with_the_range_they_take(model):
    _, g = model
    x = real_values(g, integer_samples())
    x["x_t2"][2, 0] = 3.0                                   # beyond uint8 255 at scale 0.02, zero point 128
    packed = np.concatenate([a.reshape(N, -1) for a in x.values()], axis=1)
    by_input = ports.saturated_by_input(g, packed)
    assert {k: np.flatnonzero(v).tolist() for k, v in by_input.items()} == {"t0": [], "t1": [], "t2": [2]}
    assert ports.saturated(g, packed).tolist() == [False, False, True, False, False, False]
    assert ports.input_range(g, ports.inputs(g)[2]) == "-2.56..2.54 (uint8, scale 0.02, zero point 128)"


@pytest.mark.parametrize("board", ["host", pytest.param("qemu-cortex-m4", marks=pytest.mark.sweep)])
def test_bench_and_model_device_send_and_read_every_port_in_its_type(model, tmp_path, board):
    """End to end on the host board (the emulated Cortex-M4 in the sweep): the bench (with TFLite Micro's
    interpreter where installed) and ModelDevice."""
    path, g = model
    x = integer_samples()
    np.savez(tmp_path / "test.npz", **real_values(g, x))
    out = tmp_path / "b"
    rep = api.build(path, None, board, out)
    assert [(p["name"], p["dtype"], p["bytes"]) for p in rep["ports"]["inputs"] + rep["ports"]["outputs"]] == [
        ("t0", "int8", 20), ("t1", "int32", 12), ("t2", "uint8", 6), ("t4", "int16", 24), ("t5", "int8", 6),
        ("t6", "uint8", 12)]
    r = api.bench(out, tmp_path / "test.npz", report_dir=None)
    assert r["samples"] == N and r["input_saturated_samples"] == 0 and r["task"] == "multi-output"
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert {o["agreement"]["device_vs_reference"] for o in r["outputs"].values()} == {1.0}
    check_tflm(r)
    from edgec.testing import ModelDevice
    with ModelDevice(out) as dev:
        one = {k: v[0] for k, v in x.items()}
        got, want = dev.run(one), dev.reference(one)
        floats = dev.run({k[2:]: v[0] for k, v in real_values(g, x).items()})
        with pytest.raises(EdgecError, match="input t1 is int32: the given integers"):
            dev.run(dict(one, t1=np.array([0, 1, 1 << 40])))
    assert got.int8["t4"].dtype == np.int16 and got.int8["t4"].shape == (3, 4) and got.int8["t5"].dtype == np.int8
    assert got.int8["t6"].dtype == np.uint8 and got.int8["t6"].shape == (3, 4)
    for name in ("t4", "t5", "t6"):
        assert np.array_equal(got.int8[name], want.int8[name]) and np.array_equal(floats.int8[name], got.int8[name])
    emb = (x["t0"][0][x["t1"][0]].astype(np.int64) - 3) * 0.05          # feat's rows at the ids, in real values
    assert np.allclose(got.float["t4"], emb, atol=0.0006)               # one int16 step (0.001) / 2 and rounding
    assert np.allclose(got.float["t6"], np.clip(emb, -7.2, 8.1), atol=0.031)    # uint8: half a step of 0.06


@pytest.mark.sweep
def test_dataset_in_flash_holds_an_int16_input_and_reads_a_uint8_output(tmp_path):
    """--dataset-in-flash on the host board: an int16 input [1, 8] (QUANTIZE to int8, then to a uint8 output): the
    images hold each input's 16 bytes (they held its 8 values' count as the input size, which the firmware refused)
    and the outputs are read as uint8, agreeing with the reference and with the bench over the link."""
    case = Case("one16", [T((1, 8), [0.001], [0], INT16), T((1, 8), [0.02], [-3]), T((1, 8), [0.03], [120], UINT8)],
                [Node("QUANTIZE", [0], 1), Node("QUANTIZE", [1], 2)], 0, 2)
    path = tmp_path / "one16.tflite"
    path.write_bytes(oracle.write(case))
    xq = np.random.default_rng(1).integers(-32768, 32768, (5, 8))
    xq[0, :2] = (-32768, 32767)
    np.savez(tmp_path / "x.npz", x=(xq * np.float32(0.001)).astype(np.float32))
    out = tmp_path / "b"
    api.build(path, None, "host", out)
    flash = api.bench(out, tmp_path / "x.npz", dataset_in_flash=True, report_dir=None)
    link = api.bench(out, tmp_path / "x.npz", report_dir=None)
    assert flash["link"]["input_bytes_in_images"] == 5 * 16
    for r in (flash, link):
        assert r["input_saturated_samples"] == 0 and r["agreement"]["device_vs_reference"] == 1.0
        check_tflm(r)
