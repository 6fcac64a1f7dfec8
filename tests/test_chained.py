"""edgec/quant/chained.py (the chain's integer reference) and edgec/bench/chained.py (`edgec bench` of a chained
build on labelled raw audio: float / reference / device accuracy, the profile's front-end share, the RAM split)."""
from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from edgec import api, pipeline
from edgec.errors import EdgecError
from edgec.quant import chained

TESTS = Path(__file__).resolve().parent
PRE, KWS = TESTS / "audio" / "audio_preprocessor_int8.tflite", TESTS / "corpus" / "tflm_micro_speech" / "model.tflite"
CLIPS = {"yes_1000ms.wav": 2, "no_1000ms.wav": 3, "silence_1000ms.wav": 0}


@pytest.fixture(scope="module")
def graphs():
    return pipeline.calibrate_model(PRE, None)[1].graph, pipeline.calibrate_model(KWS, None)[1].graph


def clips() -> tuple[np.ndarray, np.ndarray]:
    out = []
    for name in CLIPS:
        with wave.open(str(TESTS / "audio" / name)) as f:
            out.append(np.frombuffer(f.readframes(f.getnframes()), np.int16)[:16000])
    return np.stack(out), np.array(list(CLIPS.values()))


def test_table_maps_grids_or_copies_bytes(graphs):
    fe, net = graphs
    shape = chained.Chain(480, 320, 49, 40, 16000)
    t = chained.table(fe, net, shape)
    f, c = fe.tensors[fe.output], net.tensors[net.input]       # 1.0 / 0 and 0.1017 / -128
    q = np.arange(-128, 128)
    want = np.clip(np.round((q - f.zero_point) * f.scale / c.scale) + c.zero_point, -128, 127)
    np.testing.assert_array_equal(t, want)
    assert t[128] == c.zero_point and t[-1] == 127       # 0 -> the zero point; 127 * 1.0 beyond 0.1017 * 255
    np.testing.assert_array_equal(chained.table(fe, net, chained.Chain(480, 320, 49, 40, 16000, False)), q)


def test_check_refuses_mismatched_shapes(graphs):
    fe, net = graphs
    chained.check(fe, net, chained.Chain(480, 320, 49, 40, 16000), "m")
    with pytest.raises(EdgecError, match="not a stack of 48 rows"):
        chained.check(fe, net, chained.Chain(480, 320, 48, 40, 16000), "m")
    with pytest.raises(EdgecError, match="span 15840 samples; the clips have 15000"):
        chained.check(fe, net, chained.Chain(480, 320, 49, 40, 15000), "m")
    with pytest.raises(EdgecError, match="takes int8"):
        chained.check(net, net, chained.Chain(480, 320, 49, 40, 16000), "m")


def test_features_start_from_a_reset_front_end_and_carry_within_a_call(graphs):
    fe, _ = graphs
    x, _ = clips()
    shape = chained.Chain(480, 320, 49, 40, 16000)
    both = chained.features(fe, shape, x[:2])
    again = chained.features(fe, shape, x[1:2])               # the second clip alone: a fresh noise estimate
    np.testing.assert_array_equal(chained.features(fe, shape, x[:1]), both[:1])
    assert not np.array_equal(again[0], both[1])             # the noise estimate of clip 0 carried into clip 1


def test_clips_must_be_int16_values():
    with pytest.raises(EdgecError, match="int16 sample values"):
        chained.clips_int16(np.full((1, 4), 40000.0), "d")
    np.testing.assert_array_equal(chained.clips_int16(np.array([[1.4, -32768.0]]), "d"), [[1, -32768]])


@pytest.mark.sweep
@pytest.mark.parametrize("board", ["host", "qemu-cortex-m4"])
def test_build_and_bench_from_raw_audio(board, tmp_path):
    """`edgec build --frontend` then `edgec bench --profile` on labelled clips: device identical to the reference,
    the front end as layer 0 of the profile, the RAM split."""
    x, y = clips()
    data = tmp_path / "clips.npz"
    np.savez(data, x=x, y=y)
    api.build(KWS, data, board, tmp_path / "b", frontend=PRE, frontend_hop=320)
    r = api.bench(tmp_path / "b", data, profile=True, report_dir=tmp_path / "b")
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["accuracy"]["device"] == 1.0
    p = r["profile"]
    assert p["layers"][0]["name"] == "front end" and 0 < p["frontend_share"] < 1
    split = r["memory"]["split"]
    assert 0 < split["frontend"]["arena_bytes"] < split["model"]["arena_bytes"]    # 4,224 B: state kept too


@pytest.mark.sweep
def test_kws_audio_example_on_qemu_cortex_m4(tmp_path):
    """examples/kws_audio: espeak-ng words from raw audio to label on the emulated Cortex-M4, bit-exact."""
    ex = TESTS.parent / "examples" / "kws_audio"
    api.build(ex / "model.onnx", ex / "calib.npz", "qemu-cortex-m4", tmp_path / "b", frontend=PRE,
              frontend_hop=320)
    r = api.bench(tmp_path / "b", ex / "test_small.npz", profile=True)
    assert r["agreement"]["device_vs_reference"] == 1.0
    assert r["accuracy"]["device"] == r["accuracy"]["int8_reference"]
    assert r["profile"]["layers"][0]["name"] == "front end"
