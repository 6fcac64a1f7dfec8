"""The build summary's constants (edgec/codegen/constants.py): weights, biases/requantization and lookup tables
reported apart, adding up to every constant array the generated C declares; int4 halves the weight tensors
(the digits example, --optimize size and speed) while the residual Add's tables stay what they are."""
from __future__ import annotations

import re

import pytest

from ckernels import declared_bytes
from conftest import REPO
from edgec.bench import report
from edgec.codegen import cmodel, constants
from edgec.pipeline import calibrate_model, schedule_and_plan
from edgec.quant import ptq

DIGITS = REPO / "examples" / "digits_cnn"


@pytest.fixture(scope="module")
def digits():
    """{(weights, optimize): (graph, plan)} for the digits example."""
    out = {}
    for weights in ("int8", "int4"):
        q = calibrate_model(DIGITS / "model.onnx", DIGITS / "calib.npz",
                            ptq.QuantOptions(sensitivity_samples=0, weights=weights))[1]
        for optimize in ("size", "speed"):
            out[weights, optimize] = schedule_and_plan(q.graph, optimize=optimize)
    return out


@pytest.mark.parametrize("weights,optimize", [("int8", "size"), ("int4", "speed")])
def test_breakdown_adds_up_to_the_arrays_in_the_generated_c(digits, tmp_path, weights, optimize):
    graph, plan = digits[weights, optimize]
    cmodel.generate(graph, plan, tmp_path, "digits")
    declared = declared_bytes((tmp_path / "digits.c").read_text())
    b = constants.breakdown(graph)
    assert b["total"] == sum(declared.values()) == b["weights"] + b["biases_requantization"] + \
        b["lookup_tables"] + b["other"]
    # the residual Add's two 256-entry rescaling tables are the lookup tables, nothing else
    tables = {n: v for n, v in declared.items() if re.search(r"_lut\d$", n)}
    assert b["lookup_tables"] == sum(tables.values()) == 2 * 256 * 4
    weights_c = sum(v for n, v in declared.items() if re.search(r"_(fw|weights4?)$", n))
    assert b["weights"] == weights_c


def test_int4_weights_are_under_55_percent_of_int8_and_the_tables_do_not_move(digits):
    for optimize in ("size", "speed"):
        b8, b4 = (constants.breakdown(digits[w, optimize][0]) for w in ("int8", "int4"))
        assert b4["weights"] <= 0.55 * b8["weights"], (optimize, b8, b4)
        assert b4["lookup_tables"] == b8["lookup_tables"] > 0
        assert b4["biases_requantization"] > 0 and b4["total"] < b8["total"]


def test_summary_and_report_name_each_kind():
    b = {"weights": 5080, "biases_requantization": 1180, "lookup_tables": 2048, "other": 0, "total": 8308}
    text = constants.describe(b)
    assert text == ("constants 8,308 bytes in flash: weights 5,080, biases and requantization 1,180, "
                    "lookup tables 2,048")
    rows = report.memory_rows({"weights_bytes": 8308, "constants": b})
    assert ("constants: weight tensors", "5,080 B") in [r[:2] for r in rows]
    assert ("constants: lookup tables", "2,048 B") in [r[:2] for r in rows]
    line = report._constants_text({"weights_bytes": 8308, "constants": b})
    assert "weights 5,080 B" in line and "lookup tables 2,048 B" in line


def test_unknown_array_keys_count_as_other_never_dropped():
    assert constants.kind_of("some_future_array") == "other"
    assert [constants.kind_of(k) for k in ("weights4", "rq", "lut1", "table3", "sigmoid", "offsets")] == \
        ["weights", "biases_requantization", "lookup_tables", "lookup_tables", "lookup_tables", "other"]
