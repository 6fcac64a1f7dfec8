"""The integer reference of two chained models: an audio front end (a quantized graph taking one window of int16
samples and giving one row of int8 features, e.g. TFLite Micro's micro_speech preprocessor) run over a clip a
window every `hop` samples, its rows stacked as the classifier's input (through a 256-entry table that maps the
front end's int8 grid onto the classifier's input grid), then the classifier. What edgec's chained firmware
computes (edgec/codegen/chain.py writes its C), bit for bit.

The front end runs as a stream: a stateful front end (the spectral subtraction's noise estimate) carries its
state from window to window and from clip to clip, in the order the clips are given, as the device does; each
`Chain.features` call starts from the state the device starts from (zero) unless `carry` is given.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.quant import reference


@dataclass(frozen=True)
class Chain:
    """The shape of a chain: clips of `samples` int16 samples, `frames` windows of `window` samples every `hop`
    from the clip's start (the samples past the last window are not read), `features` int8 values a window."""
    window: int
    hop: int
    frames: int
    features: int
    samples: int
    requantize: bool = True      # False: the front end's int8 bytes are the classifier's input as they are

    @property
    def spanned(self) -> int:
        """The samples the windows span."""
        return self.window + self.hop * (self.frames - 1)


def check(frontend: Graph, classifier: Graph, chain: Chain, where: str) -> None:
    """The front end takes int16 windows of chain.window samples and gives int8 rows whose stack is the
    classifier's input, within clips of chain.samples."""
    fin, fout = frontend.tensors[frontend.input], frontend.tensors[frontend.output]
    if frontend.more_inputs or frontend.more_outputs or fin.dtype != "int16" or fout.dtype != "int8":
        raise EdgecError(f"{where}: a front end takes one int16 window of audio and gives one int8 row of features "
                         f"(TFLite Micro's audio preprocessor does); this one takes {fin.dtype} and gives {fout.dtype}")
    cin = classifier.tensors[classifier.input]
    if classifier.more_inputs or cin.dtype != "int8" or cin.size != chain.frames * chain.features:
        raise EdgecError(f"{where}: the classifier's input ({cin.size} {cin.dtype} values) is not a stack of "
                         f"{chain.frames} rows of {chain.features} int8 features")
    if chain.hop <= 0 or chain.spanned > chain.samples:
        raise EdgecError(f"{where}: {chain.frames} windows of {chain.window} samples every {chain.hop} span "
                         f"{chain.spanned} samples; the clips have {chain.samples}")


def table(frontend: Graph, classifier: Graph, chain: Chain) -> np.ndarray:
    """The 256 int8 values the classifier's input takes for the front end's int8 values -128..127: with
    chain.requantize, the feature dequantized with the front end's scale and zero point, quantized with the
    classifier's (rounding half to even, clamped; a float classifier edgec calibrated on the feature values);
    without, the identity (an int8 .tflite classifier trained on the front end's bytes, as TFLM's micro_speech
    feeds its KWS model)."""
    q = np.arange(-128, 128, dtype=np.float64)
    if not chain.requantize:
        return q.astype(np.int8)
    f, c = frontend.tensors[frontend.output], classifier.tensors[classifier.input]
    v = np.round((q - f.zero_point) * f.scale / c.scale) + c.zero_point
    return np.clip(v, -128, 127).astype(np.int8)


def clips_int16(x: np.ndarray, where: str) -> np.ndarray:
    """Audio clips as given in a data file (float values of int16 samples) -> int16 [N, samples]."""
    a = np.asarray(x, np.float64).reshape(len(x), -1)
    if a.size and (np.abs(a).max() > 32768 or not np.all(np.isfinite(a))):
        raise EdgecError(f"{where}: audio samples must be int16 values (-32768..32767); got values up to "
                         f"{np.abs(a).max():g}: give the clips as int16 sample values, not scaled floats")
    return np.clip(np.rint(a), -32768, 32767).astype(np.int16)


def features(frontend: Graph, chain: Chain, clips: np.ndarray, progress=None,
             state: reference.State | None = None) -> np.ndarray:
    """The front end over every window of every clip, in order: int8 [N, frames, features]. The front end's state
    is carried from window to window and clip to clip, from `state` (updated in place) or, None, from a reset
    (as a device after `<name>_reset()`)."""
    state = reference.State(frontend) if state is None else state
    out = np.zeros((len(clips), chain.frames, chain.features), np.int8)
    for i, a in enumerate(clips):
        for f in range(chain.frames):
            out[i, f] = reference.run(frontend, a[chain.hop * f:chain.hop * f + chain.window],
                                      state=state).reshape(-1)
        if progress:
            progress(i + 1)
    return out


def classifier_inputs(frontend: Graph, classifier: Graph, chain: Chain, feats: np.ndarray) -> np.ndarray:
    """Stacked int8 features -> the classifier's int8 inputs [N, frames * features] (through `table`)."""
    return table(frontend, classifier, chain)[feats.reshape(len(feats), -1).astype(np.int64) + 128]


def float_features(frontend: Graph, feats: np.ndarray) -> np.ndarray:
    """The front end's int8 features as the float values they stand for (what the float classifier takes)."""
    t = frontend.tensors[frontend.output]
    return ((feats.astype(np.float32) - t.zero_point) * np.float32(t.scale)).reshape(len(feats), -1)


def run(frontend: Graph, classifier: Graph, chain: Chain, clips: np.ndarray, progress=None) -> tuple:
    """The chained integer reference of every clip, in order from a reset front end: (int8 features
    [N, frames, features], the classifier's int8 outputs [N, outputs])."""
    feats = features(frontend, chain, clips, progress=progress)
    xq = classifier_inputs(frontend, classifier, chain, feats)
    return feats, np.stack([reference.run(classifier, x).reshape(-1) for x in xq])
