"""`OpDef`: the registry entry of one canonical op kind (edgec/ops/registry.py collects them); its kernels are
records of their own (edgec/ops/kernel.py), beside it in its family."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from edgec.ir import Op, Tensor

Quantizer = Callable[[Op, "list[Tensor]", Tensor], None]
Twin = Callable[[Op, "list[np.ndarray]"], np.ndarray]


@dataclass
class CallSite:
    """Where one op's C call runs (`Kernel.call`): C expressions of its arena buffers and the names of its
    constant arrays."""

    prefix: str                  # "op<index>": the op's C names start with it
    inputs: list[str]            # C expressions of the input buffers (int8_t *)
    output: str                  # C expression of the output buffer
    arrays: dict[str, str]       # the lowering's array key -> C array name
    scratch: str | None = None   # C expression of the op's scratch buffer, if the plan gave it one
    state: str | None = None     # C expression (int8_t *) of the op's persistent state buffer (edgec/ops/state.py)
    dtype: str = "int8"          # the output tensor's dtype


@dataclass(frozen=True)
class Int16:
    """A kind's TFLite 16x8 quantization (`--int16`): its quantizer, run after the int8 one (the 16x8 kernels
    are records with precision int16 in the kind's family)."""

    quantize: Quantizer
    layer: bool = False          # an unweighted kind `--int16 NODE` may name too (softmax); weighted kinds always
    fixed_qparams: tuple[float, int] | None = None   # the int16 output's own (scale, zero point), if the kind fixes it
    between: Callable[[Op], bool] | None = None       # a kind with its own output grid (add, concat) an int16 chain
                                                      # may pass through between two int16 layers: whether this op can
    qdq: Callable[[Op], bool] | None = None    # whether an ONNX op of the kind runs in 16x8 where a QDQ file's
                                               # activations are int16 (edgec/frontend/qdq16.py); None: it cannot
    as16: Callable[[Op], Op] | None = None     # the op it runs as there (a grouped conv: a block-diagonal conv2d)
    tail: Callable[[Op], bool] | None = None   # whether a float model's graph output this op computes may run
                                               # int16 and leave as an int16 port where that gains
                                               # (edgec/quant/int16.py tail_default); None: never
    tail8: Callable[[Op], bool] | None = None  # whether such an output may run int16 inside and leave on the kind's
                                               # fixed int8 grid (a Softmax: 1/256, zero point -128; the port's
                                               # type, scale and zero point those of the int8 model), where that gains
    nameable: bool = True                      # False: only a QDQ file's int16 values run it (no --int16 candidate)
    rows: Callable[[Op], bool] | None = None   # whether a float transformer's op of the kind runs int16 with its rows
                                               # (edgec/quant/int16.py attention_default); None: never


def always(op: Op) -> bool:
    """Int16.qdq of a kind whose every ONNX op runs in 16x8."""
    return True


@dataclass(frozen=True)
class Equalize:
    """How --equalize (edgec/quant/equalize.py) reads and rescales a kind's float weights."""

    out_range: Callable[[Op], np.ndarray]          # max |w| of every output channel
    in_range: Callable[[Op], np.ndarray]           # max |w| of every input channel
    scale_out: Callable[[Op, np.ndarray], None]    # divide output channel c by s[c] (weights and bias)
    scale_in: Callable[[Op, np.ndarray], None]     # multiply input channel c by s[c]


@dataclass(frozen=True)
class OpDef:
    """Everything Python knows about one canonical op kind but its kernels (docs/design.md, "The operator
    registry"; the kernels: edgec/ops/kernel.py)."""

    kind: str                                    # canonical op kind (ir.Op.kind)
    family: str                                  # C kernel family: runtime_c/edgec_<family>.c
    quantize: Quantizer                          # fills op.params (C struct fields) and op.arrays (constants)
    run_float: Twin | None                       # float run of the canonical op (calibration, sensitivity)
    alias: bool = False                          # output is the input's bytes (a view: no code, no kernel, same
                                                 # buffer)
    in_place: bool = False                       # may write its output over its first input
    fuses_activation: bool = False               # a following Relu/Clip becomes its clamp
    weight_axis: int | None = None               # weighted op: the output-channel axis of attrs['weights']
    qparams: str = "calibrated"                  # output quantization: "calibrated", "input" (same as the
                                                 # first input's) or "fixed" (fixed_qparams(op))
    fixed_qparams: Callable[[Op], tuple[float, int] | None] | None = None
    own_scale: Callable[[Op, tuple, tuple], Op | None] | None = None   # a kind keeping its input's quantization:
                                                 # (op, input range, output range) -> the op computing the same
                                                 # with its own output scale where that is closer to float, or None
    macs: Callable[[Op, Tensor], int] | None = None   # multiply-accumulates of one inference
    int16: Int16 | None = None                   # 16x8 quantization (--int16)
    sensitivity: bool = True                     # listed in the per-layer sensitivity report
    distribution: bool = False                   # output is a probability distribution (or its log)
    adaptive_rounding: bool = False              # GPTQ rounding of its weights (edgec/quant/rounding.py): each
                                                 # output a dot product of weights and an input patch, run_float
                                                 # takes weights= and bias=
    bias_correction: bool = False                # --bias-correction corrects its bias (weighted ops)
    equalize: Equalize | None = None             # cross-layer equalization (--equalize) of its weights
    row_bands: str | None = None                 # runs on row bands of [1,H,W,C] images (patch-based stages,
                                                 # edgec/plan/patching.py): "window" (k_h, stride_h, pad_top,
                                                 # in_h, out_h params) or "elementwise" (n params)
    state: Callable[[Op], tuple] | None = None   # the state it keeps between inferences (edgec/ops/state.py
                                                 # Fields): its twin takes `state=` (its fields, fresh if None)
