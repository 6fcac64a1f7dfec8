"""What edgec writes and deletes (edgec/outputs.py, edgec/staging.py): output paths in every file-system state
a careless user gives (their own folder, the model's folder, `.`, `/`, a file, a symlink, a name too long, a
read-only or full file system) are refused with one line before any work, and nothing outside the output
is ever removed; generated names never collide with the runtime or a C header."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLES, assert_clean_error, edgec, host_compiler
from edgec import api, cli, outputs
from edgec.templating import C_HEADERS, model_c_name
from edgec import cheader
from edgec.errors import EdgecError
from edgec.outputs import MARKER

CANCER = EXAMPLES / "cancer_conv1d"


@pytest.fixture
def inputs(tmp_path):
    """The cancer example's model and calibration data in a folder of their own, beside a user's file."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(CANCER / "model.onnx", folder / "cancer.onnx")
    shutil.copy(CANCER / "calib.npz", folder / "calib.npz")
    (folder / "notes.txt").write_text("mine")
    return folder


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _build(inputs, out):
    """api.build of the inputs into out (refusals come before any work: no firmware is built)."""
    return api.build(inputs / "cancer.onnx", inputs / "calib.npz", "host", out)


def test_build_refuses_folders_it_did_not_write(inputs, tmp_path, monkeypatch):
    """-o a user's folder, the model's own folder, `.` and `/`: refused with one line, nothing deleted."""
    users = tmp_path / "users"
    users.mkdir()
    (users / "thesis.tex").write_text("years of work")
    before = _tree(tmp_path)
    assert_clean_error(edgec("build", inputs / "cancer.onnx", "--calib", inputs / "calib.npz", "--board", "host",
                             "-o", users), "was not written by edgec")
    for out, needle in ((users, "was not written by edgec"), (inputs, "holds the input"),
                        (inputs.parent, "holds the input"), ("/", "file-system root")):
        with pytest.raises(EdgecError, match=needle):
            _build(inputs, out)
    monkeypatch.chdir(users)
    for out in (".", ".."):
        with pytest.raises(EdgecError, match="current folder"):
            _build(inputs, out)
    assert _tree(tmp_path) == before and (users / "thesis.tex").read_text() == "years of work"


def test_build_refuses_files_links_and_long_names(inputs, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(inputs, target_is_directory=True)
    under_file = afile / "sub"
    too_long = tmp_path / ("x" * 250)
    before = _tree(tmp_path)
    for out, needle in ((afile, "is a file"), (link, "symbolic link"), (under_file, "is a file"),
                        (too_long, "too long")):
        with pytest.raises(EdgecError, match=needle):
            _build(inputs, out)
    assert _tree(tmp_path) == before and afile.read_text() == "keep"


def test_an_empty_folder_or_an_earlier_build_is_replaced(inputs, tmp_path):
    """An empty folder and edgec's own earlier build are replaced; a file the user put into that build folder
    afterwards is not edgec's: the folder is then refused and the file kept."""
    out = tmp_path / "out"
    out.mkdir()
    api.build(inputs / "cancer.onnx", inputs / "calib.npz", "host", out, firmware=False)
    assert (out / MARKER).is_file() and (out / "build-report.json").is_file()
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~outputs.umask())      # not mkdtemp's 0700
    (out / "plan.json").write_text("edgec's file, changed: still edgec's entry")
    api.build(inputs / "cancer.onnx", inputs / "calib.npz", "host", out, firmware=False)
    assert (out / MARKER).is_file() and (out / "plan.json").read_text().startswith("{")
    (out / "stale.txt").write_text("the user's notes")
    with pytest.raises(EdgecError, match="stale.txt, which edgec did not write"):
        api.build(inputs / "cancer.onnx", inputs / "calib.npz", "host", out, firmware=False)
    assert (out / "stale.txt").read_text() == "the user's notes"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []     # no staging, no old copy


def test_output_files_only_overwrite_what_edgec_wrote(inputs, tmp_path, capsys):
    """calibrate -o (as bench --json): a user's file, a folder, a link, an input file are refused before the
    work; a file edgec wrote is replaced."""
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "data"}')
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    args = ["calibrate", str(inputs / "cancer.onnx"), "--calib", str(inputs / "calib.npz"),
            "--sensitivity-samples", "0", "-o"]
    for out, needle in ((mine, "not written by edgec"), (folder, "is a folder"), (link, "symbolic link"),
                        (inputs / "calib.npz", "inputs")):
        assert cli.main(args + [str(out)]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
    assert mine.read_text() == '{"my": "data"}'
    ours = tmp_path / "q.json"
    for _ in range(2):
        assert cli.main(args + [str(ours)]) == 0
    assert "edgec_version" in json.loads(ours.read_text())


def test_bench_report_folder_is_checked_before_the_bench(tmp_path):
    from edgec.bench import report
    users = tmp_path / "users"
    users.mkdir()
    (users / "report.html").write_text("<html>my report</html>")
    with pytest.raises(EdgecError, match="was not written by edgec"):
        api.bench(tmp_path / "no-such-build", CANCER / "test.npz", report_dir=users)
    assert (users / "report.html").read_text() == "<html>my report</html>"
    assert report.check_report_dir(tmp_path / "new")      # a new folder is fine


def _in_namespace(script: str, cwd) -> subprocess.CompletedProcess:
    """Run a shell script in a private mount namespace (a tmpfs mounted there is seen by nobody else)."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("unshare -m is needed for the file-system state tests")
        pytest.skip("cannot create a mount namespace here")
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("state", ["read-only", "full", "mount-point"])
def test_read_only_and_full_file_systems(state, inputs, tmp_path):
    """-o on a read-only file system is refused before the work; on a full one (a 64 KiB tmpfs) the build
    stops with one line and leaves no staging folder."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    opts = "ro,size=64k" if state == "read-only" else "size=64k"
    out = mnt if state == "mount-point" else mnt / "lib"
    cmd = (f"mount -t tmpfs -o {opts} tmpfs {mnt} && {sys.executable} -m edgec export {inputs / 'cancer.onnx'} "
           f"--calib {inputs / 'calib.npz'} --board host --format c -o {out}; code=$?; ls -A {mnt}; "
           "exit $code")
    proc = _in_namespace(cmd, tmp_path)
    err = [ln for ln in proc.stderr.splitlines() if ln.startswith("edgec")]
    assert proc.returncode == 2 and len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert {"read-only": "not writable", "full": "No space left", "mount-point": "mount point"}[state] in err[0]
    assert proc.stdout.strip() == ""          # nothing left on the file system: no folder, no staging folder


def test_model_names_never_collide_with_the_runtime_or_headers():
    runtime = {f.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() for f in cheader.runtime_files()}
    runtime |= {"edgec_guard", "edgec_link", "edgec_mlperf", "main", "bench_main", "mlperf_main"}
    for stem in sorted(runtime | C_HEADERS | {"int", "while", "Edgec_NN", "EDGEC", "edgec-kernels", "Math"}):
        name = model_c_name(stem)
        assert name not in runtime and name not in C_HEADERS and name not in ("int", "while"), stem
        assert not name.startswith("edgec") and name.isidentifier(), stem
    assert model_c_name("kws dscnn") == "kws_dscnn"            # ordinary names are kept


def test_a_model_called_stdint_exports_a_library_that_compiles(tmp_path):
    model = tmp_path / "stdint.onnx"
    shutil.copy(CANCER / "model.onnx", model)
    out = tmp_path / "lib"
    m = api.export(model, CANCER / "calib.npz", "host", "c", out)
    assert m["model"] == "model_stdint"
    # <stdint.h> in every file resolves to the system's, not to the model's header (-I the library folder)
    subprocess.run([host_compiler("gcc"), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
                    "-I", str(out), str(out / "model_stdint.c"), str(out / "example" / "main.c"),
                    *(str(p) for p in sorted(out.glob("edgec_*.c")))], check=True, capture_output=True, text=True)


def _make_state(path, state: str, rng) -> None:
    """Put `path` into a file-system state."""
    if state == "missing":
        return
    if state == "file":
        path.write_text("user file")
    elif state == "user-folder":
        path.mkdir()
        (path / f"data{rng.integers(9)}.txt").write_text("user data")
    elif state == "empty-folder":
        path.mkdir()
    elif state == "edgec-folder":
        path.mkdir()
        (path / MARKER).write_text("{}")
        (path / "old.c").write_text("generated")
    elif state == "link-to-user-folder":
        target = path.parent / f"target{rng.integers(1 << 30)}"
        target.mkdir()
        (target / "precious.txt").write_text("user data")
        path.symlink_to(target, target_is_directory=True)
    elif state == "dangling-link":
        path.symlink_to(path.parent / "nowhere")


def test_random_output_paths_never_lose_a_file(tmp_path):
    """Random output paths (nested, `..`, long names) in random states through the staged writer: either the
    folder becomes edgec's output or the call is refused with one line; no file edgec did not write is ever
    changed or removed, and no staging folder is left."""
    from edgec.staging import staged_folder
    rng = np.random.default_rng(int(os.environ.get("EDGEC_PATH_SEED", "1414")))
    states = ["missing", "file", "user-folder", "empty-folder", "edgec-folder", "link-to-user-folder", "dangling-link"]
    for case in range(150):
        root = tmp_path / f"c{case}"
        root.mkdir()
        parent = root
        for _ in range(int(rng.integers(0, 3))):
            parent = parent / rng.choice(["a", "b", "x" * int(rng.integers(1, 260))])
        name = str(rng.choice(["out", "o" * 250, "build.d", ".", ".."]))
        parent_state = str(rng.choice(["missing", "file", "empty-folder"] if parent != root else ["empty-folder"]))
        try:
            if parent != root:
                parent.parent.mkdir(parents=True, exist_ok=True)
                _make_state(parent, parent_state, rng)
            out = parent / name
            if name not in (".", "..") and parent.is_dir():
                _make_state(out, str(rng.choice(states)), rng)
        except OSError:             # the state itself cannot exist (a name too long): nothing to try
            continue
        before = {p: p.read_text() for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                  and p.name not in ("old.c", MARKER)}     # edgec wrote those: they may go
        try:
            with staged_folder(out, "build") as work:
                (work / "model.c").write_text("new")
            assert (out / "model.c").read_text() == "new" and not out.is_symlink()
        except EdgecError as exc:
            assert "\n" not in str(exc)
        for p, text in before.items():
            assert p.is_file() and p.read_text() == text, (case, out, p)
        assert not [p for p in root.rglob(".*.*") if p.is_dir() and p.name.startswith(f".{out.name}.")], case
