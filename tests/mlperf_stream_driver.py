"""Runs the MLCommons Tiny runner's UART streaming path (../shared/mlperf-runner/stream_wav_uart.py, unchanged)
against a sww01 firmware at a pyserial URL, then scores the detections with the runner's own
streaming_ww_utils.calc_detection_stats.  Only what the runner's __main__ does around get_features is done
here: the port is the URL (its discovery looks for USB devices), the module's `samplerate` global is set
(get_features prints it), and the samples are given as int32: with NumPy 2 its byte swap of np.int16 samples,
((s & 0xFF) << 8), overflows int16 and prints negative hex.  Run in a scratch folder (it writes temp_spec.npz):

    python mlperf_stream_driver.py RUNNER_DIR URL WAV TRUTH.json SECONDS OUT.npz
"""
import json
import socket
import sys
import wave

import numpy as np

runner_dir, url, wav, truth, seconds, out = sys.argv[1:7]
sys.path.insert(0, runner_dir)
import serial  # noqa: E402
from serial.urlhandler import protocol_socket  # noqa: E402

import stream_wav_uart  # noqa: E402
import streaming_ww_utils  # noqa: E402

_open_socket = protocol_socket.Serial.open


def open_without_nagle(self):      # as tests/mlperf_runner_driver.py: no 40 ms delayed-ACK stall per command
    _open_socket(self)
    self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


protocol_socket.Serial.open = open_without_nagle
with wave.open(wav, "rb") as w:
    rate, channels = w.getframerate(), w.getnchannels()
    data = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, channels)[:, 0]
data = data[:int(float(seconds) * rate) // 512 * 512].astype(np.int32)   # whole hops: the runner sends a
# partial last frame as a short db load, which the reference firmware mixes with the previous hop's samples
stream_wav_uart.samplerate = rate
port = serial.serial_for_url(url, baudrate=115200, timeout=0.1)
stream_wav_uart.reset_port(port)
captured = stream_wav_uart.get_features(data, port, frame_size=512)
port.close()
activations = captured["activations"]
hop_ms = 1000 * 512 // rate
times = [0] + [int(k) * hop_ms for k in np.nonzero(activations[:, 0] > 115)[0] if k > 0]
windows = [w for w in json.load(open(truth))[0]["detection_windows"] if w[0] < len(data) / rate]
tp, fn, fp = streaming_ww_utils.calc_detection_stats(times, windows)
np.savez(out, specgram=captured["specgram"], activations=activations, tp=len(tp), fn=len(fn), fp=len(fp))
