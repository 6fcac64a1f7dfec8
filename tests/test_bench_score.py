"""The user's --score function contained: its result checked (numbers, finite), its sys.exit an error line."""
from __future__ import annotations

import numpy as np
import pytest

from edgec.bench import score
from edgec.errors import EdgecError


@pytest.mark.parametrize("body, needle", [
    ("return {'acc': 'high'}", "'acc' is str"),
    ("return {'acc': [1, 2]}", "'acc' is list"),
    ("return float('nan')", "nan"),
    ("return {'acc': float('inf')}", "'acc' is inf"),
    ("return True", "bool"),
    ("import sys; sys.exit(0)", "exited"),
    ("raise SystemExit(3)", "exited"),
])
def test_score_results_are_contained(tmp_path, body, needle):
    """A score function's result is checked (numbers, finite) and its sys.exit is an error, not edgec's exit
    (a sys.exit(0) made failing gates exit 0; NaN wrote invalid JSON; a str value crashed)."""
    f = tmp_path / "metric.py"
    f.write_text(f"def score(outputs, labels, x):\n    {body}\n")
    fn = score.load_score(f"{f}:score")
    with pytest.raises(EdgecError, match=needle):
        score.call_score(f"{f}:score", fn, np.zeros((2, 3)), None, np.zeros((2, 3)))


def test_score_module_exiting_on_import_is_an_error(tmp_path):
    f = tmp_path / "metric.py"
    f.write_text("import sys\nsys.exit(0)\ndef score(o, y, x):\n    return 1.0\n")
    with pytest.raises(EdgecError, match="exited"):
        score.load_score(f"{f}:score")


def test_score_numbers_pass(tmp_path):
    f = tmp_path / "metric.py"
    f.write_text("import numpy as np\ndef score(o, y, x):\n    return {'a': np.float32(0.5), 'n': 3}\n")
    assert score.call_score("s", score.load_score(f"{f}:score"), np.zeros(2), None, np.zeros(2)) == \
        {"a": 0.5, "n": 3.0}
