"""Opsets: edgec takes models from opset 11 up to the newest the installed onnx knows.

- A model below opset 11 is converted up (onnx.version_converter) to CONVERT_TO, the opset the
  canonicalizer knows best; one above what the installed onnx knows is refused with the numbers.
- onnxruntime (float reference, calibration) may lag behind onnx: `for_onnxruntime` gives a copy it
  can load, with the IR version and the default opset lowered to the newest it runs (found once by
  asking it), converted with onnx.version_converter when the opset must come down. Value names
  survive the conversion, so calibration still finds every tensor.
"""
from __future__ import annotations

import functools
from pathlib import Path

import onnx
from onnx import helper, version_converter

from edgec.errors import EdgecError

MIN_OPSET = 11          # the oldest opset the canonicalizer reads as is
CONVERT_TO = 13         # older models are converted to this one


def default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def upgrade(model: onnx.ModelProto, where: str | Path = "model") -> onnx.ModelProto:
    """`model` at an opset edgec reads: converted up from below MIN_OPSET; refused above onnx's newest."""
    opset, newest = default_opset(model), onnx.defs.onnx_opset_version()
    if opset > newest:
        raise EdgecError(f"{where}: the model uses opset {opset} but the installed onnx {onnx.__version__} knows "
                         f"opsets up to {newest}; upgrade onnx (pip install -U onnx) or export with opset {newest}")
    if opset >= MIN_OPSET:
        return model
    try:
        converted = version_converter.convert_version(model, CONVERT_TO)
    except Exception as exc:
        raise EdgecError(f"{where}: opset {opset} is older than edgec reads ({MIN_OPSET}) and onnx's version "
                         f"converter could not convert it to opset {CONVERT_TO} ({_short(exc)}); export the model "
                         f"with opset {CONVERT_TO} or newer") from None
    return converted


def for_onnxruntime(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model`, or a copy the installed onnxruntime can load (IR version and opset lowered if needed)."""
    ir_max, opset_max = _onnxruntime_limits()
    opset = default_opset(model)
    if model.ir_version <= ir_max and opset <= opset_max:
        return model
    m = onnx.ModelProto.FromString(model.SerializeToString())
    if opset > opset_max:
        try:
            m = version_converter.convert_version(m, opset_max)
        except Exception as exc:
            raise EdgecError(f"the model uses opset {opset}; the installed onnxruntime runs opsets up to "
                             f"{opset_max} and onnx's version converter could not convert it "
                             f"({_short(exc)}); export with opset {opset_max} or upgrade onnxruntime") from None
    m.ir_version = min(m.ir_version, ir_max)
    return m


@functools.lru_cache(maxsize=None)
def _onnxruntime_limits() -> tuple[int, int]:
    """(newest IR version, newest default-domain opset) the installed onnxruntime loads."""
    import onnxruntime as ort

    def loads(ir: int, opset: int) -> bool:
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = ir
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        try:
            ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            return True
        except Exception:
            return False
    ir = next((v for v in range(onnx.IR_VERSION, 6, -1) if loads(v, 13)), 7)
    opset = next((v for v in range(onnx.defs.onnx_opset_version(), 13, -1) if loads(ir, v)), 13)
    return ir, opset


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
