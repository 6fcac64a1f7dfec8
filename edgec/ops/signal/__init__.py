"""TensorFlow Lite Micro's signal library (the custom operators Signal*, tflite-micro signal/): the integer audio
front end of TFLM's micro_speech preprocessor. Its op kinds, kernel records and .tflite importers are here; the
NumPy integer twins in twins.py, the int16 real FFT and its tables in kissfft.py, the C kernels in
runtime_c/edgec_signal.c; all bit-identical with TFLM's kernels (tests/kernels/test_signal.py).

These kinds run on int16, int32, uint32 and uint64 tensors (not quantized: scale 1, zero point 0). An operator
with two outputs gives one tensor holding both: SignalFftAutoScale [n scaled samples | the shift],
SignalFilterBankSpectralSubtraction [output | noise estimate], SignalFramer and SignalStacker [frames | valid
flag]. The spectral subtraction's noise estimate and the streaming operators' buffers are state kept between
invocations (edgec/ops/state.py: a persistent buffer of the arena per op, as TFLM keeps them in the operator's
persistent buffers; the NumPy twins take it as `state=`).
"""
from __future__ import annotations

import numpy as np

from edgec.ir import Op, Tensor
from edgec.ops import cemit, state as op_state
from edgec.ops.state import Field
from edgec.ops.kernel import REFERENCE, Kernel
from edgec.ops.opdef import CallSite, OpDef
from edgec.ops.signal import integer, kissfft, mfcc, mfcc_onnx, streaming, twins

CTYPE = {"int16": "int16_t", "int32": "int32_t", "uint32": "uint32_t", "uint64": "uint64_t"}
TYPE_OF = {7: "int16", 2: "int32", 15: "uint32", 12: "uint64"}     # TFLite tensor types these kinds take


def _quantize(op: Op, ins: list[Tensor], out: Tensor) -> None:
    """No quantization: the importer's integers are the op's parameters."""
    op.params.update({k: v for k, v in op.attrs.items() if isinstance(v, (int, bool, np.integer)) and k != "act"})
    op.arrays.update({k: v for k, v in op.attrs.items() if isinstance(v, np.ndarray)})


# ---- NumPy twins (op, inputs) -> output -------------------------------------------------------------------------
def _part(x, at: int, n: int):
    return np.asarray(x).reshape(-1)[at:at + n]


def run_window(op, ins):
    return twins.window(ins[0], op.arrays["weights"], op.params["shift"])


def run_fft_auto_scale(op, ins):
    y, bits = twins.fft_auto_scale(ins[0])
    return np.concatenate([y, np.array([bits], np.int16)])


def run_rfft(op, ins):
    p = op.params              # (the input may be an auto-scale's packed output: the samples, then the shift)
    return twins.rfft(_part(ins[0], 0, p["frames"] * p["input_length"]), p["fft_length"], p["input_length"])


def run_energy(op, ins):
    return twins.energy(ins[0], op.params["start"], op.params["end"])


def run_filter_bank(op, ins):
    a = op.arrays
    return twins.filter_bank(ins[0], a["weights"], a["unweights"], a["freq_starts"], a["weight_starts"], a["widths"],
                             op.params["channels"])


def run_filter_bank_square_root(op, ins):
    bits = int(_part(ins[1], op.params["scale_at"], 1)[0])
    return twins.filter_bank_square_root(ins[0], bits)


def state_fields(op: Op) -> tuple:
    """The state a stateful signal kind keeps (the C's layout; the twins keep their FIFOs as growing arrays beside
    these fields, holding the same samples in the same order)."""
    p = op.params or op.attrs
    k = op.kind
    if k == "signal_spectral_subtraction":
        return (Field("noise", "uint32", (p["num_channels"],)),)
    if k == "signal_framer":
        start = p["frame_size"] - p["frame_step"] if p["prefill"] else 0
        return Field("samples", "int16", (p["outer"] * p["capacity"],)), Field("count", "int32", (p["outer"],), start)
    if k == "signal_stacker":
        return Field("samples", "int16", (p["capacity"],)), Field("position", "int32", (2,))
    if k == "signal_delay":
        return (Field("line", "int16", (p["outer"], p["delay"])),)
    if k == "signal_overlap_add":
        return (Field("buffer", "int16", (p["outer"], p["frame_size"])),)
    return ()


def _state(op: Op, state: dict | None) -> dict:
    return op_state.fresh(state_fields(op)) if state is None else state


def run_spectral_subtraction(op, ins, state=None):
    """Its noise estimate is state."""
    p = op.params
    state = _state(op, state)
    y, state["noise"][...] = twins.spectral_subtraction(ins[0], state["noise"], p)
    return np.concatenate([y, state["noise"]])


# the kinds that keep state between invocations (a device keeps it until reset, as TFLM until Reset())
STATEFUL = frozenset({"signal_spectral_subtraction", "signal_framer", "signal_stacker", "signal_delay",
                      "signal_overlap_add"})


def run_irfft(op, ins):
    p = op.params
    x = np.asarray(ins[0], np.int16).reshape(p["frames"], -1)
    return np.concatenate([kissfft.irfft(f, p["fft_length"]) for f in x])


def run_framer(op, ins, state=None):
    p = op.params
    x = np.asarray(ins[0], np.int16).reshape(p["outer"], -1)
    y, valid = streaming.framer(x, p["frame_size"], p["frame_step"], bool(p["prefill"]), _state(op, state))
    return np.concatenate([y.reshape(-1), np.array([int(valid)], np.int16)])


def run_stacker(op, ins, state=None):
    p = op.params
    y, valid = streaming.stacker(ins[0], p["left"], p["right"], p["step"], _state(op, state))
    return np.concatenate([y, np.array([int(valid)], np.int16)])


def run_delay(op, ins, state=None):
    p = op.params
    return streaming.delay(np.asarray(ins[0]).reshape(p["outer"], -1), p["delay"], _state(op, state)).reshape(-1)


def run_overlap_add(op, ins, state=None):
    p = op.params
    x = np.asarray(ins[0], np.int16).reshape(p["outer"], p["n_frames"], p["frame_size"])
    return streaming.overlap_add(x, p["frame_step"], _state(op, state)).reshape(-1)


def run_pcan(op, ins):
    ch = op.params["channels"]
    x, noise = _part(ins[0], 0, ch), _part(ins[-1], op.params["noise_at"], ch)
    return twins.pcan(x, noise, op.arrays["gain_lut"], op.params["snr_shift"])


def run_filter_bank_log(op, ins):
    return twins.filter_bank_log(ins[0], op.params["output_scale"], op.params["correction_bits"])


# ---- C calls -----------------------------------------------------------------------------------------------------
def _p(pointer: str, dtype: str, const: bool = True) -> str:
    c = "const " if const else ""
    return f"({c}{CTYPE[dtype]} *)({c}void *)({pointer})"


def c_window(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_signal_window_s16({p['n']}, {p['frame']}, {p['shift']}, {_p(s.inputs[0], 'int16')}, "
            f"{s.arrays['weights']}, {_p(s.output, 'int16', False)});")


def c_fft_auto_scale(op, low, s: CallSite) -> str:
    return (f"edgec_signal_fft_auto_scale_s16({op.params['n']}, {_p(s.inputs[0], 'int16')}, "
            f"{_p(s.output, 'int16', False)});")


def c_rfft(op, low, s: CallSite) -> str:
    call = (f"edgec_signal_rfft_s16(&p, {_p(s.inputs[0], 'int16')}, {s.arrays['twiddles']}, "
            f"{s.arrays['super_twiddles']}, {_p(s.scratch, 'int16', False)}, {_p(s.output, 'int16', False)});")
    return cemit.with_params("edgec_signal_rfft_params", op.params, call, only_fields=True)


def c_energy(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_signal_energy_s16({p['bins']}, {p['start']}, {p['end']}, {_p(s.inputs[0], 'int16')}, "
            f"{_p(s.output, 'uint32', False)});")


def c_filter_bank(op, low, s: CallSite) -> str:
    a = s.arrays
    return (f"edgec_signal_filter_bank_u32({op.params['channels']}, {_p(s.inputs[0], 'uint32')}, {a['weights']}, "
            f"{a['unweights']}, {a['freq_starts']}, {a['weight_starts']}, {a['widths']}, "
            f"{_p(s.output, 'uint64', False)});")


def c_filter_bank_square_root(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_signal_filter_bank_square_root_u64({p['channels']}, {_p(s.inputs[0], 'uint64')}, "
            f"({_p(s.inputs[1], 'int16')})[{p['scale_at']}], {_p(s.output, 'uint32', False)});")


def c_spectral_subtraction(op, low, s: CallSite) -> str:
    ch = op.params["num_channels"]
    out = _p(s.output, "uint32", False)
    noise = op_state.c_field(s.state, state_fields(op), "noise")      # the state: kept between invocations
    call = (f"uint32_t *noise = {noise}; int32_t i;\n      "
            f"edgec_signal_spectral_subtraction_u32(&p, {_p(s.inputs[0], 'uint32')}, noise, {out});\n      "
            f"for (i = 0; i < {ch}; ++i) ({out})[{ch} + i] = noise[i];")
    return cemit.with_params("edgec_signal_spectral_subtraction_params", op.params, call, only_fields=True)


def c_irfft(op, low, s: CallSite) -> str:
    call = (f"edgec_signal_irfft_s16(&p, {_p(s.inputs[0], 'int16')}, {s.arrays['twiddles']}, "
            f"{s.arrays['super_twiddles']}, {_p(s.scratch, 'int16', False)}, {_p(s.output, 'int16', False)});")
    return cemit.with_params("edgec_signal_rfft_params", op.params, call, only_fields=True)


def c_framer(op, low, s: CallSite) -> str:
    p = op.params
    fifo, count = (op_state.c_field(s.state, state_fields(op), k) for k in ("samples", "count"))
    call = f"edgec_signal_framer_s16(&p, {_p(s.inputs[0], 'int16')}, {fifo}, {count}, {_p(s.output, 'int16', False)});"
    return cemit.with_params("edgec_signal_framer_params", p, call, only_fields=True)


def c_stacker(op, low, s: CallSite) -> str:
    p = op.params
    fifo, state = (op_state.c_field(s.state, state_fields(op), k) for k in ("samples", "position"))
    call = f"edgec_signal_stacker_s16(&p, {_p(s.inputs[0], 'int16')}, {fifo}, {state}, {_p(s.output, 'int16', False)});"
    return cemit.with_params("edgec_signal_stacker_params", p, call, only_fields=True)


def c_delay(op, low, s: CallSite) -> str:
    p = op.params
    line = op_state.c_field(s.state, state_fields(op), "line")
    return (f"edgec_signal_delay_s16({p['outer']}, {p['frame']}, {p['delay']}, {_p(s.inputs[0], 'int16')}, {line}, "
            f"{_p(s.output, 'int16', False)});")


def c_overlap_add(op, low, s: CallSite) -> str:
    p = op.params
    buffer = op_state.c_field(s.state, state_fields(op), "buffer")
    return (f"edgec_signal_overlap_add_s16({p['outer']}, {p['n_frames']}, {p['frame_size']}, {p['frame_step']}, "
            f"{_p(s.inputs[0], 'int16')}, {buffer}, {_p(s.output, 'int16', False)});")


def c_pcan(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_signal_pcan_u32({p['channels']}, {_p(s.inputs[0], 'uint32')}, "
            f"({_p(s.inputs[-1], 'uint32')}) + {p['noise_at']}, {s.arrays['gain_lut']}, {p['snr_shift']}, "
            f"{_p(s.output, 'uint32', False)});")


def c_filter_bank_log(op, low, s: CallSite) -> str:
    p = op.params
    return (f"edgec_signal_filter_bank_log_u32({p['channels']}, {_p(s.inputs[0], 'uint32')}, {p['output_scale']}, "
            f"{p['correction_bits']}, {_p(s.output, 'int16', False)});")


_KINDS = {   # kind: (C kernel, twin, C call)
    "signal_window": ("edgec_signal_window_s16", run_window, c_window),
    "signal_fft_auto_scale": ("edgec_signal_fft_auto_scale_s16", run_fft_auto_scale, c_fft_auto_scale),
    "signal_rfft": ("edgec_signal_rfft_s16", run_rfft, c_rfft),
    "signal_energy": ("edgec_signal_energy_s16", run_energy, c_energy),
    "signal_filter_bank": ("edgec_signal_filter_bank_u32", run_filter_bank, c_filter_bank),
    "signal_filter_bank_square_root": ("edgec_signal_filter_bank_square_root_u64", run_filter_bank_square_root,
                                       c_filter_bank_square_root),
    "signal_spectral_subtraction": ("edgec_signal_spectral_subtraction_u32", run_spectral_subtraction,
                                    c_spectral_subtraction),
    "signal_pcan": ("edgec_signal_pcan_u32", run_pcan, c_pcan),
    "signal_irfft": ("edgec_signal_irfft_s16", run_irfft, c_irfft),
    "signal_framer": ("edgec_signal_framer_s16", run_framer, c_framer),
    "signal_stacker": ("edgec_signal_stacker_s16", run_stacker, c_stacker),
    "signal_delay": ("edgec_signal_delay_s16", run_delay, c_delay),
    "signal_overlap_add": ("edgec_signal_overlap_add_s16", run_overlap_add, c_overlap_add),
    "signal_filter_bank_log": ("edgec_signal_filter_bank_log_u32", run_filter_bank_log, c_filter_bank_log),
}
_KINDS.update(integer.KINDS)
_KINDS.update(mfcc.KINDS)
_OWN = {"signal_mfcc": (mfcc.quantize, (mfcc.OUTPUT_SCALE, 0))}     # kind: (quantizer, output quantization)
OPS = [OpDef(kind, "signal", _OWN.get(kind, (_quantize,))[0], None, qparams="fixed",
             fixed_qparams=lambda op: _OWN.get(op.kind, (None, (1.0, 0)))[1], sensitivity=False,
             state=state_fields if kind in STATEFUL else None) for kind in _KINDS]
KERNELS = [Kernel(name, (kind,), REFERENCE, call, run=run, code_bytes=1500)
           for kind, (name, run, call) in _KINDS.items()]
ONNX: dict = {}
GRAPH_IMPORTERS = (mfcc_onnx.import_graph,)     # importers of a whole ONNX graph (edgec/frontend/canonicalize.py)

from edgec.ops.signal.tflite import TFLITE  # noqa: E402  (the importers build the kinds above)

# builtin operators on a front end's plain integers (edgec/ops/signal/integer.py): edgec/ops/registry.py gives
# them the operator when `integer.takes(tx, op)`, else the operator's own family
TFLITE_INTEGER = integer.IMPORTERS
takes_integer = integer.takes
