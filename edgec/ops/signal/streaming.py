"""NumPy twins of TensorFlow Lite Micro's stateful streaming signal operators (SignalFramer, SignalStacker,
SignalDelay, SignalOverlapAdd), int16. TFLM keeps their samples in circular buffers in the operator's persistent
memory; the twins keep them as first-in first-out arrays in `state` (a dict the caller keeps between
invocations), which hold the same samples in the same order. Where TFLM leaves an output it did not fill (a
framer or stacker not yet holding a full frame: its valid flag false), edgec writes zeros."""
from __future__ import annotations

import numpy as np


def framer(x, frame_size: int, frame_step: int, prefill: bool, state: dict) -> tuple[np.ndarray, bool]:
    """x [outer, n_frames * frame_step] -> (frames [outer, n_frames, frame_size], valid)."""
    x = np.asarray(x, np.int16)
    outer, n = x.shape[0], x.shape[1] // frame_step
    if "fifo" not in state:
        state["fifo"] = [np.zeros(frame_size - frame_step if prefill else 0, np.int16) for _ in range(outer)]
    out, valid = np.zeros((outer, n, frame_size), np.int16), True
    for i in range(outer):
        fifo = state["fifo"][i]
        for f in range(n):
            fifo = np.concatenate([fifo, x[i, f * frame_step:(f + 1) * frame_step]])
            if fifo.size >= frame_size:
                out[i, f] = fifo[:frame_size]
                fifo = fifo[frame_step:]
            else:
                valid = False
        state["fifo"][i] = fifo
    return out, valid


def stacker(x, left: int, right: int, step: int, state: dict) -> tuple[np.ndarray, bool]:
    """One frame x [channels] -> (the stacked frames [channels * (left + right + 1)], valid): the first frame
    repeated left more times as padding."""
    x = np.asarray(x, np.int16).reshape(-1)
    ch = x.size
    fifo = np.concatenate([state.get("fifo", np.zeros(0, np.int16)), x])
    if not state.get("first"):
        fifo = np.concatenate([fifo] + [x] * left)
        state["first"] = True
    size = ch * (left + right + 1)
    if fifo.size >= size:
        out, valid = fifo[:size].copy(), True
        fifo = fifo[ch * step:]
    else:
        out, valid = np.zeros(size, np.int16), False
    state["fifo"] = fifo
    return out, valid


def delay(x, delay_length: int, state: dict) -> np.ndarray:
    """x [outer, frame] delayed by delay_length samples (zeros first)."""
    x = np.asarray(x, np.int16)
    outer, frame = x.shape
    line = state.setdefault("line", np.zeros((outer, delay_length), np.int16))
    z = np.concatenate([line, x], axis=1)
    state["line"] = z[:, frame:].copy()
    return z[:, :frame].copy()


def overlap_add(x, frame_step: int, state: dict) -> np.ndarray:
    """x [outer, n_frames, frame_size] -> [outer, n_frames * frame_step]: each frame added (saturating) onto the
    kept tail, frame_step samples out each frame."""
    x = np.asarray(x, np.int16)
    outer, n, size = x.shape
    buf = state.setdefault("buffer", np.zeros((outer, size), np.int16))
    out = np.zeros((outer, n * frame_step), np.int16)
    for i in range(outer):
        for f in range(n):
            buf[i] = np.clip(buf[i].astype(np.int32) + x[i, f], -32768, 32767).astype(np.int16)
            out[i, f * frame_step:(f + 1) * frame_step] = buf[i, :frame_step]
            buf[i] = np.concatenate([buf[i, frame_step:], np.zeros(frame_step, np.int16)])
    return out
