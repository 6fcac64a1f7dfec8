"""The .tflite importers of TensorFlow Lite Micro's signal operators (custom ops, options as flexbuffers, read as
TFLM's kernels read them): each becomes one op of edgec/ops/signal on tensors of the file's integer types."""
from __future__ import annotations

import numpy as np

from edgec.ir import Tensor
from edgec.ops.signal import kissfft

TYPE_OF = {7: "int16", 2: "int32", 15: "uint32", 12: "uint64"}


def _options(tx, op) -> dict:
    from flatbuffers import flexbuffers

    try:
        o = flexbuffers.Loads(op.CustomOptionsAsNumpy().tobytes()) if op.CustomOptionsLength() else {}
    except Exception as exc:
        raise tx.unsupported(f"its options are not a flexbuffer map ({type(exc).__name__})") from None
    return o if isinstance(o, dict) else {}


def _need(tx, o: dict, *keys) -> list[int]:
    missing = [k for k in keys if k not in o]
    if missing:
        raise tx.unsupported(f"its options lack {', '.join(missing)}")
    return [int(o[k]) for k in keys]


def _in(tx, op, k: int, dtype: str) -> str:
    return tx.input(op, k, dtypes=(dtype,))


def _out(tx, op, dtype: str, size: int, extra: int = 0) -> str:
    """A new tensor of `dtype` for output 0 (`extra` more values: a second output packed after it)."""
    t = tx.sg.Tensors(op.Outputs(0))
    if TYPE_OF.get(t.Type()) != dtype:
        raise tx.unsupported(f"its output is not {dtype} (TFLM's kernel takes {dtype})")
    name = tx._tname(op.Outputs(0))
    tx.graph.tensors[name] = Tensor(name=name, shape=(size + extra,), source=name, scale=1.0, zero_point=0,
                                    dtype=dtype)
    for k in range(op.OutputsLength()):
        tx.values[op.Outputs(k)] = name
        if op.OutputsLength() > 1:          # graph outputs: the one packed tensor stands for all of them
            tx.parts[op.Outputs(k)] = name
    return name


def _size(tx, index: int) -> int:
    return int(np.prod(tx.shape(index), dtype=np.int64))


def _at(tx, op, k: int) -> int:
    """Where input k's values start in its canonical tensor: after the first output of a packed operator."""
    i = op.Inputs(k)
    name = tx.values.get(i)
    first = next((j for j, v in tx.values.items() if v == name), i)
    return 0 if first == i else _size(tx, first)


def import_window(tx, op):
    (shift,) = _need(tx, _options(tx, op), "shift")
    x, w = _in(tx, op, 0, "int16"), tx.const(op, 1)
    n = _size(tx, op.Inputs(0))
    if w is None or w.dtype != np.int16 or w.ndim != 1 or n % w.size:
        raise tx.unsupported("its weights must be an int16 constant vector dividing the input")
    tx.emit("signal_window", op, [x], _out(tx, op, "int16", n), n=n, frame=w.size, shift=shift,
            weights=np.ascontiguousarray(w))


def import_fft_auto_scale(tx, op):
    n = _size(tx, op.Inputs(0))
    tx.emit("signal_fft_auto_scale", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", n, extra=1), n=n)


def import_rfft(tx, op):
    o = _options(tx, op)
    (fft_length,) = _need(tx, o, "fft_length")
    if o.get("T", 7) != 7 or not kissfft.supported(fft_length):
        raise tx.unsupported(f"an rfft of type {o.get('T')} or length {fft_length} (edgec runs int16, power-of-two "
                             "lengths from 8)")
    shape = tx.shape(op.Inputs(0))
    n, size = int(shape[-1]), _size(tx, op.Inputs(0))
    if n > fft_length:
        raise tx.unsupported(f"frames of {n} samples for a {fft_length}-point FFT")
    frames = size // n
    tx.emit("signal_rfft", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", frames * (fft_length + 2)),
            fft_length=fft_length, input_length=n, frames=frames, twiddles=kissfft.twiddles(fft_length),
            super_twiddles=kissfft.super_twiddles(fft_length))


def import_energy(tx, op):
    end, start = _need(tx, _options(tx, op), "end_index", "start_index")
    bins = _size(tx, op.Inputs(0)) // 2
    if not 0 <= start <= end <= bins:
        raise tx.unsupported(f"bins [{start}, {end}) outside the spectrum's {bins}")
    tx.emit("signal_energy", op, [_in(tx, op, 0, "int16")], _out(tx, op, "uint32", bins), bins=bins, start=start,
            end=end)


def import_filter_bank(tx, op):
    (ch,) = _need(tx, _options(tx, op), "num_channels")
    names = ("weights", "unweights", "freq_starts", "weight_starts", "widths")
    arrays = {k: tx.const(op, j + 1) for j, k in enumerate(names)}
    if any(a is None or a.dtype != np.int16 for a in arrays.values()):
        raise tx.unsupported("its weights and channel tables must be int16 constants")
    tx.emit("signal_filter_bank", op, [_in(tx, op, 0, "uint32")], _out(tx, op, "uint64", ch), channels=ch,
            **{k: np.ascontiguousarray(v) for k, v in arrays.items()})


def import_filter_bank_square_root(tx, op):
    ch = _size(tx, op.Inputs(0))
    scale = tx.input(op, 1, dtypes=("int16", "int32"))
    tx.emit("signal_filter_bank_square_root", op, [_in(tx, op, 0, "uint64"), scale], _out(tx, op, "uint32", ch),
            channels=ch, scale_at=_at(tx, op, 1))


SPECTRAL = ("num_channels", "smoothing", "one_minus_smoothing", "alternate_smoothing",
            "alternate_one_minus_smoothing", "smoothing_bits", "spectral_subtraction_bits", "min_signal_remaining")


def import_spectral_subtraction(tx, op):
    o = _options(tx, op)
    values = dict(zip(SPECTRAL, _need(tx, o, *SPECTRAL)))
    ch = values["num_channels"]
    tx.emit("signal_spectral_subtraction", op, [_in(tx, op, 0, "uint32")], _out(tx, op, "uint32", ch, extra=ch),
            clamping=int(bool(o.get("clamping", False))), **values)


def import_pcan(tx, op):
    (snr_shift,) = _need(tx, _options(tx, op), "snr_shift")
    x, noise, lut = _in(tx, op, 0, "uint32"), _in(tx, op, 1, "uint32"), tx.const(op, 2)
    if lut is None or lut.dtype != np.int16:
        raise tx.unsupported("its gain table must be an int16 constant")
    ch = _size(tx, op.Inputs(0))
    tx.emit("signal_pcan", op, [x] if x == noise else [x, noise], _out(tx, op, "uint32", ch), channels=ch,
            snr_shift=snr_shift, noise_at=_at(tx, op, 1), gain_lut=np.ascontiguousarray(lut))


def import_filter_bank_log(tx, op):
    bits, scale = _need(tx, _options(tx, op), "input_correction_bits", "output_scale")
    ch = _size(tx, op.Inputs(0))
    tx.emit("signal_filter_bank_log", op, [_in(tx, op, 0, "uint32")], _out(tx, op, "int16", ch), channels=ch,
            output_scale=scale, correction_bits=bits)


def import_irfft(tx, op):
    o = _options(tx, op)
    (fft_length,) = _need(tx, o, "fft_length")
    if o.get("T", 7) != 7 or not kissfft.supported(fft_length):
        raise tx.unsupported(f"an irfft of type {o.get('T')} or length {fft_length} (edgec runs int16, "
                             "power-of-two lengths from 8)")
    bins = int(tx.shape(op.Inputs(0))[-1]) // 2
    frames = _size(tx, op.Inputs(0)) // (2 * bins)
    if int(tx.shape(op.Outputs(0))[-1]) != fft_length or bins < fft_length // 2 + 1:
        raise tx.unsupported(f"an irfft of {bins} bins into {tx.shape(op.Outputs(0))[-1]} samples (edgec takes "
                             f"at least {fft_length // 2 + 1} bins and fft_length samples a frame)")
    tx.emit("signal_irfft", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", frames * fft_length),
            fft_length=fft_length, input_length=bins, frames=frames, twiddles=kissfft.inverse_twiddles(fft_length),
            super_twiddles=kissfft.inverse_super_twiddles(fft_length))


def import_framer(tx, op):
    o = _options(tx, op)
    size, step = _need(tx, o, "frame_size", "frame_step")
    inner = int(tx.shape(op.Inputs(0))[-1])
    if step <= 0 or size < step or inner % step:
        raise tx.unsupported(f"frame_size {size}, frame_step {step} for {inner} samples (edgec takes a step that "
                             "divides the input and is at most the frame)")
    outer, n = _size(tx, op.Inputs(0)) // inner, inner // step
    tx.emit("signal_framer", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", outer * n * size, extra=1),
            outer=outer, n_frames=n, frame_size=size, frame_step=step, capacity=size + step,
            prefill=int(bool(o.get("prefill", False))))


def import_stacker(tx, op):
    o = _options(tx, op)
    ch, left, right, step = _need(tx, o, "num_channels", "stacker_left_context", "stacker_right_context",
                                  "stacker_step")
    if _size(tx, op.Inputs(0)) != ch or min(left, right) < 0 or not 0 < step <= left + right + 1:
        raise tx.unsupported(f"a stacker of {ch} channels, contexts {left} and {right}, step {step} (edgec takes "
                             "a step from 1 to the stacked frames)")
    size = ch * (left + right + 1)
    tx.emit("signal_stacker", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", size, extra=1),
            num_channels=ch, left=left, right=right, step=step, capacity=size + ch * (left + 1))


def import_delay(tx, op):
    (length,) = _need(tx, _options(tx, op), "delay_length")
    frame = int(tx.shape(op.Inputs(0))[-1])
    outer = _size(tx, op.Inputs(0)) // frame
    if length < 0:
        raise tx.unsupported(f"delay_length {length}")
    tx.emit("signal_delay", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", outer * frame), outer=outer,
            frame=frame, delay=length)


def import_overlap_add(tx, op):
    o = _options(tx, op)
    (step,) = _need(tx, o, "frame_step")
    shape = tx.shape(op.Inputs(0))
    if o.get("T", 7) != 7 or len(shape) < 2 or not 0 < step <= int(shape[-1]):
        raise tx.unsupported(f"an overlap-add of type {o.get('T')}, input {list(shape)}, step {step} (edgec "
                             "takes int16 frames [..., n_frames, frame_size] and a step up to the frame)")
    size, n = int(shape[-1]), int(shape[-2])
    outer = _size(tx, op.Inputs(0)) // (size * n)
    tx.emit("signal_overlap_add", op, [_in(tx, op, 0, "int16")], _out(tx, op, "int16", outer * n * step),
            outer=outer, n_frames=n, frame_size=size, frame_step=step)


TFLITE = {"CUSTOM SignalWindow": import_window, "CUSTOM SignalFftAutoScale": import_fft_auto_scale,
          "CUSTOM SignalRfft": import_rfft, "CUSTOM SignalEnergy": import_energy,
          "CUSTOM SignalFilterBank": import_filter_bank,
          "CUSTOM SignalFilterBankSquareRoot": import_filter_bank_square_root,
          "CUSTOM SignalFilterBankSpectralSubtraction": import_spectral_subtraction,
          "CUSTOM SignalPCAN": import_pcan, "CUSTOM SignalFilterBankLog": import_filter_bank_log,
          "CUSTOM SignalIrfft": import_irfft, "CUSTOM SignalFramer": import_framer,
          "CUSTOM SignalStacker": import_stacker, "CUSTOM SignalDelay": import_delay,
          "CUSTOM SignalOverlapAdd": import_overlap_add}
