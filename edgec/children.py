"""Child processes and signals: nothing edgec starts outlives it.

- `spawn` starts a child in its own process group under a small reaper (this file run as a script, standard
  library only): the kernel tells the reaper when edgec dies, even by SIGKILL (Linux PR_SET_PDEATHSIG), and the
  reaper then kills the child's whole group, so grandchildren (scons under `pio`, QEMU under scons) die too,
  not only the direct child; the child's TMPDIR is the reaper's own folder, removed when the group ends (the
  .s files of a compiler killed mid-way).  `kill_group` ends the child and everything it started; `kill_all` every live group (an
  interrupt while worker threads run children: dataset-in-flash chunks, matrix cells).
- `run` is subprocess.run over `spawn`: on any exception (an interrupt, a signal, a timeout) the whole
  group is killed before the exception goes on.
- `signals_raise` turns SIGTERM and SIGHUP (a `timeout`, a CI cancellation, a closed terminal) into
  `Terminated`, a KeyboardInterrupt, so the same clean-up runs as for Ctrl-C: staging folders removed,
  devices closed, children killed.  Further signals during that clean-up are ignored.
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import subprocess
import sys
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path

PR_SET_PDEATHSIG = 1
CAUGHT = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(KeyboardInterrupt):
    """edgec got SIGTERM or SIGHUP; `signum` says which (the CLI exits with 128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _prctl():
    """libc's prctl, looked up in the parent (no dynamic loading between fork and exec), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _check_program(program: str, path: str | None) -> None:
    """FileNotFoundError / PermissionError as Popen would raise them (the reaper starts the program later)."""
    if "/" in program:
        if not os.path.exists(program):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    elif shutil.which(program, path=path) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


_LIVE: "weakref.WeakSet[subprocess.Popen]" = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()
_REAPER = os.path.abspath(__file__)


def spawn(argv, **kw) -> subprocess.Popen:
    """subprocess.Popen in a new process group (killed by kill_group) that dies with edgec, with everything it
    starts.  The Popen is the reaper's; its exit code is the child's (128 + N when signal N ended the child)."""
    argv = [str(a) for a in argv]
    _check_program(argv[0], (kw.get("env") or os.environ).get("PATH"))
    reaper = sys.platform.startswith("linux")
    if reaper:
        argv = [sys.executable, "-I", "-S", _REAPER, str(os.getpid()), *argv]
    # no preexec_fn: edgec may have threads, and code run between fork and exec in a threaded process can crash
    # (a forked child segfaulted in it); the reaper sets its parent-death signal itself, first thing after exec
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    proc.edgec_reaper = reaper
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def end(proc: subprocess.Popen) -> None:
    """Without waiting: ask the reaper to kill its child's group and remove its TMPDIR (no reaper: SIGKILL the group)."""
    try:
        if getattr(proc, "edgec_reaper", False):
            os.kill(proc.pid, signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen, wait: float = 10) -> None:
    """End the child's process group (the child and everything it started, and its temporary files) and reap
    the child."""
    end(proc)
    with _LIVE_LOCK:
        _LIVE.discard(proc)
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        pass


def kill_all() -> None:
    """Kill every process group edgec started and has not reaped (an interrupt: the threads that wait for
    them see them end and stop)."""
    with _LIVE_LOCK:
        live = [p for p in _LIVE if p.returncode is None]
    for proc in live:
        end(proc)


def run(argv, timeout: float | None = None, **kw) -> tuple[str, int]:
    """Run to the end and return (stdout, exit code); subprocess.TimeoutExpired after `timeout` s.
    Whatever interrupts it, the child's whole process group is killed first."""
    proc = spawn(argv, stdout=subprocess.PIPE, **kw)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        kill_group(proc)
        raise subprocess.TimeoutExpired(argv, timeout, output=exc.output) from None
    except BaseException:
        kill_group(proc)
        raise
    finally:
        if proc.poll() is None:
            kill_group(proc)
    return out, proc.returncode


@contextmanager
def temporary_folder():
    """A temporary folder removed when the block ends, and also when edgec dies, even by SIGKILL: the folder
    of a reaper (its child only waits), which removes it when edgec ends it or dies (tune rounds, matrix
    slices: a killed edgec left them in /tmp).  Without a reaper (not Linux, or it did not start): a plain
    temporary folder, removed on every exit path but a SIGKILL."""
    import tempfile

    guard = None
    if sys.platform.startswith("linux"):
        guard = spawn([sys.executable, "-I", "-S", "-c", _WAIT], stdout=subprocess.PIPE, text=True,
                      stderr=subprocess.DEVNULL)     # a signal may close its pipe before it prints: no traceback
    try:
        folder = guard.stdout.readline().strip() if guard is not None else ""
        if folder and os.path.isdir(folder):
            yield Path(folder)
        else:                # no reaper here, or it did not start: removed on every exit path but a SIGKILL
            with tempfile.TemporaryDirectory(prefix="edgec-tmp-") as tmp:
                yield Path(tmp)
    finally:
        if guard is not None:
            kill_group(guard)
            guard.stdout.close()


_WAIT = "import os, sys, time\nprint(os.environ['TMPDIR'], flush=True)\nwhile True: time.sleep(3600)"


def _raise_terminated(signum, _frame):
    for s in CAUGHT:                     # one clean-up: a second signal must not interrupt it
        signal.signal(s, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def result(future, poll: float = 0.2):
    """future.result(), waking every `poll` seconds: a signal the kernel delivers to another thread only marks
    itself pending, and its handler (Terminated, KeyboardInterrupt) runs when the main thread next wakes, which
    a bare result() would put off until the job ended (every dataset-in-flash chunk run after a SIGTERM)."""
    from concurrent.futures import TimeoutError as Pending

    while True:
        try:
            return future.result(timeout=poll)
        except Pending:
            continue


def signals_raise() -> dict:
    """SIGINT, SIGTERM and SIGHUP raise (KeyboardInterrupt / Terminated) in the main thread (a signal
    ignored already, e.g. SIGHUP under nohup, stays ignored); returns the handlers before, for restore()."""
    previous = {s: signal.getsignal(s) for s in CAUGHT}
    for s in CAUGHT:
        if previous[s] is not signal.SIG_IGN or s == signal.SIGINT:
            signal.signal(s, _raise_terminated)
    return previous


def restore(previous: dict) -> None:
    """Put back the handlers signals_raise() replaced (edgec run in-process, e.g. by a test)."""
    for s, handler in previous.items():
        if handler is not None:
            signal.signal(s, handler)


PR_SET_CHILD_SUBREAPER = 36


def _children_of(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _reap_descendants(deadline: float) -> None:
    """Kill and reap every process left below the reaper, until none is left or `deadline` (a monotonic time)
    passes.  As a child subreaper the reaper inherits the orphans of its child's group, and of anything that
    left the group: a killed compiler may still create a file between its SIGKILL and its death, so the
    folder is removed only after them."""
    import time

    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:           # none left
            return
        except InterruptedError:
            continue
        if pid == 0:
            if time.monotonic() > deadline:
                return
            for orphan in _children_of(os.getpid()):
                try:
                    os.kill(orphan, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)


def _reap(parent: int, argv: list[str]) -> int:
    """The reaper (see the module's docstring): run argv in a process group of its own with a private TMPDIR
    (a compiler's ccXXXX.s files); when the child ends, edgec dies (PR_SET_PDEATHSIG) or kill_group's SIGTERM
    comes, kill the child's group and remove the folder.  Returns the exit code to pass on."""
    import tempfile
    import time

    tmp = None
    child = None

    def end_group() -> None:
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            _reap_descendants(time.monotonic() + 5.0)   # the child and the orphans of its group, not zombies
        if tmp is not None:
            for _ in range(20):                # a file created while the tree was removed: once more
                shutil.rmtree(tmp, ignore_errors=True)
                if not os.path.exists(tmp):
                    break
                time.sleep(0.01)

    def stop(signum=signal.SIGKILL, _frame=None):
        end_group()
        os._exit(128 + int(signum))

    def in_child() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, CAUGHT)
        os.setpgrp()

    # signals wait until the handlers are in place and the folder is known: a SIGTERM between creating the
    # folder and handling signals (edgec interrupted right after starting a reaper) left the folder behind
    signal.pthread_sigmask(signal.SIG_BLOCK, CAUGHT)
    for s in CAUGHT:
        signal.signal(s, stop)
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    tmp = tempfile.mkdtemp(prefix="edgec-tmp-")
    if os.getppid() != parent:
        stop()
    try:
        child = subprocess.Popen(argv, restore_signals=True, preexec_fn=in_child,
                                 env={**os.environ, "TMPDIR": tmp})
    except OSError as e:
        sys.stderr.write(f"cannot start {argv[0]}: {e.strerror or e}\n")
        stop(127 - 128)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, CAUGHT)
    code = child.wait()
    end_group()                  # what the child left running, and its temporary files
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(_reap(int(sys.argv[1]), sys.argv[2:]))
