"""The KWS example's training features: TFLite Micro's micro_speech audio preprocessor
(tests/audio/audio_preprocessor_int8.tflite) over every clip, a 30 ms window every 20 ms (49 windows of 480
samples a one-second clip), 40 int8 features a window, run by TFLite Micro's interpreter (fast; edgec's NumPy
reference is bit-identical with it, tests/kernels/test_signal.py). One interpreter runs the clips of a set in
their order, its noise estimate carried from clip to clip as a device carries it (edgec's chained firmware
runs the front end as a stream too: edgec/chain.py).

    .venv/bin/python examples/kws_audio/features.py     # data/{train,test}.npz -> data/features.npz
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PRE = HERE.parents[1] / "tests" / "audio" / "audio_preprocessor_int8.tflite"
WINDOW, HOP, FRAMES = 480, 320, 49


def features(clips: np.ndarray) -> np.ndarray:
    """int16 [N, 16000] -> int8 [N, 49, 40], the clips run in order by one interpreter."""
    from tflite_micro.python.tflite_micro import runtime

    pre = runtime.Interpreter.from_bytes(PRE.read_bytes(), arena_size=1 << 20)
    out = np.zeros((len(clips), FRAMES, 40), np.int8)
    for i, a in enumerate(np.asarray(clips, np.int16)):
        for f in range(FRAMES):
            pre.set_input(a[HOP * f:HOP * f + WINDOW].reshape(1, WINDOW), 0)
            pre.invoke()
            out[i, f] = pre.get_output(0)
    return out


def main() -> None:
    data = HERE / "data"
    sets = {s: np.load(data / f"{s}.npz") for s in ("train", "test")}
    np.savez_compressed(data / "features.npz", **{f"x_{s}": features(d["x"]) for s, d in sets.items()},
                        **{f"y_{s}": d["y"] for s, d in sets.items()})


if __name__ == "__main__":
    main()
