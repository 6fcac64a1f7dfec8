"""Host compiles for the tests, with the C runtime's objects built once per compiler, flags and content.

Most C tests compile a generated model library with the whole runtime copied beside it (runtime_c/'s kernel
files, identical in every library), often under the sanitizers, which makes them slow to compile. Here each
runtime file is compiled once per (compiler, flags, its content and the content of the runtime headers it
includes, directly or not) into a cache
in the test run's temporary root (shared by the xdist workers: a lock file per object makes one worker compile
it while the other waits), and only the model's own files are compiled each time. A file that differs from what the runtime ships (a test that edits its copy) is not the
same content, so it gets an object of its own.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
from pathlib import Path

from edgec import cheader

_CACHE: list[Path] = []


def use_cache(folder: Path) -> None:
    """Called once per session (tests/conftest.py) with the run's shared temporary root."""
    folder.mkdir(parents=True, exist_ok=True)
    _CACHE[:] = [folder]


class CompileError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr[-3000:]}"


def _run(cmd: list) -> None:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode:
        raise CompileError(proc.returncode, [str(c) for c in cmd], proc.stdout, proc.stderr)


def _runtime_key(src: Path, root: Path, cc: str, flags: list[str]) -> str | None:
    """The cache key of a runtime file's copy in a library folder `root`, or None if src is not one."""
    rel = src.relative_to(root).as_posix() if src.is_relative_to(root) else None
    files = cheader.runtime_files()
    if rel not in files:
        return None
    digest = hashlib.sha256("\0".join([Path(cc).name, *_without_includes(flags), rel]).encode())
    for f in [rel] + _included_headers(root, rel, files):
        path = root / f
        digest.update(f.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
    return digest.hexdigest()[:24]


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def _included_headers(root: Path, rel: str, files) -> list[str]:
    """The runtime headers (of `files`) that `rel` includes, directly or through another, found by file name (any
    runtime header of that name: more than the compiler reads, never less), read from the library folder `root`.
    Only these are in an object's key: a library that copies one more header for a kernel of its own (a model
    with another layer) still takes the same objects of the files that do not include it."""
    by_name: dict[str, list[str]] = {}
    for h in files:
        if h.endswith(".h"):
            by_name.setdefault(Path(h).name, []).append(h)
    todo, seen = [rel], set()
    while todo:
        path = root / todo.pop()
        for inc in _INCLUDE.findall(path.read_bytes() if path.is_file() else b""):
            for h in by_name.get(Path(inc.decode()).name, []):
                if h not in seen:
                    seen.add(h)
                    todo.append(h)
    return sorted(seen)


def _without_includes(flags: list[str]) -> list[str]:
    """The flags that change an object, given that the runtime headers' content is in the key: not -I."""
    out, skip = [], False
    for f in map(str, flags):
        if not skip and not f.startswith("-I"):
            out.append(f)
        skip = f == "-I"
    return out


def objects(sources: list, root: Path, cc: str, flags: list[str], work: Path) -> list[Path]:
    """Objects of `sources` (files of the library folder `root`): runtime files from the cache, the others
    compiled into `work`."""
    out = []
    for k, src in enumerate(map(Path, sources)):
        key = _runtime_key(src, root, cc, flags) if _CACHE else None
        if key is None:
            obj = work / f"{k}_{src.stem}.o"
            _run([cc, *flags, "-c", src, "-o", obj])
        else:
            obj = _CACHE[0] / f"{src.stem}-{key}.o"
            with open(obj.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)    # the other xdist worker waits for the object, not compiles it
                if not obj.is_file():
                    part = obj.with_suffix(".part")
                    _run([cc, *flags, "-c", src, "-o", part])
                    os.replace(part, obj)
        out.append(obj)
    return out


def build(sources: list, root: Path, exe: Path, cc: str, flags: list[str], link_flags: tuple[str, ...] = ("-lm",)) -> Path:
    """Compile and link `sources` (of the library folder `root`) into exe; runtime objects come from the cache.
    Raises CalledProcessError (with the compiler's stderr) if a compile or the link fails."""
    work = exe.parent / f"{exe.name}.objs"
    work.mkdir(parents=True, exist_ok=True)
    objs = objects(sources, root, cc, flags, work)
    _run([cc, *flags, *objs, "-o", exe, *link_flags])
    return exe
