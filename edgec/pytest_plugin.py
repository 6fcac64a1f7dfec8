"""edgec's pytest plugin (registered through the `pytest11` entry point: `pip install edgec` is enough).

Command-line options (or the same names in the ini file: edgec_board, edgec_port, edgec_build_dir):
    --edgec-board BOARD      board the fixtures build for and run on (default: the project settings' board,
                             [tool.edgec] / edgec.toml in the rootdir or above, else host)
    --edgec-port PORT        serial port of a flashed real board (emulated and host boards need none)
    --edgec-build-dir DIR    where builds are kept between sessions (default: pytest's cache folder)

Fixtures (session-scoped factories):
    edgec_build(model, calib, **quant_options) -> build folder, built once and then reused, keyed by a hash
        of the model, calibration set, board and options (edgec.testing.build_cached)
    edgec_device(model, calib, **quant_options) -> edgec.testing.ModelDevice, started once per session:
        .run(x) .reference(x) .float_model(x) .latency(x) .profile(x) .report
    edgec_board -> the board name in use

    def test_bit_exact(edgec_device):
        dut = edgec_device("model.onnx", "calib.npz")
        assert (dut.run(x).int8 == dut.reference(x).int8).all()

The plugin imports nothing heavy until a test asks for a fixture.
"""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser) -> None:
    group = parser.getgroup("edgec", "edgec on-device tests")
    group.addoption("--edgec-board", default=None, help="board the edgec fixtures build for (default: host)")
    group.addoption("--edgec-port", default=None, help="serial port of a flashed real board")
    group.addoption("--edgec-build-dir", default=None,
                    help="folder for the edgec fixtures' builds, reused across sessions (default: pytest's cache)")
    parser.addini("edgec_board", "default board of the edgec fixtures", default=None)
    parser.addini("edgec_port", "default serial port of the edgec fixtures", default=None)
    parser.addini("edgec_build_dir", "default build folder of the edgec fixtures", default=None)


def _setting(config, name: str):
    return config.getoption(f"--{name.replace('_', '-')}") or config.getini(name) or None


def pytest_report_header(config) -> str | None:
    board = _setting(config, "edgec_board")
    return f"edgec: board {board}" if board else None


@pytest.fixture(scope="session")
def edgec_board(pytestconfig) -> str:
    board = _setting(pytestconfig, "edgec_board")
    if board:
        return board
    from edgec import config

    project = _edgec_call(config.find, [Path(pytestconfig.rootpath)])
    return project.values.get("board") or "host"


@pytest.fixture(scope="session")
def edgec_settings():
    """The environment's settings (edgec/settings.py: cache, PlatformIO core, ...), read once per session."""
    from edgec.settings import Settings

    return _edgec_call(Settings.from_environment)


@pytest.fixture(scope="session")
def edgec_build(pytestconfig, edgec_board, edgec_settings):
    """edgec_build(model, calib, **quant_options) -> build folder (cached by a hash of its inputs)."""
    from edgec.testing import build_cached

    root = _setting(pytestconfig, "edgec_build_dir")
    if root is None:
        cache = getattr(pytestconfig, "cache", None)
        root = cache.mkdir("edgec-builds") if cache is not None else Path(pytestconfig.rootpath) / ".edgec-builds"
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rootpath = Path(pytestconfig.rootpath)

    def build(model, calib, **options) -> Path:
        model, calib = (p if Path(p).is_absolute() else rootpath / p for p in (model, calib))
        return _edgec_call(build_cached, model, calib, edgec_board, root, settings=edgec_settings, **options)
    return build


@pytest.fixture(scope="session")
def edgec_device(pytestconfig, edgec_build, edgec_settings):
    """edgec_device(model, calib, **quant_options) -> a running edgec.testing.ModelDevice, one per build."""
    from edgec.testing import ModelDevice

    port = _setting(pytestconfig, "edgec_port")
    devices: dict[Path, ModelDevice] = {}

    def get(model, calib, **options) -> ModelDevice:
        folder = edgec_build(model, calib, **options)
        if folder not in devices:
            devices[folder] = _edgec_call(ModelDevice, folder, port, edgec_settings)
        return devices[folder]
    yield get
    for dev in devices.values():
        dev.close()


def _edgec_call(fn, *args, **kwargs):
    """An EdgecError (bad model, no board...) fails the test with its one line, not edgec's traceback."""
    from edgec.errors import EdgecError

    try:
        return fn(*args, **kwargs)
    except EdgecError as e:
        pytest.fail(f"edgec: {e}", pytrace=False)
