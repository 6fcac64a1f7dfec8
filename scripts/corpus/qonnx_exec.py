"""QONNX models (Brevitas export_qonnx, FINN) executed with QONNX's own semantics, in NumPy: ONNX's reference
evaluator (onnx.reference) with QONNX's Quant added, written from QONNX's definition (the Quant op's page of the
QONNX repository's custom-op documentation, and its quant.py), independently of edgec's import
(edgec/frontend/qonnx.py):

    q = round(clip(x / scale + zero_point, qmin, qmax)),   y = (q - zero_point) * scale
    signed: qmin = -2^(b-1) (+1 if narrow), qmax = 2^(b-1) - 1;  unsigned: qmin = 0, qmax = 2^b - 1 (-1 if narrow)
    rounding_mode ROUND: half to even (np.round); CEIL, FLOOR as named.
    BipolarQuant(x, scale) = (x >= 0 ? 1 : -1) * scale (QONNX's binary_quant).
    Trunc (opset 2; x, scale, zero_point, in_bitwidth, out_scale, out_bitwidth; signed, narrow, rounding_mode):
        q = round(x / scale + zero_point) / 2^round(log2(out_scale / scale)), clipped to out_bitwidth's range,
        rounded by rounding_mode (FLOOR by default), y = (q - zero_point / 2^k) * out_scale.

ONNX Runtime cannot run these files (no kernel for Quant); scripts/corpus/oracles.py uses this as their oracle.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "")


def _quant(x, scale, zero_point, bitwidth, signed, narrow, rounding_mode):
    b = int(np.asarray(bitwidth).reshape(()))
    if signed:
        lo, hi = -(2 ** (b - 1)) + int(narrow), 2 ** (b - 1) - 1
    else:
        lo, hi = 0, 2 ** b - 1 - int(narrow)
    q = x / scale + zero_point
    q = np.clip(q, lo, hi)
    mode = rounding_mode.decode() if isinstance(rounding_mode, bytes) else str(rounding_mode)
    q = {"ROUND": np.round, "CEIL": np.ceil, "FLOOR": np.floor}[mode.upper()](q)
    return ((q - zero_point) * scale).astype(x.dtype)


def _op(domain: str):
    class Quant(OpRun):
        op_domain = domain

        def _run(self, x, scale, zero_point, bitwidth, signed=1, narrow=0, rounding_mode="ROUND"):
            return (_quant(x, scale, zero_point, bitwidth, signed, narrow, rounding_mode),)
    return Quant


def _bipolar_op(domain: str):
    class BipolarQuant(OpRun):      # QONNX's binary_quant: the sign (0 counts as +1) times the scale
        op_domain = domain

        def _run(self, x, scale):
            return ((np.where(x >= 0, 1.0, -1.0) * scale).astype(x.dtype),)
    return BipolarQuant


def _trunc_op(domain: str):
    class Trunc(OpRun):
        op_domain = domain

        def _run(self, x, scale, zero_point, in_bits, out_scale, out_bits, signed=1, narrow=0, rounding_mode="FLOOR"):
            step = 2.0 ** np.round(np.log2(out_scale / scale))
            b = int(np.asarray(out_bits).reshape(()))
            lo, hi = (-(2 ** (b - 1)) + int(narrow), 2 ** (b - 1) - 1) if signed else (0, 2 ** b - 1 - int(narrow))
            q = np.clip(np.round(x / scale + zero_point) / step, lo, hi)
            mode = rounding_mode.decode() if isinstance(rounding_mode, bytes) else str(rounding_mode)
            q = {"ROUND": np.round, "CEIL": np.ceil, "FLOOR": np.floor}[mode.upper()](q)
            return (((q - zero_point / step) * out_scale).astype(x.dtype),)
    return Trunc


def is_qonnx(path_or_model) -> bool:
    m = onnx.load(str(path_or_model)) if not isinstance(path_or_model, onnx.ModelProto) else path_or_model
    return any(n.op_type in ("Quant", "BipolarQuant", "Trunc") and n.domain in QONNX_DOMAINS for n in m.graph.node)


def session(path_or_model) -> ReferenceEvaluator:
    """An evaluator of the model: .run(None, {input: x}) as ONNX Runtime's session."""
    m = onnx.load(str(path_or_model)) if not isinstance(path_or_model, onnx.ModelProto) else path_or_model
    return ReferenceEvaluator(m, new_ops=[f(d) for f in (_op, _bipolar_op, _trunc_op)
                                                  for d in QONNX_DOMAINS])
