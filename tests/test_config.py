"""Project settings (edgec/config.py): [tool.edgec] in pyproject.toml or edgec.toml beside the model, the
command line overriding them, `edgec config` naming each setting's source, and bad files as one-line errors."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from conftest import EXAMPLES, assert_clean_error
from edgec import cli, config

CANCER = EXAMPLES / "cancer_conv1d"


def run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's project: the model in models/, a pyproject.toml at the top, the current folder elsewhere."""
    (tmp_path / "models").mkdir()
    for f in ("model.onnx", "calib.npz"):
        shutil.copy(CANCER / f, tmp_path / "models" / f)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.edgec]\nboard = "host"\n'
                                             'method = "percentile"\npercentile = 99.9\nint16 = "conv1"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return tmp_path


def settings(lines: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in lines.splitlines()[1:]:
        key, value, source = line.split(None, 2)
        rows[key] = (value, source)
    return rows


def test_pyproject_settings_and_command_line_overrides(project, capsys):
    model = project / "models" / "model.onnx"
    r = run(capsys, "config", model, "--percentile", "99.5", "--max-latency", "3ms")
    assert r.returncode == 0 and r.stdout.startswith(f"project settings: {project / 'pyproject.toml'}")
    rows = settings(r.stdout)
    assert rows["board"] == ("host", f"pyproject.toml ({project / 'pyproject.toml'})")
    assert rows["method"][0] == "percentile" and rows["method"][1].startswith("pyproject.toml")
    assert rows["percentile"] == ("99.5", "command line") and rows["max-latency"] == ("3ms", "command line")
    # not set: the default recipe chooses (edgec/quant/fixes.py)
    assert rows["equalize"][0] == "(not" and rows["equalize"][1].endswith("default") and rows["int16"][0] == '["conv1"]'

    args = cli.parser().parse_args(argv := ["export", str(model), "--calib", "c.npz", "--format", "c", "-o", "x",
                                            "--method", "minmax"])
    effective = config.apply(args, cli.parser, argv)
    assert (args.board, args.method, args.percentile, args.int16) == ("host", "minmax", 99.9, ["conv1"])
    assert effective["method"][1] == config.COMMAND_LINE and cli._quant_options(args).int16 == ("conv1",)


def test_edgec_toml_beside_the_model_wins(project, capsys):
    (project / "models" / "edgec.toml").write_text('board = "qemu-cortex-m4"\nbias_correction = "float"\n')
    rows = settings(run(capsys, "config", project / "models" / "model.onnx").stdout)
    assert rows["board"][0] == "qemu-cortex-m4" and rows["bias-correction"][0] == "float"
    assert rows["method"][0] == "(not" and rows["method"][1].endswith("default")   # the pyproject.toml further up is not merged


def test_no_board_anywhere_and_bad_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert_clean_error(run(capsys, "build", CANCER / "model.onnx", "--calib", CANCER / "calib.npz"),
                       "no board", "--board")
    cfg = tmp_path / "edgec.toml"
    for text, needle in (('bord = "host"\n', "unknown edgec setting 'bord'"),
                         ('method = "median"\n', "choose one of"),
                         ('percentile = "lots"\n', "'lots' is not a number"),
                         ("equalize = 1\n", "true or false"),
                         ("board = [\n", "not valid TOML")):
        cfg.write_text(text)
        assert_clean_error(run(capsys, "config"), str(cfg), needle)


def test_settings_force_the_default_recipes_choices(tmp_path, monkeypatch):
    """equalize = false and bias-correction = "off" in the project settings turn the default recipe's fixes off
    (edgec/quant/fixes.py), as --no-equalize and --bias-correction off do on the command line."""
    (tmp_path / "edgec.toml").write_text('equalize = false\nbias-correction = "off"\nmethod = "minmax"\n')
    monkeypatch.chdir(tmp_path)
    args = cli.parser().parse_args(argv := ["calibrate", str(tmp_path / "model.onnx"), "--calib", "c.npz"])
    config.apply(args, cli.parser, argv)
    o = cli._quant_options(args)
    assert (o.equalize, o.bias_correction, o.method) == (False, False, "minmax")
    argv = ["calibrate", str(tmp_path / "model.onnx"), "--calib", "c.npz", "--equalize"]
    args = cli.parser().parse_args(argv)
    config.apply(args, cli.parser, argv)
    assert cli._quant_options(args).equalize is True               # the command line wins


def _model_in(folder):
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(CANCER / "model.onnx", folder / "model.onnx")
    return folder / "model.onnx"


def test_settings_stop_at_the_projects_root_and_never_come_from_a_shared_folder(tmp_path, monkeypatch, capsys):
    """A settings file in a shared parent (a world-writable folder like /tmp), above a repository root, or
    above a `root = true` marker is not read: `edgec config` says no settings are in effect."""
    monkeypatch.chdir(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "edgec.toml").write_text('board = "qemu-cortex-m4"\nmethod = "percentile"\n')
    shared.chmod(0o1777)
    for layout, needle in (("shared/project", None), ("repo/project", ".git"), ("marked/project", "root")):
        top = tmp_path / layout.split("/")[0]
        model = _model_in(tmp_path / layout)
        if needle == ".git":
            (top / "edgec.toml").write_text('board = "qemu-cortex-m4"\n')
            (model.parent / ".git").mkdir()
        elif needle == "root":
            (top / "edgec.toml").write_text('board = "qemu-cortex-m4"\n')
            (model.parent / "edgec.toml").write_text("root = true\n")
        r = run(capsys, "config", model)
        assert r.returncode == 0, r.stderr
        rows = settings(r.stdout)
        assert rows["board"][1].split() == ["set)", "default"] and rows["method"][1].split() == ["set)", "default"], \
            (layout, r.stdout)
    monkeypatch.chdir(shared / "project")                 # the current folder's parents: the same rule
    assert settings(run(capsys, "config").stdout)["board"][1].split() == ["set)", "default"]


def test_board_and_port_only_from_the_users_own_files(tmp_path, monkeypatch, capsys):
    """A group- or world-writable settings file (or one another user owns) may not choose the board or the
    port: one line naming the file; other settings from it still apply."""
    monkeypatch.chdir(tmp_path)
    model = _model_in(tmp_path / "project")
    cfg = model.parent / "edgec.toml"
    cfg.write_text('board = "host"\nmethod = "percentile"\n')
    cfg.chmod(0o664)
    assert_clean_error(run(capsys, "config", model), str(cfg), "sets board", "chmod go-w")
    cfg.write_text('method = "percentile"\n')
    assert settings(run(capsys, "config", model).stdout)["method"][0] == "percentile"
    cfg.write_text('board = "host"\n')
    cfg.chmod(0o644)
    assert settings(run(capsys, "config", model).stdout)["board"][0] == "host"
    import os
    if os.getuid() == 0:                  # root can give the file away: another user's file
        os.chown(cfg, 4242, 4242)
        assert_clean_error(run(capsys, "config", model), "is not yours")


_VALUES = ['"host"', '"qemu-cortex-m4"', '"../../etc/passwd"', '""', "0", "-1", "1e400", "nan", "inf", "true", "false",
           "[1, 2]", '["conv1", 3]', "{ a = 1 }", '"\\u0000"', '"' + "x" * 5000 + '"', "2024-01-01", "1.5"]


@pytest.mark.parametrize("seed", range(60))
def test_random_settings_files_are_taken_or_one_line(seed, tmp_path, monkeypatch, capsys):
    """Random edgec.toml files (every settable key, the root marker and unknown keys, with values of every TOML
    type, some not TOML at all): `edgec config` and a host build either run or stop with one clean line naming
    the file; never a traceback."""
    import random
    rng = random.Random(seed)
    keys = [*config.SETTABLE, "root", "port", "bord", "[tool.edgec]"]
    lines = []
    for _ in range(rng.randrange(1, 5)):
        key = rng.choice(keys)
        lines.append(key if key.startswith("[") else f"{key} = {rng.choice(_VALUES)}")
    if rng.random() < 0.15:
        lines.append(rng.choice(["= 3", "board = [", "\x00", "a.b.c = 1", "board = 'x'\nboard = 'y'"]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "edgec.toml").write_text("\n".join(lines) + "\n")
    for args in (["config"], ["inspect", CANCER / "model.onnx"]):
        r = run(capsys, *args)
        if r.returncode != 0:
            assert_clean_error(r)
            assert "edgec.toml" in r.stderr or "board" in r.stderr, r.stderr
