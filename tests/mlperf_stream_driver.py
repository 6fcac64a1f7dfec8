"""Runs the MLCommons Tiny runner's UART streaming path (../shared/mlperf-runner/stream_wav_uart.py, unchanged)
against a sww01 firmware over an open pyserial port, then scores the detections with the runner's own
streaming_ww_utils.calc_detection_stats.  Only what the runner's __main__ does around get_features is done
here: the port is given (its discovery looks for USB devices), the module's `samplerate` global is set
(get_features prints it), and the samples are given as
int32: with NumPy 2 its byte swap of np.int16 samples, ((s & 0xFF) << 8), overflows int16 and prints negative
hex.  get_features writes temp_spec.npz into the current folder: call it from a scratch folder."""
from __future__ import annotations

import socket
import sys

import numpy as np


def run_stream(runner_dir, port, samples: np.ndarray, windows: list, rate: int = 16000) -> dict:
    """specgram (hops x 40 int8 features), activations (hops x 3) and the runner's tp/fn/fp counts."""
    sys.path.insert(0, str(runner_dir))
    try:
        import stream_wav_uart
        import streaming_ww_utils
    finally:
        sys.path.remove(str(runner_dir))
    sock = getattr(port, "_socket", None)
    if sock is not None:   # as tests/mlperf_runner_driver.py: no 40 ms delayed-ACK stall per command
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = np.asarray(samples).astype(np.int32)
    stream_wav_uart.samplerate = rate
    stream_wav_uart.reset_port(port)
    captured = stream_wav_uart.get_features(data, port, frame_size=512)
    activations = captured["activations"]
    hop_ms = 1000 * 512 // rate
    times = [0] + [int(k) * hop_ms for k in np.nonzero(activations[:, 0] > 115)[0] if k > 0]
    tp, fn, fp = streaming_ww_utils.calc_detection_stats(times, [list(w) for w in windows if w[0] < len(data) / rate])
    return {"specgram": captured["specgram"], "activations": activations, "tp": len(tp), "fn": len(fn), "fp": len(fp)}
