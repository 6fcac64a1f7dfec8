"""The build folder as later stages read it (edgec/targets/build_folder.py): a damaged report is one line."""
from __future__ import annotations

import json

import pytest

from edgec.errors import EdgecError
from edgec.targets.build_folder import REPORT, load_build


@pytest.mark.parametrize("drop", ["model_hash", "board"])
def test_a_report_missing_a_field_is_a_damaged_report_not_a_key_error(drop, tmp_path):
    """A build-report.json without model_hash used to load and then crash (KeyError) when the device answered."""
    report = {"board": "host", "model": "m", "model_hash": "abc", "firmware": "firmware"}
    del report[drop]
    (tmp_path / REPORT).write_text(json.dumps(report))
    (tmp_path / "firmware").write_text("")
    with pytest.raises(EdgecError, match="damaged build report"):
        load_build(tmp_path)
