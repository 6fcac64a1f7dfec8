"""On-device tests in Python: a built model's device, one call per question (the pytest plugin,
edgec/pytest_plugin.py, hands these to tests; they work without pytest too).

    from edgec.testing import build_cached, ModelDevice
    folder = build_cached("model.onnx", "calib.npz", "qemu-cortex-m4", "builds/")
    with ModelDevice(folder) as dut:
        out = dut.run(x)                 # Output(int8=..., float=..., units=...): the device's answer
        ref = dut.reference(x)           # the same from edgec's NumPy integer reference (bit-exact contract)
        dut.float_model(x)               # the float ONNX model (onnxruntime)
        dut.latency(x)                   # Latency(units=..., unit="emulated instructions", ms=...)
        dut.profile(x)                   # per layer: name, kind, units, ms
        dut.report                       # build-report.json as a dict (memory, quantization, ...)

x is one sample, shaped like the model's input with or without the batch dimension of 1: float values are
quantized with the model's input scale, an integer array is taken as already quantized in the input's own type
(int8, uint8, int16, int32 token ids). A model with several inputs takes {input name: sample} and gives
{output name: array}; each input is sent and each output read in its own type (edgec/ports.py `sample_bytes`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgec import outputs, ports
from edgec.errors import EdgecError
from edgec.ir import DTYPES
from edgec.settings import Settings

CACHE_KEY = "edgec-cache-key.json"


@dataclass(frozen=True)
class Output:
    int8: np.ndarray           # quantized output (in the output's own type: int8, uint8, int16, int32), shaped like
                               # the model's output without the batch dimension
    float: np.ndarray          # the same dequantized with the output scale and zero point
    # (a model with several outputs: both are {output name: array}, each output with its own scale and zero point)
    units: float | None = None  # the device's time for this inference in the board's unit (None: reference)


@dataclass(frozen=True)
class Latency:
    units: float               # median over the repeats, in the board's unit
    unit: str                  # "cycles", "emulated instructions", "ns"
    ms: float | None           # the same in milliseconds where the board's unit converts (else None)


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _external_digests(model: Path) -> dict[str, str]:
    """The bytes of an ONNX model's external weight files (initializers stored beside the .onnx), by name."""
    if model.suffix.lower() != ".onnx":
        return {}
    import onnx
    try:
        proto = onnx.load(str(model), load_external_data=False)
    except Exception:                 # not loadable: the build names what is wrong with it
        return {}
    files = {}
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            name = next((e.value for e in t.external_data if e.key == "location"), "")
            path = model.parent / name
            files[name] = _digest(path) if path.is_file() else "missing"
    return files


def cache_key(model: str | Path, calib: str | Path, board: str, options: dict) -> str:
    """A hash of everything a build depends on: the model's and calibration set's bytes, the board (its
    profile's bytes when it is a file), the quantization options and the edgec version."""
    from edgec import __version__
    from edgec.targets.boards import load_board

    the_board = load_board(board)
    parts = {"model": _digest(Path(model)), "external": _external_digests(Path(model)),
             "calib": _digest(Path(calib)), "board": the_board.name,
             "board_file": _digest(Path(the_board.path)), "options": {k: repr(v) for k, v in sorted(options.items())},
             "edgec": __version__}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def build_cached(model: str | Path, calib: str | Path, board: str, build_root: str | Path, log=None,
                 settings: Settings | None = None, **options) -> Path:
    """The build folder for (model, calibration set, board, options) under build_root: built once, then
    reused by every later call (and session) with the same inputs. options: edgec.quant.ptq.QuantOptions fields;
    settings: the environment's (edgec/settings.py), read here when not given."""
    from edgec import api
    from edgec.pipeline import model_name
    from edgec.quant.ptq import QuantOptions

    for p, what in ((model, "model"), (calib, "calibration set")):
        if not Path(p).is_file():
            raise EdgecError(f"{what} {p} does not exist")
    try:
        quant = QuantOptions(**options)
    except TypeError as e:
        raise EdgecError(f"build options: {e}") from None
    key = cache_key(model, calib, board, options)
    folder = Path(build_root) / f"{model_name(Path(model))}-{board if '/' not in str(board) else Path(board).stem}-{key}"
    stamp = folder / CACHE_KEY
    if _stamped_key(stamp) == key:
        return folder
    api.build(model, calib, board, folder, log=log or (lambda _: None), options=quant,
              settings=settings or Settings.from_environment())
    outputs.add_entry(folder, CACHE_KEY)              # the stamp is edgec's too: the folder stays replaceable
    outputs.write_json(stamp, {"key": key}, what="build cache stamp")
    return folder


def _stamped_key(stamp: Path) -> str | None:
    """The key a build folder was made for; None when the stamp is missing or damaged (then: build again)."""
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    return data.get("key") if isinstance(data, dict) else None


class ModelDevice:
    """A build folder's firmware running (QEMU, host program) or a flashed real board at `port`, its link
    synchronised and checked to run this build's model."""

    def __init__(self, build_dir: str | Path, port: str | None = None, settings: Settings | None = None):
        from edgec.device.device import open_device
        from edgec.quant import artifact
        from edgec.targets.build_folder import check_hello, load_build

        self.build_dir = Path(build_dir)
        self.settings = settings or Settings.from_environment()     # (the float model's memory limit)
        self.report, self.board, firmware = load_build(self.build_dir)
        self.graph = artifact.load_graph(self.build_dir)
        self._onnx_model = None
        self.device = open_device(self.board, firmware, port)
        try:
            self.hello = self.device.link.hello()
            check_hello(self.hello, self.report, self.build_dir)
        except BaseException:
            self.device.close()
            raise

    # ---- inputs and outputs ----

    def quantize(self, x) -> np.ndarray:
        """One sample -> its quantized input, shaped like the model's input without the batch dimension, in the
        input's own type (int8, uint8, int16, int32). An integer array is taken as already quantized (its values
        must fit the input's type), a float one is quantized with the input's scale and zero point. A model with
        several inputs takes {input name: sample} and returns them packed (edgec/ports.py `pack`)."""
        if ports.multi(self.graph):
            return self._packed(x)
        x = np.asarray(x)
        shape = tuple(self.graph.input_onnx_shape[1:])
        if x.shape not in (shape, (1, *shape)):
            raise EdgecError(f"input shape {x.shape}: the model takes one sample shaped {shape} (or {(1, *shape)})")
        return ports.typed_input(self.graph, ports.inputs(self.graph)[0], x.reshape(shape))

    def _packed(self, x) -> np.ndarray:
        want = ports.inputs(self.graph)
        if not isinstance(x, dict) or set(x) != {p.name for p in want}:
            raise EdgecError(f"this model takes {{input name: sample}} for its inputs {', '.join(p.name for p in want)}; "
                             f"got {sorted(x) if isinstance(x, dict) else type(x).__name__}")
        parts = []
        for p in want:
            a = np.asarray(x[p.name])
            if a.size != p.size:
                raise EdgecError(f"input {p.name}: shape {a.shape}, the model takes one sample shaped {p.sample_shape}")
            parts.append(ports.typed_input(self.graph, p, a.reshape(1, -1)))
        return ports.pack(self.graph, parts)[0]

    def _output(self, parts: dict[str, np.ndarray], units=None) -> Output:
        """{output tensor: its values, in its own type} -> Output (by output name for a model with several)."""
        from edgec.fixedpoint import scheme

        def one(p: ports.Port):
            t = self.graph.tensors[p.tensor]
            q = np.asarray(parts[p.tensor]).astype(DTYPES[t.dtype]).reshape(p.sample_shape)
            return q, scheme.dequantize(t, q).astype(np.float32)
        outs = {p.name: one(p) for p in ports.outputs(self.graph)}
        if ports.multi(self.graph):
            return Output({k: v[0] for k, v in outs.items()}, {k: v[1] for k, v in outs.items()}, units)
        (q, f), = outs.values()
        return Output(q.reshape(self.graph.output_onnx_shape[1:]), f.reshape(self.graph.output_onnx_shape[1:]), units)

    def run(self, x) -> Output:
        """Run one sample on the device (each input sent and each output read in its own type): its quantized
        output, dequantized output and time."""
        r = self.device.link.run_checked(ports.sample_bytes(self.graph, self.quantize(x)))
        raw = np.frombuffer(r["output"], np.uint8)[None]
        return self._output({t: v[0] for t, v in ports.output_parts(self.graph, raw).items()},
                            self.board.ticks_to_units(int(r["ticks"])))

    def reference(self, x) -> Output:
        """edgec's NumPy integer reference for the same sample: the device must match it bit for bit."""
        from edgec.quant import reference

        y = np.asarray(reference.run(self.graph, self.quantize(x).reshape(-1))).reshape(1, -1)
        return self._output({p.tensor: p.of(y)[0] for p in ports.outputs(self.graph)})

    def float_model(self, x) -> np.ndarray:
        """The float ONNX model's output (onnxruntime), shaped like the output without the batch dimension."""
        from edgec.quant import calibrate
        from edgec.frontend import loader

        if self._onnx_model is None:
            self._onnx_model = loader.load_model(self.build_dir / "model.onnx", self.settings.memory_limit)
        if ports.multi(self.graph):       # {input name: sample} -> {output name: output}
            packed = np.concatenate([np.asarray(x[p.name], np.float32).reshape(-1) for p in ports.inputs(self.graph)])
            y = calibrate.run_float(self._onnx_model, packed[None])[0]
            return {p.name: y[p.start:p.start + p.size].reshape(p.sample_shape) for p in ports.outputs(self.graph)}
        x = np.asarray(x, np.float32).reshape(1, *self.graph.input_onnx_shape[1:])
        return calibrate.run_float(self._onnx_model, x).reshape(self.graph.output_onnx_shape[1:])

    # ---- time ----

    def latency(self, x, repeats: int = 1) -> Latency:
        """The median time of `repeats` runs of one sample, in the board's unit and in ms where it converts."""
        from edgec.bench.runner import to_ms, ms_basis

        units = float(np.median([self.run(x).units for _ in range(max(1, repeats))]))
        return Latency(units, self.board.timing_unit, to_ms(units, self.board) if ms_basis(self.board) else None)

    def profile(self, x) -> list[dict]:
        """Per layer, in execution order: name, kind, units (board's unit) and ms (or None)."""
        from edgec.bench.runner import layers, ms_basis, to_ms

        ops = layers(self.graph)
        ticks = self.device.link.run_checked(ports.sample_bytes(self.graph, self.quantize(x)),
                                             profile=True)["layer_ticks"]
        rows = []
        for op, t in zip(ops, ticks):
            units = self.board.ticks_to_units(int(t))
            rows.append({"name": op.name, "kind": op.kind, "units": units,
                         "ms": to_ms(units, self.board) if ms_basis(self.board) else None})
        return rows

    # ---- lifetime ----

    def close(self) -> None:
        self.device.close()

    def __enter__(self) -> "ModelDevice":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
