"""TensorFlow Lite Micro's signal-library operators (edgec/ops/signal/, runtime_c/edgec_signal.c) against TFLM's
own kernels: each kernel as a single-operator .tflite file (custom options as flexbuffers, written by
tests/tflite_oracle.py) run by TFLM's Python interpreter, by its NumPy twin and by the C kernel, bit for bit, on
random inputs and the scaling edge cases (silence, full scale, clipping); then the micro_speech audio
preprocessor (tests/audio/, from tflite-micro's examples) on the example's real audio: the twins and the C
kernels chained as the model chains them, frame after frame with the noise estimate kept between frames, against
TFLM's interpreter running the .tflite itself."""
from __future__ import annotations

import ctypes
import importlib.util
import os
import wave
from pathlib import Path

import numpy as np
import pytest
from flatbuffers import flexbuffers

import tflite_oracle
from ckernels import make, ptr
from edgec.ops.signal import kissfft, twins
from tflite_oracle import Case, Node, T

if importlib.util.find_spec("tflite_micro") is None:      # x86-64 Linux wheels only
    if os.environ.get("CI"):
        pytest.fail("tflite-micro (the TFLite Micro interpreter, the oracle) is not installed", pytrace=False)
    pytest.skip("tflite-micro (the TFLite Micro interpreter) is not installed", allow_module_level=True)

AUDIO = Path(__file__).resolve().parent.parent / "audio"
I16, I32, U32, U64 = 7, 2, 15, 12
NP = {I16: np.int16, I32: np.int32, U32: np.uint32, U64: np.uint64}
EDGES = ("random", "silence", "full_scale", "clipping")


def run_tflm(tensors, code, inputs, outputs, options, feeds):
    """TFLM's outputs (a list per invocation) of one custom operator over successive invocations `feeds`."""
    from tflite_micro.python.tflite_micro import runtime

    ins = [i for i, t in enumerate(tensors) if t.data is None and i in inputs]
    case = Case(code, tensors, [Node(f"CUSTOM:{code}", inputs, outputs, custom=flexbuffers.Dumps(options))],
                ins if len(ins) > 1 else ins[0], outputs if len(outputs) > 1 else outputs[0])
    interp = runtime.Interpreter.from_bytes(tflite_oracle.write(case), arena_size=1 << 20)
    out = []
    for feed in feeds:
        for k, x in enumerate(feed):
            interp.set_input(x, k)
        interp.invoke()
        out.append([np.asarray(interp.get_output(k)).copy() for k in range(len(outputs))])
    return out


def t(shape, dtype, data=None):
    return T(tuple(shape), [1.0], [0], dtype, None if data is None else np.asarray(data, NP[dtype]))


def audio(rng, kind: str, n: int) -> np.ndarray:
    """int16 audio: random speech-like levels, silence, a full-scale square wave, or a clipped loud sine."""
    if kind == "silence":
        return np.zeros(n, np.int16)
    if kind == "full_scale":
        return np.where(np.arange(n) // int(rng.integers(1, 40)) % 2 == 0, 32767, -32768).astype(np.int16)
    if kind == "clipping":
        s = 3.0 * 32767 * np.sin(np.arange(n) * rng.uniform(0.01, 1.5))
        return np.clip(np.rint(s), -32768, 32767).astype(np.int16)
    return (rng.normal(0, 10 ** rng.uniform(1, 4), n)).clip(-32768, 32767).astype(np.int16)


def c_call(ck, name, *args):
    getattr(ck.lib, name)(*[ptr(a) if isinstance(a, np.ndarray) else a for a in args])


# ---- one kernel at a time ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", EDGES)
def test_window_and_fft_auto_scale(ck, kind):
    rng = np.random.default_rng(len(kind))
    n, shift = 480, int(rng.integers(8, 16))
    w = rng.integers(-32768, 32768, n).astype(np.int16) if kind != "silence" else np.full(n, 32767, np.int16)
    x = audio(rng, kind, n).reshape(1, n)
    want = run_tflm([t((1, n), I16), t((n,), I16, w), t((1, n), I16)], "SignalWindow", [0, 1], [2],
                    {"shift": shift}, [[x]])[0][0]
    got = twins.window(x, w, shift)
    np.testing.assert_array_equal(got, want.reshape(-1))
    y = np.zeros(n, np.int16)
    c_call(ck, "edgec_signal_window_s16", n, n, shift, x, w, y)
    np.testing.assert_array_equal(y, got)

    want, bits = run_tflm([t((n,), I16), t((n,), I16), t((), I32)], "SignalFftAutoScale", [0], [1, 2], {},
                          [[x.reshape(-1)]])[0]
    got, got_bits = twins.fft_auto_scale(x)
    np.testing.assert_array_equal(got, want)
    assert got_bits == int(bits.reshape(-1)[0])
    y = np.zeros(n + 1, np.int16)
    c_call(ck, "edgec_signal_fft_auto_scale_s16", n, np.ascontiguousarray(x), y)
    np.testing.assert_array_equal(y[:n], got)
    assert y[n] == got_bits


@pytest.mark.parametrize("fft_length,input_length", [(512, 480), (256, 256), (64, 40), (16, 9)])
@pytest.mark.parametrize("kind", EDGES)
def test_rfft(ck, fft_length, input_length, kind):
    rng = np.random.default_rng(fft_length + input_length + len(kind))
    frames = 2
    x = audio(rng, kind, frames * input_length).reshape(frames, input_length)
    bins = fft_length + 2
    want = run_tflm([t((frames, input_length), I16), t((frames, bins), I16)], "SignalRfft", [0], [1],
                    {"T": I16, "fft_length": fft_length}, [[x]])[0][0]
    got = twins.rfft(x, fft_length, input_length)
    np.testing.assert_array_equal(got, want.reshape(-1))
    y = np.zeros(frames * bins, np.int16)
    scratch = np.zeros(2 * fft_length, np.int16)
    p = make("edgec_signal_rfft_params", dict(fft_length=fft_length, input_length=input_length, frames=frames))
    ck.lib.edgec_signal_rfft_s16(ctypes.byref(p), ptr(x), ptr(kissfft.twiddles(fft_length)),
                                 ptr(kissfft.super_twiddles(fft_length)), ptr(scratch), ptr(y))
    np.testing.assert_array_equal(y, got)


@pytest.mark.parametrize("kind", EDGES)
def test_energy_filter_bank_and_square_root(ck, kind):
    rng = np.random.default_rng(7 + len(kind))
    spec = audio(rng, kind, 2 * 257)
    start, end = int(rng.integers(0, 10)), int(rng.integers(200, 258))
    want = run_tflm([t((514,), I16), t((257,), U32)], "SignalEnergy", [0], [1],
                    {"end_index": end, "start_index": start}, [[spec]])[0][0]
    got = twins.energy(spec, start, end)
    np.testing.assert_array_equal(got[start:end], want[start:end])     # TFLM leaves the other bins unwritten
    e = np.zeros(257, np.uint32)
    c_call(ck, "edgec_signal_energy_s16", 257, start, end, spec, e)
    np.testing.assert_array_equal(e, got)

    ch = 40                                         # a mel-like bank: triangles over [5, 241)
    widths = rng.integers(1, 12, ch + 1).astype(np.int16)
    fstarts = np.minimum(np.cumsum(np.r_[5, widths[:-1] // 2]), 256 - widths).astype(np.int16)
    wstarts = np.r_[0, np.cumsum(widths[:-1])].astype(np.int16)
    weights = rng.integers(0, 4097, int(widths.sum())).astype(np.int16)
    unweights = (4096 - weights).astype(np.int16)
    if kind == "clipping":
        e[:] = np.uint32(0xFFFFFFFF)                # the largest energies: the uint64 sums past 2^32
    fb = [weights, unweights, fstarts, wstarts, widths]
    want = run_tflm([t((257,), U32), *[t(a.shape, I16, a) for a in fb], t((ch,), U64)], "SignalFilterBank",
                    [0, 1, 2, 3, 4, 5], [6], {"num_channels": ch}, [[e]])[0][0]
    got = twins.filter_bank(e, *fb, ch)
    np.testing.assert_array_equal(got, want)
    y = np.zeros(ch, np.uint64)
    c_call(ck, "edgec_signal_filter_bank_u32", ch, e, *fb, y)
    np.testing.assert_array_equal(y, got)

    for bits in (0, 3, 7):
        want = run_tflm([t((ch,), U64), t((), I32), t((ch,), U32)], "SignalFilterBankSquareRoot", [0, 1], [2], {},
                        [[got, np.array(bits, np.int32)]])[0][0]
        root = twins.filter_bank_square_root(got, bits)
        np.testing.assert_array_equal(root, want)
        r = np.zeros(ch, np.uint32)
        c_call(ck, "edgec_signal_filter_bank_square_root_u64", ch, got, bits, r)
        np.testing.assert_array_equal(r, root)


SPECTRAL = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": False,
            "min_signal_remaining": 819, "num_channels": 40, "one_minus_smoothing": 15975, "smoothing": 409,
            "smoothing_bits": 10, "spectral_subtraction_bits": 14}


@pytest.mark.parametrize("clamping", [False, True])
@pytest.mark.parametrize("kind", EDGES)
def test_spectral_subtraction_keeps_its_noise_estimate(ck, kind, clamping):
    rng = np.random.default_rng(11 + len(kind) + clamping)
    p = dict(SPECTRAL, clamping=clamping)
    hi = {"silence": 1, "full_scale": 1 << 22, "clipping": 1 << 32}.get(kind, 1 << 16)
    feeds = [[rng.integers(0, hi, 40, dtype=np.uint64).astype(np.uint32)] for _ in range(6)]
    want = run_tflm([t((40,), U32), t((40,), U32), t((40,), U32)], "SignalFilterBankSpectralSubtraction", [0],
                    [1, 2], p, feeds)
    noise, cnoise = np.zeros(40, np.uint32), np.zeros(40, np.uint32)
    cp = make("edgec_signal_spectral_subtraction_params", dict(p, clamping=int(clamping)))
    for (x,), (w_out, w_noise) in zip(feeds, want):
        y, noise = twins.spectral_subtraction(x, noise, p)
        np.testing.assert_array_equal(y, w_out)
        np.testing.assert_array_equal(noise, w_noise)
        cy = np.zeros(40, np.uint32)
        ck.lib.edgec_signal_spectral_subtraction_u32(ctypes.byref(cp), ptr(x), ptr(cnoise), ptr(cy))
        np.testing.assert_array_equal(cy, y)
        np.testing.assert_array_equal(cnoise, noise)


def _preprocessor():
    """The micro_speech preprocessor's signal operators: {custom code: (options, constant inputs)}."""
    import tflite

    m = tflite.Model.GetRootAsModel((AUDIO / "audio_preprocessor_int8.tflite").read_bytes(), 0)
    sg, out = m.Subgraphs(0), {}
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = m.OperatorCodes(op.OpcodeIndex()).CustomCode()
        if code:
            consts = []
            for j in op.InputsAsNumpy():
                tt = sg.Tensors(int(j))
                data = m.Buffers(tt.Buffer()).DataAsNumpy()
                if not isinstance(data, int):
                    consts.append(data.view(NP[tt.Type()]).copy())
            out[code.decode()] = (flexbuffers.Loads(op.CustomOptionsAsNumpy().tobytes()), consts)
    return out


@pytest.mark.parametrize("kind", EDGES)
def test_pcan_and_log(ck, kind):
    rng = np.random.default_rng(23 + len(kind))
    lut = _preprocessor()["SignalPCAN"][1][0]
    hi = {"silence": 1, "full_scale": 1 << 31, "clipping": 1 << 32}.get(kind, 1 << 20)
    x, noise = (rng.integers(0, hi, 40, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    noise[:3] = [0, 1, 2]                           # the table's first entries, read directly
    for shift in (6, 0, 12):
        want = run_tflm([t((40,), U32), t((40,), U32), t(lut.shape, I16, lut), t((40,), U32)], "SignalPCAN",
                        [0, 1, 2], [3], {"snr_shift": shift}, [[x, noise]])[0][0]
        got = twins.pcan(x, noise, lut, shift)
        np.testing.assert_array_equal(got, want)
        y = np.zeros(40, np.uint32)
        c_call(ck, "edgec_signal_pcan_u32", 40, x, noise, lut, shift, y)
        np.testing.assert_array_equal(y, got)
    for scale, bits in ((64, 3), (1 << 15, 0), (1, 12)):
        want = run_tflm([t((40,), U32), t((40,), I16)], "SignalFilterBankLog", [0], [1],
                        {"input_correction_bits": bits, "output_scale": scale}, [[x]])[0][0]
        got = twins.filter_bank_log(x, scale, bits)
        np.testing.assert_array_equal(got, want)
        y = np.zeros(40, np.int16)
        c_call(ck, "edgec_signal_filter_bank_log_u32", 40, x, scale, bits, y)
        np.testing.assert_array_equal(y, got)


# ---- the micro_speech preprocessor on real audio ----------------------------------------------------------------
def frames_of(name: str) -> np.ndarray:
    """The preprocessor's inputs for one of the example's .wav files: 30 ms windows every 20 ms (micro_speech)."""
    with wave.open(str(AUDIO / name)) as f:
        a = np.frombuffer(f.readframes(f.getnframes()), np.int16)
    return np.stack([a[i:i + 480] for i in range(0, a.size - 480 + 1, 320)])


def features_int8(log_features: np.ndarray) -> np.ndarray:
    """The model's builtin int32 tail after SignalFilterBankLog: (x * 256 + 333) / 666 (truncating) - 128, clipped
    to int8."""
    v = log_features.astype(np.int64) * 256 + 333
    return np.clip(np.sign(v) * (np.abs(v) // 666) - 128, -128, 127).astype(np.int8)


def chain(frames, ops, c=None) -> np.ndarray:
    """The preprocessor's signal operators in the model's order, by the twins (c None) or the C kernels, with the
    spectral subtraction's noise estimate kept from frame to frame."""
    (w,), fb, (lut,) = ops["SignalWindow"][1], ops["SignalFilterBank"][1], ops["SignalPCAN"][1]
    ss = ops["SignalFilterBankSpectralSubtraction"][0]
    noise, out = np.zeros(40, np.uint32), []
    cp = make("edgec_signal_spectral_subtraction_params", dict(ss, clamping=int(ss["clamping"])))
    tw, stw = kissfft.twiddles(512), kissfft.super_twiddles(512)
    rp = make("edgec_signal_rfft_params", dict(fft_length=512, input_length=480, frames=1))
    for f in frames:
        if c is None:
            x, bits = twins.fft_auto_scale(twins.window(f, w, 12))
            e = twins.energy(twins.rfft(x, 512), 5, 241)
            y, noise = twins.spectral_subtraction(twins.filter_bank_square_root(twins.filter_bank(e, *fb, 40), bits),
                                                  noise, ss)
            y = twins.filter_bank_log(twins.pcan(y, noise, lut, 6), 64, 3)
        else:
            x, s, e = np.zeros(481, np.int16), np.zeros(514, np.int16), np.zeros(257, np.uint32)
            sums, u, y = np.zeros(40, np.uint64), np.zeros(40, np.uint32), np.zeros(40, np.int16)
            c_call(c, "edgec_signal_window_s16", 480, 480, 12, np.ascontiguousarray(f), w, x)
            c_call(c, "edgec_signal_fft_auto_scale_s16", 480, x, x)
            bits = int(x[480])
            c.lib.edgec_signal_rfft_s16(ctypes.byref(rp), ptr(x), ptr(tw), ptr(stw), ptr(np.zeros(1024, np.int16)),
                                        ptr(s))
            c_call(c, "edgec_signal_energy_s16", 257, 5, 241, s, e)
            c_call(c, "edgec_signal_filter_bank_u32", 40, e, *fb, sums)
            c_call(c, "edgec_signal_filter_bank_square_root_u64", 40, sums, bits, u)
            c.lib.edgec_signal_spectral_subtraction_u32(ctypes.byref(cp), ptr(u), ptr(noise), ptr(u))
            c_call(c, "edgec_signal_pcan_u32", 40, u, noise, lut, 6, u)
            c_call(c, "edgec_signal_filter_bank_log_u32", 40, u, 64, 3, y)
        out.append(features_int8(y))
    return np.stack(out)


@pytest.mark.parametrize("wav", ["yes_1000ms.wav", "no_1000ms.wav", "silence_1000ms.wav", "noise_1000ms.wav"])
def test_micro_speech_preprocessor_on_real_audio(ck, wav):
    from tflite_micro.python.tflite_micro import runtime

    frames = frames_of(wav)
    interp = runtime.Interpreter.from_bytes((AUDIO / "audio_preprocessor_int8.tflite").read_bytes(), arena_size=1 << 20)
    want = []
    for f in frames:                                # one interpreter: its noise estimate carries over
        interp.set_input(f.reshape(1, 480), 0)
        interp.invoke()
        want.append(np.asarray(interp.get_output(0)).copy())
    want = np.stack(want)
    ops = _preprocessor()
    np.testing.assert_array_equal(chain(frames, ops), want)
    np.testing.assert_array_equal(chain(frames, ops, ck), want)
    assert len(np.unique(want)) > (1 if wav.startswith("silence") else 20)    # real features, not a constant
