"""The one writer (edgec/outputs.py) attacked through every writing option of every command: each option
gets the same hostile targets (a user's file, one that imitates edgec's format, a symlink to a user's file,
a dangling symlink, a FIFO, a folder where a file is expected, the --data file, the model, the build's own
model.onnx; for folders: a user's folder, one with a fake build-report.json and a fake marker, a symlink to a
folder, a file, the inputs' folder).  Every attack is refused with one line before any work, and the target
and everything around it are left exactly as they were (no temporary or .partial file either)."""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager

import pytest

from conftest import EXAMPLES
from edgec import api, cli, outputs
from edgec.outputs import MARKER

CANCER = EXAMPLES / "cancer_conv1d"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Inputs, a host build with firmware, and a copy of it made to look like an MLPerf build."""
    root = tmp_path_factory.mktemp("hostile")
    inputs = root / "inputs"
    inputs.mkdir()
    for f in ("model.onnx", "calib.npz", "test.npz"):
        shutil.copy(CANCER / f, inputs / f)
    build = root / "build"
    api.build(inputs / "model.onnx", inputs / "calib.npz", "host", build)
    ml = root / "mlbuild"
    shutil.copytree(build, ml, symlinks=True)
    report = json.loads((ml / "build-report.json").read_text())
    report.update(protocol="mlperf", mlperf={"model": "kws01", "baud": 115200})
    (ml / "build-report.json").write_text(json.dumps(report))
    (root / "dataset" / "kws01").mkdir(parents=True)
    (root / "dataset" / "kws01" / "y_labels.csv").write_text("a.bin,12,1\n")
    (root / "dataset" / "kws01" / "a.bin").write_bytes(bytes(490))
    core = root / "core"                          # a PlatformIO core where nucleo-f446re's packages are installed
    for kind, name in (("platforms", "ststm32"), ("packages", "framework-arduinoststm32"),
                       ("packages", "toolchain-gccarmnoneeabi")):
        (core / kind / name).mkdir(parents=True)
        (core / kind / name / ".piopm").write_text(json.dumps({"type": kind[:-1], "name": name, "version": "1.0.0"}))
        (core / kind / name / "README").write_text(name)
    (core / "platforms" / "ststm32" / "platform.json").write_text(json.dumps({
        "name": "ststm32", "frameworks": {"arduino": {"package": "framework-arduinoststm32"}},
        "packages": {"toolchain-gccarmnoneeabi": {"type": "toolchain"},
                     "framework-arduinoststm32": {"type": "framework", "optional": True}}}))
    return root


class _MlperfClient:
    """An MLPerf device that answers every command (the writers are what is tested, not the link)."""
    def name(self):
        return "fake"

    def profile(self):
        return {"model": "kws01"}

    def load(self, data):
        pass

    def infer(self, n, warmups, timeout=None):
        return {"results": [1.0] + [0.0] * 11, "elapsed_us": 1000}


@pytest.fixture
def runs_to_the_end(world, monkeypatch):
    """`packages bundle` and `mlperf` able to reach their writing (a core holding the board's packages, a device
    that answers): a refusal is then the writer's, not a missing package's or a silent device's."""
    from edgec.bench import mlperf_run

    @contextmanager
    def fake_device(*_args, **_kw):
        yield type("Device", (), {"client": _MlperfClient()})()
    monkeypatch.setattr(mlperf_run, "open_mlperf", fake_device)
    monkeypatch.setenv("EDGEC_PLATFORMIO_HOME", str(world / "core"))


def _snapshot(*folders):
    """Every path under the folders with what it is: type, link target, content (files), mode."""
    seen = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if os.path.islink(p):
                    seen[p] = ("link", os.readlink(p))
                elif os.path.isfile(p):
                    with open(p, "rb") as f:
                        seen[p] = ("file", f.read(), st.st_mode)
                else:
                    seen[p] = ("other", st.st_mode)
    return seen


def file_targets(world, here):
    """name -> a path holding something that is not edgec's output file."""
    user = here / "user.txt"
    user.write_text("years of work")
    fake_json = here / "fake.json"
    fake_json.write_text('{"edgec_version": "0.1.0", "mine": true}')
    fake_html = here / "fake.html"
    fake_html.write_text('<html><meta name="generator" content="edgec">mine</html>')
    link = here / "link.txt"
    link.symlink_to(user)
    dangling = here / "dangling.txt"
    dangling.symlink_to(here / "nowhere" / "x")
    fifo = here / "fifo"
    os.mkfifo(fifo)
    folder = here / "folder.xml"
    folder.mkdir()
    (folder / "inside").write_text("mine")
    return {"user's file": user, "imitating JSON": fake_json, "imitating HTML": fake_html,
            "symlink to a user's file": link, "dangling symlink": dangling, "FIFO": fifo,
            "folder where a file is expected": folder, "the --data file": world / "inputs" / "test.npz",
            "the model": world / "inputs" / "model.onnx", "the build's own model.onnx": world / "build" / "model.onnx",
            "the build's report": world / "build" / "build-report.json", "a name over 255 bytes": here / ("x" * 300)}


def folder_targets(world, here, inside=("notes.txt",)):
    """name -> a path edgec may not replace (or write its `inside` files into)."""
    users, fake = here / "users", here / "fake"
    for folder in (users, fake):
        for name in inside:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("mine")
    (fake / "thesis.tex").write_text("mine")
    (fake / "build-report.json").write_text('{"edgec_version": "0.1.0"}')
    (fake / "edgec-export.json").write_text('{"edgec_version": "0.1.0"}')
    (fake / MARKER).write_text(json.dumps({"written_by": "edgec", "edgec_version": "0.1.0", "kind": "build"}))
    link = here / "link"
    link.symlink_to(users, target_is_directory=True)
    afile = here / "afile"
    afile.write_text("mine")
    return {"user's folder": users, "fake edgec folder": fake, "symlink to a folder": link, "a file": afile,
            "the inputs' folder": world / "inputs", "a name over 255 bytes": here / ("x" * 300)}


def _data(w):
    return ["--data", w / "inputs" / "test.npz"]


def _model(w):
    return [w / "inputs" / "model.onnx", "--calib", w / "inputs" / "calib.npz"]


FILE_WRITERS = {
    "calibrate -o": lambda w, t: ["calibrate", *_model(w), "--sensitivity-samples", "0", "-o", t],
    "bench --json": lambda w, t: ["bench", w / "build", *_data(w), "--no-report", "--json", t],
    "bench --junit": lambda w, t: ["bench", w / "build", *_data(w), "--no-report", "--min-agreement", "1",
                                   "--junit", t],
    "bench matrix --json": lambda w, t: ["bench", w / "build", w / "build", *_data(w), "--no-report", "--json", t],
    "bench --units 2 --junit": lambda w, t: ["bench", w / "build", "--units", "2", *_data(w), "--no-report",
                                             "--junit", t],
    "packages bundle -o": lambda w, t: ["packages", "bundle", "--board", "nucleo-f446re", "-o", t],
    "tune --tuning-log": lambda w, t: ["tune", *_model(w), "--board", "host", "--tuning-log", t],
    "build --tuning-log": lambda w, t: ["build", *_model(w), "--board", "host", "-o", w / "never",
                                        "--tuning-log", t],
}
FOLDER_WRITERS = {
    "build -o": lambda w, t: ["build", *_model(w), "--board", "host", "-o", t],
    "export -o": lambda w, t: ["export", *_model(w), "--board", "host", "--format", "c", "-o", t],
}
REPORT_WRITERS = {      # they write their files into the folder: a user's file of that name is the target
    "bench --report": (lambda w, t: ["bench", w / "build", *_data(w), "--report", t],
                       ("report.html", "bench-report.json")),
    "bench matrix --report": (lambda w, t: ["bench", w / "build", w / "build", *_data(w), "--report", t],
                              ("matrix-report.html", "matrix-report.json")),
    "mlperf --results": (lambda w, t: ["mlperf", w / "mlbuild", "--dataset", w / "dataset", "--results", t],
                         ("kws01/accuracy/results.txt",)),
}


def _refused(capsys, argv, world, here, what):
    before = _snapshot(world, here)
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("edgec: error:") and err.count("\n") == 1 and "Traceback" not in err, \
        (what, code, err)
    assert _snapshot(world, here) == before, what      # nothing changed, nothing left behind


@pytest.mark.parametrize("writer", sorted(FILE_WRITERS))
def test_every_file_option_refuses_every_hostile_target(writer, world, tmp_path, capsys, monkeypatch,
                                                        runs_to_the_end):
    monkeypatch.chdir(tmp_path)
    for name, target in file_targets(world, tmp_path).items():
        _refused(capsys, FILE_WRITERS[writer](world, target), world, tmp_path, f"{writer} on {name}")


@pytest.mark.parametrize("writer", sorted(FOLDER_WRITERS))
def test_every_folder_option_refuses_every_hostile_target(writer, world, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, target in folder_targets(world, tmp_path).items():
        _refused(capsys, FOLDER_WRITERS[writer](world, target), world, tmp_path, f"{writer} on {name}")


@pytest.mark.parametrize("writer", sorted(REPORT_WRITERS))
def test_every_report_folder_refuses_every_hostile_target(writer, world, tmp_path, capsys, monkeypatch,
                                                          runs_to_the_end):
    monkeypatch.chdir(tmp_path)
    argv, inside = REPORT_WRITERS[writer]
    targets = folder_targets(world, tmp_path, inside)
    targets.pop("the inputs' folder")            # writing new files beside the inputs is fine
    for name, target in targets.items():
        _refused(capsys, argv(world, target), world, tmp_path, f"{writer} on {name}")
    if writer == "mlperf --results":             # a link or a file on the way down is refused too
        parent = tmp_path / "down"
        parent.mkdir()
        (parent / "kws01").symlink_to(targets["user's folder"], target_is_directory=True)
        _refused(capsys, argv(world, parent), world, tmp_path, f"{writer} through a linked model folder")


@pytest.mark.parametrize("kind", ["user's file", "symlink to a user's file", "dangling symlink", "FIFO",
                                  "folder where a file is expected"])
def test_the_failed_build_log_beside_the_output_is_never_a_users(kind, world, tmp_path, capsys, monkeypatch):
    """OUT.build-failed.log: checked before the build, never written through a link or over a user's file."""
    monkeypatch.chdir(tmp_path)
    targets = file_targets(world, tmp_path)
    log = tmp_path / "out.build-failed.log"
    os.rename(targets[kind], log)
    _refused(capsys, FOLDER_WRITERS["build -o"](world, tmp_path / "out"), world, tmp_path, kind)


def test_edgecs_own_outputs_are_replaced_with_the_umasks_permissions(world, tmp_path, capsys, monkeypatch):
    """The positive side: what edgec wrote it may write again (signed files, marked folders), atomically, with
    the permissions the umask gives; the signature survives what readers need (plain JSON)."""
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o027)
    try:
        argv = ["bench", world / "build", *_data(world), "--report", tmp_path / "rep", "--json",
                tmp_path / "b.json", "--junit", tmp_path / "j.xml", "--min-agreement", "1"]
        for _ in range(2):
            assert cli.main([str(a) for a in argv]) == 0, capsys.readouterr().err
        for p in (tmp_path / "b.json", tmp_path / "j.xml", tmp_path / "rep" / "report.html"):
            assert outputs.is_edgec_file(p) and p.stat().st_mode & 0o777 == 0o640, p
        assert json.loads((tmp_path / "b.json").read_text())["edgec_version"]
        out = tmp_path / "lib"
        for _ in range(2):
            assert cli.main([str(a) for a in FOLDER_WRITERS["export -o"](world, out)]) == 0
        assert out.stat().st_mode & 0o777 == 0o750 and outputs.is_edgec_folder(out)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    finally:
        os.umask(old)
    capsys.readouterr()


def test_signatures_and_markers_cannot_be_made_by_a_file_name(tmp_path):
    """A marker or signature is verified against the content: edited, truncated or copied-in files fail."""
    ours = outputs.write_json(tmp_path / "a.json", {"x": 1})
    assert outputs.is_edgec_file(ours)
    ours.write_text(ours.read_text().replace('"x": 1', '"x": 2'))
    assert not outputs.is_edgec_file(ours)
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a").write_text("x")
    outputs.mark(folder, "build")
    assert outputs.is_edgec_folder(folder)
    (folder / "users-file").write_text("mine")
    assert not outputs.is_edgec_folder(folder)
    marker = json.loads((folder / MARKER).read_text())
    marker["entries"].append("users-file")
    (folder / MARKER).write_text(json.dumps(marker))       # an edited marker is not a valid one
    assert not outputs.is_edgec_folder(folder)


def test_the_dataset_firmware_folder_is_never_a_users(world, tmp_path):
    """bench --dataset-in-flash rebuilds BUILD/dataset-firmware (emptying its src/): a link put there to a
    user's folder is refused, the user's src/ kept."""
    from edgec.bench import dataset_flash
    from edgec.errors import EdgecError
    from edgec.settings import Settings
    from edgec.targets.build_folder import load_build
    build = tmp_path / "build"
    shutil.copytree(world / "build", build, symlinks=True)
    users = tmp_path / "users"
    (users / "src").mkdir(parents=True)
    (users / "src" / "main.c").write_text("years of work")
    (build / dataset_flash.FOLDER).symlink_to(users, target_is_directory=True)
    report, board, _ = load_build(build)
    with pytest.raises(EdgecError, match="link or a file"):
        dataset_flash.build(build, board, report, 4, Settings.from_environment())
    assert (users / "src" / "main.c").read_text() == "years of work"


def test_what_edgec_writes_is_strict_json(tmp_path):
    """NaN or an infinity in a result (a --score metric, a latency of nothing) used to be written as NaN:
    invalid JSON for every strict reader. They are null now."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    path = outputs.write_json(tmp_path / "r.json", {"score": float("nan"), "per": [1.5, float("inf")],
                                                    "nested": {"x": -float("inf")}})
    assert strict(path.read_text())["per"] == [1.5, None] and outputs.is_edgec_file(path)


def test_bundle_and_mlperf_results_write_a_new_target(world, tmp_path, capsys, runs_to_the_end):
    """The control of the attacks above: given a new path, `packages bundle -o` and `mlperf --results` run to
    the end and write (so their refusals above come from the writer, not from a missing package or device);
    what they wrote they may replace."""
    bundle = tmp_path / "b.tar.xz"
    results = tmp_path / "res"
    for _ in range(2):
        for argv in (FILE_WRITERS["packages bundle -o"](world, bundle), REPORT_WRITERS["mlperf --results"][0](world, results)):
            assert cli.main([str(a) for a in argv]) == 0, capsys.readouterr().err
    assert outputs.is_edgec_file(bundle)
    assert "Top 1%" in (results / "kws01" / "accuracy" / "results.txt").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.xz", "res"]      # no .partial, no staging
    capsys.readouterr()
