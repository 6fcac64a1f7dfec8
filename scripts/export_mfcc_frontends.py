"""Export the float MFCC front ends of two training pipelines to ONNX with their own exporters, for
edgec/ops/signal/mfcc.py (tests/audio/frontends/; provenance.json there records versions and hashes).

    /work/venv-tf/bin/python scripts/export_mfcc_frontends.py tf        # tf.signal through tf2onnx
    /work/torch-venv/bin/python scripts/export_mfcc_frontends.py torch  # torchaudio through torch.onnx (dynamo)

Both take one second of 16 kHz audio (float32 [1, 16000], samples in [-1, 1]) and give 49 frames of 10 MFCCs
from 40 mel bands (30 ms windows every 20 ms, a 512-point FFT, 20 Hz - 4 kHz), the MLPerf Tiny KWS features.
tf.signal: stft -> abs -> linear_to_mel_weight_matrix -> log(x + 1e-6) -> the DCT of
mfccs_from_log_mel_spectrograms as its matrix (tf2onnx 1.17 cannot convert that function: its DCT is an RFFT
whose output is sliced, and `Real`; the matrix product is checked equal to it here, to 1e-4).
torchaudio: transforms.MFCC (power spectrogram, mel, 10 log10 with top_db 80, orthonormal DCT), center=False.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "audio" / "frontends"
SR, N, FRAME, STEP, FFT, MELS, MFCCS = 16000, 16000, 480, 320, 512, 40, 10


def export_tf() -> dict:
    import numpy as np
    import tensorflow as tf
    import tf2onnx

    mel = tf.signal.linear_to_mel_weight_matrix(MELS, FFT // 2 + 1, SR, 20.0, 4000.0)
    eye = tf.eye(MELS)[None]            # the DCT's matrix: mfccs_from_log_mel_spectrograms of the unit vectors
    dct = tf.signal.mfccs_from_log_mel_spectrograms(eye)[0, :, :MFCCS]

    mel_c, dct_c = mel.numpy(), dct.numpy()      # (as constants of the graph, not captured inputs)

    def features(pcm, exact: bool):
        mel, dct = tf.constant(mel_c), tf.constant(dct_c)
        spec = tf.abs(tf.signal.stft(pcm, frame_length=FRAME, frame_step=STEP, fft_length=FFT))
        logmel = tf.math.log(tf.tensordot(spec, mel, 1) + 1e-6)
        return tf.signal.mfccs_from_log_mel_spectrograms(logmel)[..., :MFCCS] if exact else tf.tensordot(logmel, dct, 1)

    x = tf.random.uniform([1, N], -0.5, 0.5, seed=1)
    gap = float(tf.reduce_max(tf.abs(features(x, True) - features(x, False))))
    assert gap < 1e-4, gap

    @tf.function(input_signature=[tf.TensorSpec([1, N], tf.float32, name="audio")])
    def mfcc(pcm):
        return tf.identity(features(pcm, False), name="mfcc")

    tf2onnx.convert.from_function(mfcc, input_signature=mfcc.input_signature, opset=17,
                                  output_path=str(OUT / "tf_signal_mfcc.onnx"))
    return {"file": "tf_signal_mfcc.onnx", "exporter": f"tf2onnx {tf2onnx.__version__}",
            "framework": f"tensorflow {tf.__version__}", "dct_matrix_vs_mfccs_from_log_mel": gap,
            "numpy": np.__version__}


def export_torch() -> dict:
    import torch
    import torchaudio

    m = torchaudio.transforms.MFCC(sample_rate=SR, n_mfcc=MFCCS, melkwargs=dict(
        n_fft=FFT, win_length=FRAME, hop_length=STEP, n_mels=MELS, f_min=20.0, f_max=4000.0, center=False))
    torch.onnx.export(m, (torch.zeros(1, N),), str(OUT / "torchaudio_mfcc.onnx"), input_names=["audio"],
                      output_names=["mfcc"], opset_version=18, dynamo=True, external_data=False)
    return {"file": "torchaudio_mfcc.onnx", "exporter": f"torch.onnx (dynamo) {torch.__version__}",
            "framework": f"torchaudio {torchaudio.__version__}"}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    record = export_tf() if sys.argv[1:] == ["tf"] else export_torch()
    record["sha256"] = hashlib.sha256((OUT / record["file"]).read_bytes()).hexdigest()
    prov = OUT / "provenance.json"
    entries = json.loads(prov.read_text()) if prov.exists() else {}
    entries[record["file"]] = record
    prov.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    print(record)


if __name__ == "__main__":
    main()
