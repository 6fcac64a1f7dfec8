"""The pipeline's stages as values (edgec/pipeline.py): the IR is immutable, no stage changes a value an earlier
stage handed on (each makes a new one), the calibration file is opened once per build, and the environment is
read once into Settings (edgec/settings.py)."""
from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Mapping
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest

from edgec import api, pipeline, ports
from edgec.codegen import cmodel
from edgec.errors import EdgecError
from edgec.ir import Graph, GraphBuilder, Op, Tensor
from edgec.quant.ptq import QuantOptions
from edgec.settings import Settings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DIGITS = EXAMPLES / "digits_cnn"


def fingerprint(value) -> str:
    """A hash of everything a graph holds: every tensor, op, attr, param and array byte, the lowering."""
    h = hashlib.sha256()

    def feed(v):
        if isinstance(v, np.ndarray):
            h.update(f"array {v.dtype} {v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, Mapping):           # dicts, and a lowering's read-only params and arrays
            h.update(f"dict {len(v)}".encode())
            for k in sorted(v, key=repr):
                feed(k)
                feed(v[k])
        elif isinstance(v, (list, tuple)):
            h.update(f"{type(v).__name__} {len(v)}".encode())
            for x in v:
                feed(x)
        elif dataclasses.is_dataclass(v):
            h.update(type(v).__name__.encode())
            for f in dataclasses.fields(v):
                feed(f.name)
                feed(getattr(v, f.name))
        else:
            h.update(f"{type(v).__name__} {v!r}".encode())
    feed(value)
    return h.hexdigest()


def test_graph_op_and_tensor_are_immutable():
    t = Tensor("x", (1, 4), "x")
    op = Op("reshape", "r", ("x",), "y")
    g = Graph("g", {"x": t, "y": Tensor("y", (1, 4), "y")}, (op,), "x", "y")
    for value, field, new in ((t, "scale", 0.5), (t, "shape", (4,)), (op, "output", "z"), (op, "inputs", ("y",)),
                              (op, "lowering", None), (g, "ops", ()), (g, "name", "h"), (g, "output", "x")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, new)
    with pytest.raises(AttributeError):
        g.ops.append(op)            # a tuple
    with pytest.raises(TypeError, match="Graph.ops is a tuple"):
        Graph("g", {}, [op], "x", "y")
    with pytest.raises(TypeError, match="Op.inputs is a tuple"):
        Op("reshape", "r", ["x"], "y")
    # a new value instead: the old one is unchanged
    assert g.replace_ops(()).ops == () and g.ops == (op,)
    assert dataclasses.replace(t, scale=0.5).scale == 0.5 and t.scale is None
    fresh = op.fresh()
    fresh.params["n"] = 1
    assert op.params == {} and fresh.attrs is not op.attrs
    # frontends build in a GraphBuilder and hand out the finished, immutable graph
    b = GraphBuilder("b")
    b.tensors.update(x=t, y=Tensor("y", (1, 4), "y"))
    b.input, b.output = "x", "y"
    b.ops.append(op)
    b.replace_op(op, dataclasses.replace(op, name="r2"))
    done = b.finish()
    assert isinstance(done, Graph) and done.ops[0].name == "r2" and op.name == "r"


def _stages_keep_their_inputs(model, canonical, samples, options, tmp_path, name):
    """quantize -> lower -> plan -> C: after each, every value an earlier stage made is unchanged."""
    held = {"canonical": (canonical, fingerprint(canonical))}

    def unchanged():
        for what, (value, fp) in held.items():
            assert fingerprint(value) == fp, f"{what} changed"
    result = pipeline.quantize(model, canonical, samples, options)
    assert result.graph is not canonical
    unchanged()
    held["quantized"] = (result.graph, fingerprint(result.graph))
    lowered = pipeline.lower(result.graph, "speed")
    assert any(op.lowering for op in lowered.ops) and not any(op.lowering for op in result.graph.ops)
    unchanged()
    held["lowered"] = (lowered, fingerprint(lowered))
    scheduled, plan = pipeline.schedule_and_plan(result.graph, ram_budget=40960)
    unchanged()
    held["scheduled"] = (scheduled, fingerprint(scheduled))
    cmodel.generate(scheduled, plan, tmp_path / name, name)
    unchanged()
    return result


def test_no_stage_changes_a_value_an_earlier_stage_holds(tmp_path):
    """load -> canonicalize -> quantize (CLE, bias correction, an int16 layer, int4 weights, auto ranges; then
    the accuracy budget's search) -> lower -> plan -> generate: the canonical graph, the quantized graph and
    the lowered graph come out of every later stage byte for byte as they went in."""
    model = pipeline.load(DIGITS / "model.onnx")
    canonical = pipeline.canonical(model, "digits")
    first = fingerprint(canonical)
    with ports.open_calibration(DIGITS / "calib.npz", canonical) as samples:
        wide = _stages_keep_their_inputs(
            model, canonical, samples,
            QuantOptions(equalize=True, bias_correction=True, int16=("/conv2/Conv",), weights="int4", method="auto",
                         auto_seconds=1.0, sensitivity_samples=2, cache=False), tmp_path, "wide")
        mixed = _stages_keep_their_inputs(
            model, canonical, samples,
            QuantOptions(equalize=True, bias_correction="float", max_accuracy_drop=1.0, sensitivity_samples=0,
                         cache=False), tmp_path, "mixed")
    assert fingerprint(canonical) == first
    assert any(t.dtype == "int16" for t in wide.graph.tensors.values()) and mixed.mixed is not None
    assert all(t.scale is None for t in canonical.tensors.values())        # quantization made new tensors


def test_a_build_opens_the_calibration_file_once(tmp_path, monkeypatch):
    """api.build and api.export read the calibration file through one open file (edgec/data.py's Samples):
    its header check, the statistics' passes, the cache key's digest, the first samples of the checks that need
    them, the accuracy budget's labels and held-out split, the export's example sample."""
    calib = tmp_path / "calib.npz"
    calib.write_bytes((DIGITS / "calib.npz").read_bytes())
    opened = []
    real = builtins.open

    def counting(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).resolve() == calib.resolve():
            opened.append(file)
        return real(file, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    settings = Settings(cache_root=tmp_path / "cache")
    cases = [("default", QuantOptions(sensitivity_samples=2)),             # computes and caches the statistics
             ("cached", QuantOptions(sensitivity_samples=2)),              # reads them from the cache
             ("budget", QuantOptions(max_accuracy_drop=1.0, bias_correction=True, sensitivity_samples=0))]
    for name, options in cases:
        opened.clear()
        api.build(DIGITS / "model.onnx", calib, "qemu-cortex-m4", tmp_path / name, firmware=False, options=options,
                  tuning_log=tmp_path / "none.json", settings=settings)
        assert len(opened) == 1, (name, opened)
    opened.clear()
    api.export(DIGITS / "model.onnx", calib, "qemu-cortex-m4", "c", tmp_path / "lib",
               options=QuantOptions(sensitivity_samples=0), settings=settings)
    assert len(opened) == 1, opened


@pytest.mark.parametrize("damage", ["garbage", "truncated", "no_x", "shape", "missing"])
def test_a_bad_calibration_file_is_one_clear_line(damage, tmp_path):
    calib = tmp_path / "calib.npz"
    good = (DIGITS / "calib.npz").read_bytes()
    if damage == "garbage":
        calib.write_bytes(b"not a zip at all" * 10)
    elif damage == "truncated":
        calib.write_bytes(good[:len(good) // 2])
    elif damage == "no_x":
        np.savez(calib, y=np.zeros(3))
    elif damage == "shape":
        np.savez(calib, x=np.zeros((3, 8, 8), np.float32))
    with pytest.raises(EdgecError) as e:
        api.calibrate_model(DIGITS / "model.onnx", calib, QuantOptions(sensitivity_samples=0, cache=False))
    text = str(e.value)
    assert "\n" not in text and str(calib) in text, text
    assert {"garbage": "not a readable .npz", "truncated": "npz", "no_x": "has no array 'x'",
            "shape": "x has shape [3, 8, 8]", "missing": "no such data file"}[damage] in text


def test_settings_are_read_once_from_the_environment(tmp_path):
    env = {"EDGEC_CACHE_DIR": str(tmp_path / "c"), "EDGEC_MEMORY_LIMIT": "4G", "EDGEC_PLATFORMIO_HOME": "~/pio",
           "EDGEC_BUILD_TIMEOUT": "12.5", "EDGEC_OFFLINE": "1", "LG_COORDINATOR": "lab:1", "CC": "clang"}
    s = Settings.from_environment(env)
    assert s == Settings(cache_root=tmp_path / "c", memory_limit=4 << 30, platformio_home=Path.home() / "pio",
                         build_timeout=12.5, offline=True, labgrid_coordinator="lab:1", c_compiler="clang")
    assert (s.calib_cache, s.tuning_log, s.qemu_plugins) == (tmp_path / "c" / "calib", tmp_path / "c" / "tuning.json",
                                                           tmp_path / "c" / "qemu-plugins")
    default = Settings.from_environment({})
    assert default == Settings() and default.cache_root == Path.home() / ".cache" / "edgec"
    assert default.platformio_home == Path.home() / ".cache" / "edgec" / "platformio"
    assert (default.memory_limit, default.build_timeout, default.offline) == (1 << 30, 900.0, False)
    assert (default.labgrid_coordinator, default.c_compiler) == ("127.0.0.1:20408", "cc")
    for var, value, message in (("EDGEC_MEMORY_LIMIT", "lots", "is not a size"), ("EDGEC_MEMORY_LIMIT", "-1", "positive"),
                                ("EDGEC_BUILD_TIMEOUT", "soon", "not a number of seconds"),
                                ("EDGEC_BUILD_TIMEOUT", "0", "must be positive")):
        with pytest.raises(EdgecError, match=f"{var}=.*{message}"):
            Settings.from_environment({var: value})
