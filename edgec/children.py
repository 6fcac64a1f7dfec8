"""Child processes and signals: nothing edgec starts outlives it.

- `spawn` starts a child in its own process group that the kernel kills when edgec dies, even by SIGKILL
  (Linux PR_SET_PDEATHSIG); `kill_group` ends the child and everything it started.
- `run` is subprocess.run over `spawn`: on any exception (an interrupt, a signal, a timeout) the whole
  group is killed before the exception goes on.
- `signals_raise` turns SIGTERM and SIGHUP (a `timeout`, a CI cancellation, a closed terminal) into
  `Terminated`, a KeyboardInterrupt, so the same clean-up runs as for Ctrl-C: staging folders removed,
  devices closed, children killed.  Further signals during that clean-up are ignored.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

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


def _die_with_parent(parent: int):
    """preexec_fn: the kernel sends SIGKILL to the child when its parent ends (Linux only)."""
    prctl = _prctl()

    def setup() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:     # the parent died before prctl: do not run orphaned
            os._exit(1)
    return setup


def spawn(argv, **kw) -> subprocess.Popen:
    """subprocess.Popen in a new process group (killed by kill_group) that dies with edgec."""
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=_die_with_parent(os.getpid()), **kw)


def kill_group(proc: subprocess.Popen, wait: float = 10) -> None:
    """SIGKILL the child's process group (the child and everything it started) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        pass


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


def _raise_terminated(signum, _frame):
    for s in CAUGHT:                     # one clean-up: a second signal must not interrupt it
        signal.signal(s, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


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
