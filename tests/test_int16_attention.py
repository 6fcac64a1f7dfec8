"""A float transformer's rows in int16 (edgec/quant/int16.py `attention_default`, ptq.attention_choice): in a model
with a LayerNorm and a Softmax, the LayerNorm, the row-wise MatMuls, the attention's MatMuls of two activations, the
Softmax and the residual Add run 16x8 (the kernels ORT A16W8 files run, h46-t16), by default only where that gains
more than fixes.ROWS_GAIN_DB (a bit) on the calibration samples; the generated C bit-exact with the reference (gcc; clang
with sanitizers)."""
from __future__ import annotations

import re

import numpy as np
from onnx import helper

from conftest import check_generated_c_gcc_and_clang, make_model, save, snr_against_ort
from edgec import api
from edgec.quant import fixes, int16

T, C = 8, 16
FIXED = dict(sensitivity_samples=0, bias_correction=False, unseen_ranges=False)   # the recipe's other choices made


def _block():
    """x[1, T, C] -> LayerNorm -> q, k, v (MatMul over rows) -> softmax(q k^T / sqrt C) v -> + x -> LayerNorm ->
    MatMul to 4 values a row: one pre-norm attention block and a head, its residual stream a few large channels
    beside small ones (the int8 grid of the stream is set by the large ones, the norm after it scales all alike)."""
    r = np.random.default_rng(11)
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, name="norm"),
             helper.make_node("MatMul", ["n", "wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["n", "wk"], ["k"], name="k"),
             helper.make_node("MatMul", ["n", "wv"], ["v"], name="v"),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Mul", ["s", "scale"], ["s2"], name="scale"),
             helper.make_node("Softmax", ["s2"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="mix"),
             helper.make_node("Add", ["x", "o"], ["h"], name="residual"),
             helper.make_node("LayerNormalization", ["h", "g", "b"], ["hn"], axis=-1, name="norm2"),
             helper.make_node("MatMul", ["hn", "wh"], ["y"], name="head")]
    inits = {"g": r.uniform(0.5, 1.5, C), "b": r.normal(0, 0.1, C), "scale": np.array(C ** -0.5),
             "wh": r.normal(0, C ** -0.5, (C, 4)), **{w: r.normal(0, C ** -0.5, (C, C)) for w in ("wq", "wk", "wv")}}
    return make_model(nodes, ("x", [1, T, C]), ("y", [1, T, 4]), inits, opset=17)


def _inputs(rng, n):
    x = rng.normal(0, 0.3, (n, T, C))
    x[..., :2] *= 20          # two large channels
    return x.astype(np.float32)


def _gains(res) -> tuple[float, float]:
    return tuple(map(float, re.search(r"samples (-?[\d.]+) dB int8, (-?[\d.]+) dB int16", res.attention).groups()))


def test_a_transformer_blocks_rows_stay_int8_when_they_gain_less_than_a_bit(tmp_path):
    """The rows take twice the activation bytes: a gain of 2 dB (this block's) is not worth it by default."""
    res = api.calibrate(save(_block(), tmp_path), _inputs(np.random.default_rng(12), 16), **FIXED)
    s8, s16 = _gains(res)
    assert s8 + fixes.MIN_GAIN_DB < s16 <= s8 + fixes.ROWS_GAIN_DB, res.attention
    assert res.attention.startswith("transformer rows int8") and res.options.attention_int16 is False, res.attention
    assert not any(t.dtype == "int16" for t in res.graph.tensors.values())


def test_a_transformer_blocks_rows_run_int16_where_it_gains(tmp_path, monkeypatch):
    monkeypatch.setattr(fixes, "ROWS_GAIN_DB", fixes.MIN_GAIN_DB)     # (this small block gains 2 dB, not a bit)
    path = save(_block(), tmp_path)
    rng = np.random.default_rng(12)
    calib = _inputs(rng, 16)
    res = api.calibrate(path, calib, **FIXED)
    s8, s16 = _gains(res)
    assert s16 > s8 + fixes.MIN_GAIN_DB and res.attention.startswith("transformer rows int16"), res.attention
    assert res.options.attention_int16 is True
    g = res.graph
    kinds16 = {op.kind for op in g.ops if g.tensors[op.output].dtype == "int16"}
    assert {"layer_norm", "fully_connected_rows", "matmul", "softmax", "add"} <= kinds16, kinds16
    assert g.tensors[g.output].dtype == "int8"          # the port stays int8
    int8 = api.calibrate(path, calib, **FIXED, attention_int16=False)
    assert int8.attention == "" and not any(t.dtype == "int16" for t in int8.graph.tensors.values())
    x = _inputs(rng, 8)
    snr = snr_against_ort(path, x[:, None])
    assert snr(res) > snr(int8) + 1, (snr(res), snr(int8))
    check_generated_c_gcc_and_clang(g, x[:, None], tmp_path)


def test_only_a_model_with_a_layer_norm_and_a_softmax_has_transformer_rows(tmp_path):
    path = save(_block(), tmp_path)
    calib = _inputs(np.random.default_rng(13), 16)
    g = api.calibrate(path, calib, **FIXED, attention_int16=False).graph
    chosen = {op.kind for op in g.ops if op.name in int16.attention_default(g)}      # (the Add: int16.mark's
    assert {"layer_norm", "fully_connected_rows", "matmul", "softmax"} <= chosen <= set(int16.ATTENTION_KINDS), chosen
    plain = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], ("x", [1, T, C]),
                       ("y", [1, T, C]), {"w": np.eye(C)})
    r = api.calibrate(save(plain, tmp_path, "plain.onnx"), calib, **FIXED)
    assert int16.attention_default(r.graph) == [] and r.attention == ""


PLAIN = dict(FIXED, method="minmax", equalize=False, saturation=False)     # no recipe to measure: quicker


def _budget_ram(path, calib, rows: bool, budget: int = 1 << 20) -> dict:
    return api.inspect_board(path, "qemu-cortex-m4", calib, ram_budget=budget, **PLAIN, attention_int16=rows)


def test_int16_rows_that_do_not_fit_the_ram_fall_back_to_int8_in_one_line(tmp_path, monkeypatch, capsys):
    """The rows the calibration set chose int16 (twice their activations' bytes) that do not fit --ram-budget (or the
    board's RAM): build, export and inspect --board quantize the model again with int8 rows and say so in one line;
    forced with --int16-attention the build fails naming --int8-attention; --int8-attention fits."""
    from edgec import cli
    monkeypatch.setattr(fixes, "ROWS_GAIN_DB", fixes.MIN_GAIN_DB)     # (this small block gains 2 dB, not a bit)
    path = save(_block(), tmp_path)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=_inputs(np.random.default_rng(12), 16))
    wide, narrow = _budget_ram(path, calib, True), _budget_ram(path, calib, False)
    assert narrow["budget_ram_bytes"] < wide["budget_ram_bytes"], (narrow, wide)
    budget = (narrow["budget_ram_bytes"] + wide["budget_ram_bytes"]) // 2      # only the int8 rows fit
    assert not _budget_ram(path, calib, True, budget)["fits"]
    said = []
    info = api.inspect_board(path, "qemu-cortex-m4", calib, ram_budget=budget, **PLAIN, log=said.append)
    assert info["fits"] and info["arena_bytes"] <= narrow["arena_bytes"] < wide["arena_bytes"], info
    fell = [s for s in said if "not int16" in s]
    assert len(fell) == 1 and fell[0].startswith("transformer rows int8, not int16") and "\n" not in fell[0], said
    assert f"--ram-budget of {budget:,} B" in fell[0]
    report = api.build(path, calib, "qemu-cortex-m4", tmp_path / "b", firmware=False, ram_budget=budget, **PLAIN)
    assert report["quantization"]["int16_choices"]["attention"] == fell[0]
    assert report["memory"]["arena_bytes"] == info["arena_bytes"]
    args = ["export", str(path), "--calib", str(calib), "--board", "qemu-cortex-m4", "--format", "c", "--ram-budget",
            str(budget), "--sensitivity-samples", "0", "--bias-correction", "off", "--no-unseen-ranges", "--method", "minmax",
            "--no-equalize", "--no-saturation", "-o"]
    assert cli.main(args + [str(tmp_path / "e16"), "--int16-attention"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("edgec: error:") and "--int16-attention: --int8-attention halves" in last, err
    assert not (tmp_path / "e16").exists()
    assert cli.main(args + [str(tmp_path / "e8"), "--int8-attention"]) == 0
    assert "not int16" not in capsys.readouterr().err
    assert cli.main(args + [str(tmp_path / "e")]) == 0
    err = capsys.readouterr().err
    assert "transformer rows int8, not int16 as the calibration set chose" in err, err
    assert (tmp_path / "e").is_dir()
