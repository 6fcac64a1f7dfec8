"""SIGTERM, SIGHUP and SIGINT at random points of build and bench (a `timeout`, a CI cancellation, a closed
terminal, Ctrl-C): edgec exits with 128 + signal, and leaves no child process, no staging folder and no
partial output; when edgec itself is SIGKILLed, its children (QEMU here; the host firmware is started the same
way, edgec.children.spawn) die by themselves. Builds run for the host board (PlatformIO, compilers), benches
on the emulated Cortex-M3 (QEMU)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import edgec

from conftest import EXAMPLES
from edgec import api
from edgec.quant.ptq import QuantOptions

CANCER = EXAMPLES / "cancer_conv1d"
RNG = np.random.default_rng(int(os.environ.get("EDGEC_SIGNAL_SEED", "14")))


def _procs_using(path) -> list[int]:
    """Processes whose command line or working folder names `path` (edgec's children and theirs)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if str(path) in cmdline or cwd.startswith(str(path)):
            found.append(int(pid))
    return found


def _default_signals() -> None:
    """In the child: SIGHUP as a terminal leaves it, whatever the suite was started under (nohup ignores it,
    and edgec keeps a signal it finds ignored ignored, as nohup asks)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(*args, cwd=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgec", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True,
                            preexec_fn=_default_signals)


def _wait_for_child(proc, root, timeout=60.0) -> None:
    """Until edgec has a child working under `root` (the firmware build, the device)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if [p for p in _procs_using(root) if p != proc.pid]:
            return
        time.sleep(0.05)
    pytest.fail(f"edgec started no child under {root} (exit {proc.poll()})")


def _gone(root, timeout=10.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end and _procs_using(root):
        time.sleep(0.1)
    return _procs_using(root)


@pytest.mark.parametrize("sig, point", [(signal.SIGTERM, "calibration"), (signal.SIGTERM, "firmware"),
                                        (signal.SIGHUP, "firmware"), (signal.SIGINT, "calibration")])
def test_signal_during_build_leaves_nothing(sig, point, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    longest = 0.3 if point == "calibration" else 1.0
    for _ in range(4):     # a build that ends before the random point is not a test: again, with a shorter wait
        proc = _start("build", CANCER / "model.onnx", "--calib", CANCER / "calib.npz", "--board", "host", "-o", out,
                      "--sensitivity-samples", "64" if point == "calibration" else "0")
        if point == "calibration":
            proc.stderr.readline()                    # edgec's first line: it runs (and handles signals)
        else:
            _wait_for_child(proc, tmp_path)           # PlatformIO runs in the staging folder
        time.sleep(RNG.uniform(0, longest))           # a random point of calibration / of the firmware build
        if proc.poll() is None:
            break
        proc.communicate(timeout=60)
        assert proc.returncode == 0
        shutil.rmtree(out)
        longest /= 4
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    want = 130 if sig == signal.SIGINT else 128 + sig
    assert proc.returncode == want, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("edgec: "), err
    assert _gone(tmp_path) == []                      # no platformio, scons or compiler left running
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == []   # no output, no staging folder
    assert not [p for p in tmp_path.glob("cache/**/*") if ".tmp" in p.name]   # no half-written cache entry


@pytest.fixture(scope="module")
def qemu_build(tmp_path_factory):
    """The cancer example for the emulated Cortex-M3 (no framework: a 5 s build); its bench runs QEMU."""
    root = tmp_path_factory.mktemp("signal_build")
    api.build(CANCER / "model.onnx", CANCER / "calib.npz", "qemu-cortex-m3", root / "b",
              options=QuantOptions(sensitivity_samples=0))
    data = root / "test.npz"
    x = np.load(CANCER / "test.npz")["x"]
    np.savez(data, x=np.repeat(x, 2, axis=0))         # enough samples to be in the middle of the bench
    return root / "b", data


def test_signal_during_bench_leaves_no_emulator_and_no_report(qemu_build, tmp_path):
    build, data = qemu_build
    sig = int(RNG.choice([signal.SIGTERM, signal.SIGHUP]))
    before = sorted(os.listdir(build))
    proc = _start("bench", build, "--data", data, "--report", tmp_path / "rep", "--json", tmp_path / "r.json")
    _wait_for_child(proc, build)                      # QEMU runs the firmware
    time.sleep(RNG.uniform(0, 0.1))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert _gone(build) == []
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "rep" / "report.html").exists()
    assert sorted(os.listdir(build)) == before and json.loads((build / "build-report.json").read_text())


def test_emulator_dies_with_a_killed_edgec(qemu_build):
    """SIGKILL cannot be caught: QEMU must end by itself (PR_SET_PDEATHSIG)."""
    build, data = qemu_build
    proc = _start("bench", build, "--data", data, "--no-report")
    _wait_for_child(proc, build)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(build) == []



def _pids_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `marker`."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker in f.read().decode(errors="replace"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _gone_marker(marker: str, timeout: float = 10.0) -> list[int]:
    """The processes still running after `timeout` s (killed, so that a failing test leaves none behind)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and _pids_with(marker):
        time.sleep(0.05)
    left = _pids_with(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def test_grandchildren_die_with_a_killed_edgec():
    """SIGKILL of edgec: not only its child (a `pio` here a shell) but what that started (scons, QEMU; a
    `sleep` here) ends: the reaper kills the whole group."""
    marker = f"{os.getpid()}.4711"
    parent = subprocess.Popen([sys.executable, "-c", (
        f"import subprocess, sys, time\nsys.path.insert(0, {str(Path(edgec.__file__).parents[1])!r})\n"
        "from edgec import children\n"
        f"p = children.spawn(['sh', '-c', 'sleep {marker} & wait'])\n"
        "print('started', flush=True)\ntime.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline().strip() == "started"
    end = time.monotonic() + 20
    while not _pids_with(marker) and time.monotonic() < end:
        time.sleep(0.05)
    assert _pids_with(marker)
    parent.kill()
    parent.wait()
    assert _gone_marker(marker) == []


def test_flashing_tool_timeout_kills_what_it_started(monkeypatch):
    """A flashing tool past its timeout (`pio run -t upload` starting scons and QEMU): all of it is killed."""
    from edgec.device import flash
    from edgec.errors import EdgecError

    marker = f"{os.getpid()}.4712"
    monkeypatch.setattr(flash, "TIMEOUT", 1.0)
    with pytest.raises(EdgecError, match="did not finish within"):
        flash._run(["sh", "-c", f"sleep {marker} & wait"], None, None)
    assert _gone_marker(marker) == []


def test_interrupt_stops_dataset_in_flash_chunks(qemu_build, tmp_path):
    """SIGTERM during --dataset-in-flash: no further chunk runs, no emulator is left, exit 143."""
    build, data = qemu_build
    proc = _start("bench", build, "--data", data, "--dataset-in-flash", "--chunk", "8", "--no-report")
    total = None
    for line in proc.stderr:
        if "dataset-in-flash: chunk " in line:
            total = int(line.split("chunk ")[1].split()[0].split("/")[1])
            break
    assert total is not None and total > 10
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.count("done on unit") <= 2, err          # the chunks after the signal did not run
    assert _gone(build) == []


def test_a_killed_compiler_leaves_no_temporary_files(tmp_path, monkeypatch):
    """A compiler killed mid-way (an interrupted or timed-out build) leaves its ccXXXX.s in TMPDIR: each child
    gets a TMPDIR of its own that goes with its group, whether it ends, is killed or edgec is killed."""
    from edgec import children

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    script = 'echo asm > "${TMPDIR:-/tmp}/cc1.s"; echo "${TMPDIR:-/tmp}"; exec sleep 300'
    proc = children.spawn(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
    folder = Path(proc.stdout.readline().strip())
    assert (folder / "cc1.s").is_file()
    children.kill_group(proc)
    assert not (folder / "cc1.s").exists() and list(tmp_path.rglob("*.s")) == []
    out, code = children.run(["sh", "-c", 'echo asm > "${TMPDIR:-/tmp}/cc2.s"; echo "${TMPDIR:-/tmp}"'],
                             text=True)
    assert code == 0 and not Path(out.strip(), "cc2.s").exists() and list(tmp_path.rglob("*.s")) == []


def test_a_process_that_left_the_group_ends_with_it(tmp_path, monkeypatch):
    """A grandchild that started a session of its own (out of reach of the group's SIGKILL) is still ended
    with its child: the reaper adopts the orphans below it and kills them before removing the folder."""
    from edgec import children

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    marker = f"{os.getpid()}.4715"
    script = f'setsid sh -c "sleep {marker}" & echo "${{TMPDIR:-/tmp}}"; exec sleep 300'
    proc = children.spawn(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
    folder = Path(proc.stdout.readline().strip())
    end = time.monotonic() + 10
    while not _pids_with(marker) and time.monotonic() < end:
        time.sleep(0.02)
    assert _pids_with(marker), "the grandchild did not start"
    children.kill_group(proc)
    assert _gone_marker(marker, timeout=2.0) == [] and not folder.exists()


def test_a_reaper_interrupted_as_it_starts_leaves_no_folder(tmp_path, monkeypatch):
    """edgec interrupted right after starting a child: the reaper, signalled the moment its folder appears
    (before, it made the folder and only then handled signals, and a CI run left an empty edgec-tmp-* behind),
    still removes it.  A race: each round hits the window with some luck, 30 rounds often."""
    from edgec import children

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    for _ in range(30):
        proc = children.spawn(["sleep", "30"])
        end = time.monotonic() + 10
        while not os.listdir(tmp_path) and time.monotonic() < end:
            pass
        children.kill_group(proc)
        assert os.listdir(tmp_path) == []


def test_a_firmware_build_past_its_timeout_leaves_nothing_running(tmp_path, monkeypatch):
    """The build timeout ends PlatformIO and what it started (scons, compilers: a `sleep` here)."""
    from edgec.errors import EdgecError
    from edgec.settings import Settings
    from edgec.targets import pio

    marker = f"{os.getpid()}.4714"
    monkeypatch.setattr(pio, "pio_command", lambda: ["sh", "-c", f"sleep {marker} & wait"])
    env = Settings.from_environment()
    with pytest.raises(EdgecError, match="timed out"):
        pio.run_pio(["run"], tmp_path, tmp_path / "build.log", env.platformio_home, 1.0, log=None)
    assert _gone_marker(marker) == []


DIGITS = EXAMPLES / "digits_cnn"


def _left_in(folder: Path) -> list[str]:
    """What is in `folder` but onnxruntime's .ses (its session-id file in TMPDIR, kept across runs on purpose); a
    folder a reaper removes while it is listed is listed again."""
    for _ in range(100):
        try:
            return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name != ".ses")
        except FileNotFoundError:
            time.sleep(0.01)
    raise AssertionError(f"{folder} kept changing while listed")


def _emptied(folder: Path, timeout: float = 10.0) -> list[str]:
    """What is still left in `folder` after `timeout` s (the reapers of a killed edgec remove their folders as
    they end)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and _left_in(folder):
        time.sleep(0.05)
    return _left_in(folder)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """edgec's TMPDIR for this test alone (its tune rounds, matrix slices, children's folders go there) and
    a calibration cache of its own: what is left there after edgec ends is what it left behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp


def _tuning_log(tmp_path: Path) -> tuple[Path, dict]:
    """A tuning log with a record of an earlier tune, and what its folder holds."""
    from edgec.lower import tuning_records
    log = tmp_path / "logs" / "tuning.json"
    tuning_records.save(log, {tuning_records.key("host", "earlier"): {"variant": "generic", "units": {"generic": 1}}})
    return log, {p.name: p.read_bytes() for p in log.parent.iterdir()}


def _start_tune(log: Path) -> subprocess.Popen:
    return _start("tune", DIGITS / "model.onnx", "--calib", DIGITS / "calib.npz", "--board", "host",
                  "--tuning-log", log)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_a_tune_round_leaves_nothing(sig, tmp_path, private_tmp):
    """SIGTERM / Ctrl-C while a tune round builds its firmware (PlatformIO, scons, compilers under edgec's
    temporary folder): edgec exits 128 + signal in one line, nothing of the round runs on, its temporary
    folders are gone and the tuning log holds what it held."""
    log, before = _tuning_log(tmp_path)
    proc = _start_tune(log)
    _wait_for_child(proc, private_tmp, timeout=300)        # a round's build (or bench) runs in edgec's TMPDIR
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("edgec: "), err
    assert _gone(private_tmp) == []
    assert _left_in(private_tmp) == []
    assert {p.name: p.read_bytes() for p in log.parent.iterdir()} == before


def test_a_killed_tune_leaves_no_process(tmp_path, private_tmp):
    """SIGKILL of edgec during a tune round: its build's processes end by themselves and the temporary folders
    go with them, the rounds' own too (a killed edgec left its edgec-tune-* folder of builds in /tmp); the
    tuning log is untouched."""
    log, before = _tuning_log(tmp_path)
    proc = _start_tune(log)
    _wait_for_child(proc, private_tmp, timeout=300)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(private_tmp) == []
    assert _emptied(private_tmp) == []
    assert {p.name: p.read_bytes() for p in log.parent.iterdir()} == before


def _matrix(qemu_build, tmp_path, *extra) -> tuple[subprocess.Popen, Path]:
    """`edgec bench` over two builds x 2 units (split): four emulators at once."""
    build, data = qemu_build
    other = tmp_path / "other"
    shutil.copytree(build, other, symlinks=True)
    proc = _start("bench", build, other, "--units", "2", "--split", "--data", data, "--report", tmp_path / "rep",
                  "--json", tmp_path / "m.json", *extra)
    return proc, other


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_matrix_cells_leaves_nothing(sig, qemu_build, tmp_path, private_tmp):
    """SIGTERM / Ctrl-C while the matrix's cells run: every cell's emulator ends, the slices of the test set
    are removed, no report is written, edgec exits 128 + signal in one line."""
    build, _ = qemu_build
    proc, other = _matrix(qemu_build, tmp_path)
    _wait_for_child(proc, other, timeout=120)             # an emulator of the copied build runs
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("edgec: "), err
    assert _gone(build) == [] and _gone(other) == [] and _gone(private_tmp) == []
    assert _left_in(private_tmp) == []
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "rep").exists()


def test_a_killed_matrix_leaves_no_emulator(qemu_build, tmp_path, private_tmp):
    """SIGKILL of edgec while the cells run: the emulators end by themselves, and the test set's slices and
    the cells' scratch folders go with them (a killed edgec left its edgec-matrix-* folder)."""
    build, _ = qemu_build
    proc, other = _matrix(qemu_build, tmp_path)
    _wait_for_child(proc, other, timeout=120)
    proc.kill()
    proc.communicate(timeout=30)
    assert _gone(build) == [] and _gone(other) == [] and _gone(private_tmp) == []
    assert _emptied(private_tmp) == []


INTERRUPTED_PIO = r"""
import sys, threading
sys.path[:0] = {paths!r}
from pathlib import Path
from edgec.targets import pio
start = threading.Thread.start
def start_or_interrupt(self):          # the signal lands while the build's progress ticker starts
    if getattr(getattr(self, "_target", None), "__name__", "") == "progress":
        raise KeyboardInterrupt
    start(self)
threading.Thread.start = start_or_interrupt
try:
    pio._stream(["sh", "-c", "sleep {marker} & wait"], Path({folder!r}), Path({folder!r}), print, 3600.0)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_an_interrupt_as_a_firmware_build_starts_does_not_hang_the_exit(tmp_path):
    """SIGTERM just after PlatformIO started (a tune round, a build): the build-timeout timer had started and
    was not a daemon, and the interrupt skipped its cancel: edgec said "terminated" and then hung until the
    build timeout (an hour), with its build still running."""
    marker = f"{os.getpid()}.4715"
    paths = [p for p in sys.path if p]
    try:
        run = subprocess.run([sys.executable, "-c", INTERRUPTED_PIO.format(paths=paths, marker=marker,
                                                                           folder=str(tmp_path))],
                             capture_output=True, text=True, timeout=120)
    finally:
        left = _gone_marker(marker)
    assert run.returncode == 0 and run.stdout.strip() == "interrupted", run.stderr[-2000:]
    assert left == []


def test_waiting_on_a_job_takes_a_signal_delivered_to_another_thread():
    """The kernel may deliver SIGTERM to any thread; then the handler only runs when the main thread wakes. A bare
    Future.result() slept on until the job ended (every dataset-in-flash chunk ran after the SIGTERM, seen in CI);
    children.result wakes and the interrupt is taken at once."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from edgec import children

    started, release, where = threading.Event(), threading.Event(), {}

    def job():
        where["thread"] = threading.get_ident()
        started.set()
        release.wait(30)
        return 1

    def interrupt(*_):
        raise KeyboardInterrupt

    pool = ThreadPoolExecutor(1)
    future = pool.submit(job)
    started.wait(10)
    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(where["thread"], signal.SIGUSR1))
    try:
        t0 = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            children.result(future)
        assert time.monotonic() - t0 < 10        # not after the job's 30 s
    finally:
        signal.signal(signal.SIGUSR1, previous)
        release.set()
        pool.shutdown(wait=True)
