"""Per-layer kernel variants (the speed variants' records in edgec/ops/, chosen by edgec/ops/select.py),
`--optimize speed|size`, and the tuning log that
`edgec tune` writes and later builds read (edgec/lower/tuning_records.py, edgec/tune.py). The variants' bit-exactness:
tests/kernels/test_fast_sweep.py (each variant alone on random shapes) and tests/kernels/test_fast_models.py
(generated models, which build on the speed variants by default)."""
from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, assert_clean_error, edgec
from edgec import api, tune
from edgec.lower import tuning_records
from edgec.errors import EdgecError
from edgec.targets.build_folder import REPORT

DIGITS = EXAMPLES / "digits_cnn"
MODEL, CALIB = DIGITS / "model.onnx", DIGITS / "calib.npz"


def _build(tmp_path, name, **kw):
    out = tmp_path / name
    report = api.build(MODEL, CALIB, "qemu-cortex-m4", out, firmware=False, tuning_log=tmp_path / "none.json", **kw)
    return report, (out / "model" / f"{report['model']}.c").read_text()


def test_optimize_speed_and_size(tmp_path):
    """speed (the default) runs the 3x3 convolutions on the window4 variant (the Cortex-M4 has the DSP extension),
    whose int16 weights cost flash (reported);
    size keeps every op on its generic kernel and costs nothing."""
    speed, speed_c = _build(tmp_path, "speed")
    size, size_c = _build(tmp_path, "size", optimize="size")
    assert speed["optimize"]["mode"] == "speed" and speed["optimize"]["variants"].get("window4", 0) >= 1
    assert "edgec_conv2d_window4_" in speed_c and "edgec_conv2d_im2col_s8(" not in speed_c
    assert speed["optimize"]["extra_constant_bytes"] > 0
    assert set(size["optimize"]["variants"]) == {"generic"} and size["optimize"]["extra_constant_bytes"] == 0
    assert "edgec_conv2d_window4_" not in size_c and "edgec_conv2d_im2col_s8(" in size_c


def test_tuning_log_record_chooses_the_variant(tmp_path):
    """A record for (board, layer signature) overrides the default variant; another board's record does not."""
    default, _ = _build(tmp_path, "default")
    layers = default["optimize"]["layers"]
    assert layers and all(v["variant"] == v["variants"][1] for v in layers.values())     # the first speed variant
    first = sorted(layers)[0]
    sig = layers[first]["signature"]
    log = tmp_path / "log.json"
    tuning_records.save(log, {tuning_records.key("qemu-cortex-m4", sig): {"variant": "generic"},
                      tuning_records.key("host", layers[sorted(layers)[-1]]["signature"]): {"variant": "generic"}})
    out = tmp_path / "tuned"
    report = api.build(MODEL, CALIB, "qemu-cortex-m4", out, firmware=False, tuning_log=log)
    got = report["optimize"]["layers"]
    assert got[first]["variant"] == "generic" and report["optimize"]["tuned_layers"] == 1
    assert all(got[n]["variant"] == layers[n]["variant"] for n in got if n != first)


def test_damaged_tuning_log_is_one_line(tmp_path):
    log = tmp_path / "log.json"
    log.write_text("{not json")
    with pytest.raises(EdgecError, match="not an edgec tuning log"):
        tuning_records.load(log)
    proc = edgec("build", MODEL, "--calib", CALIB, "--board", "host", "-o", tmp_path / "b", "--tuning-log", log)
    assert_clean_error(proc, str(log), "tuning log")
    assert not (tmp_path / "b").exists()


def _fake_board(monkeypatch, exact_rounds=(0, 1)):
    """Builds without firmware and a bench that reads the build's variants: a layer costs 100 units on the generic
    kernel, 80 on a speed variant, except the first layer (120); rounds outside exact_rounds are not bit-exact."""
    real_build = api.build
    rounds = []

    def build(model, calib, board, out, **kw):
        rounds.append(out)
        return real_build(model, calib, board, out, **dict(kw, firmware=False))

    def bench(out, data, **kw):
        layers = json.loads((out / REPORT).read_text())["optimize"]["layers"]
        first = sorted(layers)[0]
        rows = [{"name": n, "kind": "conv2d", "units": 100 if v["variant"] == "generic" else (120 if n == first else 80)}
                for n, v in layers.items()]
        exact = 1.0 if len(rounds) - 1 in exact_rounds else 0.5
        return {"agreement": {"device_vs_reference": exact}, "profile": {"layers": rows, "unit": "units"}}
    monkeypatch.setattr(tune.api, "build", build)
    monkeypatch.setattr(tune.api, "bench", bench)
    return rounds


def test_tune_keeps_the_fastest_variant_and_a_build_reuses_it(tmp_path, monkeypatch):
    """edgec tune's bookkeeping on a stand-in board: per layer the fastest variant goes into the log (keyed by
    board + signature); `build --tune` then finds every layer there and measures nothing; a build uses them."""
    log = tmp_path / "tuning.json"
    rounds = _fake_board(monkeypatch)
    result = tune.tune(MODEL, CALIB, "qemu-cortex-m4", tuning_log=log)
    assert len(rounds) == 4 < tune.rounds()    # at most 4 variants a layer here (generic + 3), a round each
    records = json.loads(log.read_text())["records"]
    first = sorted(r["name"] for r in result["layers"])[0]
    chosen = {r["name"]: r["variant"] for r in result["layers"]}
    assert len(chosen) >= 2 and len(records) >= 1 and all(k.startswith("qemu-cortex-m4/") for k in records)
    assert chosen[first] == "generic" and all(v != "generic" for n, v in chosen.items() if n != first)
    gains = {r["name"]: r["gain"] for r in result["layers"]}
    assert gains[first] == 0 and all(abs(g - 0.2) < 1e-9 for n, g in gains.items() if n != first)
    text = tune.table(result)
    assert all(v in text for v in chosen.values()) and "window" in text

    monkeypatch.setattr(tune, "tune", lambda *a, **k: pytest.fail("measured again"))
    assert "nothing measured" in tune.summary(MODEL, CALIB, "qemu-cortex-m4", tuning_log=log, only_missing=True)
    report = api.build(MODEL, CALIB, "qemu-cortex-m4", tmp_path / "again", firmware=False, tuning_log=log)
    assert report["optimize"]["tuned_layers"] == len(chosen)
    assert {n: v["variant"] for n, v in report["optimize"]["layers"].items()} == chosen


def test_tune_discards_a_round_that_is_not_bit_exact(tmp_path, monkeypatch):
    _fake_board(monkeypatch, exact_rounds=(0,))
    result = tune.tune(MODEL, CALIB, "qemu-cortex-m4", tuning_log=tmp_path / "log.json")
    assert result["discarded_rounds"] == [1, 2, 3]     # the model's layers have at most 4 variants: 4 rounds
    assert all(r["variant"] == "generic" and set(r["units"]) == {"generic"} for r in result["layers"])


@pytest.mark.sweep
def test_tune_on_the_host_board(tmp_path):
    """The real thing on the host board (about 50 s: a build and bench per round): every layer measured on each
    of its variants, the fastest one recorded."""
    log = tmp_path / "tuning.json"
    result = tune.tune(MODEL, CALIB, "host", tuning_log=log, samples=1)
    records = json.loads(log.read_text())["records"]
    assert result["layers"] and all(k.startswith("host/") for k in records)
    for row in result["layers"]:
        assert len(row["units"]) >= 2 and "generic" in row["units"]
        assert row["units"][row["variant"]] == min(row["units"].values())


def test_speed_falls_back_to_the_generic_kernels_when_its_weights_do_not_fit(tmp_path):
    """A board with room for the generic kernels' weights but not for the widened ones: the default build
    succeeds on the generic kernels and says so; --optimize size on a board too small for either still fails."""
    from edgec.targets.boards import load_board
    size, _ = _build(tmp_path, "size", optimize="size")
    speed, _ = _build(tmp_path, "speed")
    room = (size["memory"]["fit_estimate"]["flash"]["total"] + speed["memory"]["fit_estimate"]["flash"]["total"]) // 2
    text = load_board("qemu-cortex-m4").path.read_text()
    board = tmp_path / "mid.toml"
    board.write_text(text.replace('name = "qemu-cortex-m4"', 'name = "mid-flash"')
                     .replace(f"flash_bytes = {load_board('qemu-cortex-m4').flash_bytes}", f"flash_bytes = {room}"))
    assert load_board(str(board)).flash_bytes == room
    said = []
    report = api.build(MODEL, CALIB, str(board), tmp_path / "mid", firmware=False, log=said.append,
                       tuning_log=tmp_path / "none.json")
    assert report["optimize"]["mode"] == "size" and set(report["optimize"]["variants"]) == {"generic"}
    assert any("do not fit board mid-flash" in s for s in said)
    board.write_text(board.read_text().replace(f"flash_bytes = {room}", "flash_bytes = 8192"))
    with pytest.raises(EdgecError, match="does not fit board mid-flash"):
        api.build(MODEL, CALIB, str(board), tmp_path / "tiny", firmware=False, tuning_log=tmp_path / "none.json")


def test_concurrent_tunes_keep_each_others_records_and_odd_records_are_refused(tmp_path, monkeypatch):
    """Two tunes that read the log before either saved: both records are kept (a save merges with the log
    under its lock); a record edgec did not write is one line, not a crash in a later build."""
    import fcntl
    import os
    log = tmp_path / "tuning.json"
    assert tuning_records.load(log) == {} and tuning_records.load(log) == {}       # both tunes start
    rec = {"variant": "blocked", "kind": "Conv", "units": {"generic": 2, "blocked": 1}, "unit": "ns"}
    tuning_records.save(log, {"host/a": rec})
    held = []
    real = os.replace

    def replace(src, dst, *a, **k):        # while the log is replaced, another tune cannot take its lock
        fd = os.open(tmp_path / ".tuning.json.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return real(src, dst, *a, **k)
    monkeypatch.setattr(os, "replace", replace)
    tuning_records.save(log, {"host/b": rec})
    monkeypatch.undo()
    assert set(tuning_records.load(log)) == {"host/a", "host/b"} and held == [True]
    for odd in ('"blocked"', '{"units": 3}', '{"variant": 7}'):
        log.write_text(f'{{"version": 1, "records": {{"host/z": {odd}}}}}')
        with pytest.raises(EdgecError, match="not an edgec tuning log"):
            tuning_records.load(log)
