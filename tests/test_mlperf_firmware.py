"""MLPerf Tiny energy mode (EEMBC: the UART behind the energy monitor at 9,600 baud, a timestamp GPIO pulse
instead of m-lap-us) and the host twins of the firmware's encodings and result formats.

On the emulated Cortex-M4 the timestamp pin is a stub reporting each level change with the tick counter
through semihosting (the emulator's stdout, outside the UART protocol): the test sees the pulses.  On the
real reference board (nucleo-l4r5zi) the pin is the profile's [mlperf] timestamp_pin, compiled with the
vendor framework (STM32duino) -- that test needs the session fixture `stm32duino` (tests/conftest.py), which
installs the framework into the PlatformIO core.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

from conftest import EXAMPLES, edgec, assert_clean_error
from edgec import api
from edgec.bench import mlperf_run
from edgec.targets import mlperf_encoding as enc
from edgec.device.mlperf import open_mlperf
from edgec.quant import artifact, reference
from edgec.fixedpoint import scheme

DIGITS = EXAMPLES / "digits_cnn"
PIN_RE = re.compile(r"EDGEC_TIMESTAMP_PIN ([01]) (\d+)")


def test_energy_mode_pulses_the_timestamp_pin_on_the_emulated_board(tmp_path):
    out = tmp_path / "b"
    rep = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "qemu-cortex-m4", out, protocol="mlperf",
                    mlperf_model="digits01", mlperf_mode="energy")
    assert rep["mlperf"]["mode"] == "energy" and rep["mlperf"]["baud"] == 9600
    _, board, firmware = api.load_build(out)
    graph = artifact.load_graph(out)
    x = np.load(DIGITS / "test.npz")["x"][:1].reshape(graph.input_onnx_shape)
    xq = scheme.quantize_input(graph.tensors[graph.input], x)
    with open_mlperf(board, firmware, baud=9600) as dut:
        dut.client.load(xq.tobytes())
        r = dut.client.infer(3, 1)
        deadline = time.monotonic() + 5
        while len(PIN_RE.findall("\n".join(dut.process_output()))) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        pins = [(int(a), int(b)) for a, b in PIN_RE.findall("\n".join(dut.process_output()))]
    assert not any(line.startswith("m-lap-us") for line in r["lines"]), r["lines"]
    assert r["lines"][:4] == ["m-warmup-start-1", "m-warmup-done", "m-infer-start-3", "m-infer-done"], r["lines"]
    want = enc.results_line(reference.run(graph, xq), graph.tensors[graph.output].scale,
                            graph.tensors[graph.output].zero_point, enc.RAW)
    assert r["lines"][4] == want
    # boot + the two of the infer: each a low level held >= 10 us of board time, then released
    assert [level for level, _ in pins] == [0, 1] * 3, pins
    hold = board.tick_hz // 100000
    assert all(pins[i + 1][1] - pins[i][1] >= hold for i in range(0, 6, 2)), pins
    assert pins[4][1] > pins[3][1]           # the timed runs lie between the two pulses


def test_energy_mode_needs_a_timestamp_pin(tmp_path):
    p = edgec("build", DIGITS / "model.onnx", "--calib", DIGITS / "calib.npz", "--board", "host", "--protocol",
              "mlperf", "--mlperf-mode", "energy", "-o", tmp_path / "b")
    assert_clean_error(p, "cannot run MLPerf energy mode")
    assert not (tmp_path / "b").exists()


@pytest.mark.sweep     # the suite's time (a fresh clone compiles the L4R5ZI's framework, ~30 s): by default
# tests/test_real_boards.py compiles this energy-mode main.cpp for the L4R5ZI against an Arduino stub, and the
# energy harness runs on the emulated Cortex-M4 above
def test_energy_firmware_builds_for_nucleo_l4r5zi_with_stm32duino(stm32duino, tmp_path):
    rep = api.build(DIGITS / "model.onnx", DIGITS / "calib.npz", "nucleo-l4r5zi", tmp_path / "b",
                    protocol="mlperf", mlperf_model="digits01", mlperf_mode="energy")
    assert rep["firmware"] and rep["mlperf"]["timestamp_pin"] == "D7" and rep["mlperf"]["baud"] == 9600
    main = (tmp_path / "b" / "project" / "src" / "main.cpp").read_text()
    assert "digitalWrite(D7, level ? HIGH : LOW)" in main and "Serial.begin(9600)" in main


def test_result_formats_are_the_reference_firmwares():
    assert enc.fixed3(0.0625) == "0.062" and enc.fixed3(0.1875) == "0.188"   # printf: ties to even
    assert enc.trunc3(np.float32(0.99609375)) == "0.996" and enc.trunc3(np.float32(0.0039)) == "0.003"
    q = np.array([127, -128], np.int8)
    assert enc.results_line(q, 1 / 256, -128, enc.OFFICIAL["vww01"]) == "m-results-[0.996,0.000,]"
    assert enc.results_line(q, 1 / 256, -128, enc.OFFICIAL["kws01"]) == "m-results-[0.996,0.000]"
    x = np.arange(4, dtype=np.float32)
    score = enc.anomaly_score(np.array([0, 1, 2, 3], np.int8), 1.0, -1, x.tobytes())
    assert score == np.float32(1.0)


def test_official_encodings_round_trip_to_the_model_input():
    kws = enc.OFFICIAL["kws01"]
    q_ref = np.arange(-128, 128, dtype=np.int8)
    raw = q_ref.tobytes()
    # the model's input quantized like the reference model's: the bytes come back unchanged
    assert np.array_equal(enc.to_model_input(raw, kws, kws.scale, kws.zero_point), q_ref)
    pixels = np.arange(256, dtype=np.uint8).tobytes()
    assert np.array_equal(enc.to_model_input(pixels, enc.OFFICIAL["ic01"], 1.0, -128),
                          (np.arange(256) - 128).astype(np.int8))
    assert enc.encode(np.arange(256, dtype=np.float32), enc.OFFICIAL["ic01"]) == pixels
    nhwc = np.arange(12, dtype=np.uint8).tobytes()         # 2x2 pixels, 3 channels
    chw = enc.to_model_input(nhwc, enc.OFFICIAL["ic01"], 1.0, 0, channels=3)
    assert chw.tolist() == [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]


def test_window_sizing_and_scores():
    assert mlperf_run.iterations_for(100_000, 10.0) == 110      # 0.1 s per inference: 11 s window
    assert mlperf_run.iterations_for(3e6, 10.0) == 4
    y = np.array([0, 0, 1, 1])
    assert mlperf_run.auc_ovr(y, np.array([[0.1], [0.4], [0.35], [0.8]])) == 0.75
    assert mlperf_run.accuracy_percent(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 0])) == 100.0


def test_the_runners_40_character_name_limit_is_only_for_mlperf_firmware(tmp_path):
    """A model whose C name is longer than 40 characters builds edgec's own firmware; only an MLPerf firmware
    (whose runner reads the name) is refused, naming --mlperf-model."""
    from edgec.errors import EdgecError
    from edgec.settings import Settings
    from edgec.targets.boards import load_board
    from edgec.targets.firmware import write_project
    name = "a_model_with_a_rather_long_descriptive_name_v2"
    assert len(name) > 40
    lib = tmp_path / "lib"
    lib.mkdir()
    for ext in (".c", ".h"):
        (lib / f"{name}{ext}").write_text("/* model */\n")
    core = Settings.from_environment().platformio_home
    project = write_project(tmp_path / "p", load_board("host"), lib, name, core=core)
    assert (project / "platformio.ini").is_file()
    with pytest.raises(EdgecError, match="MLPerf model name"):
        write_project(tmp_path / "q", load_board("host"), lib, name, "mlperf", mlperf={"model": name}, core=core)
