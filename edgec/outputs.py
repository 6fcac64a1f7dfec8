"""The one writer: every file and folder edgec writes goes through here, and nothing else replaces or deletes.

Rules (docs/building.md, "What edgec writes and deletes"):
- an output folder (`build -o`, `export -o`, `mlperf --results`) may be replaced only when it does not exist,
  is empty, or holds edgec's marker `.edgec-output`: signed JSON (a SHA-256 over its content, which names the
  folder's entries) that lists every entry of the folder; an entry it does not list (a user's file put there
  later) makes the folder not edgec's.  A file merely *named* like edgec's (build-report.json) proves nothing;
- an output file (`--json`, `--junit`, `calibrate -o`, bench and matrix reports, bundles, the failed-build log,
  the tuning log) may be overwritten only when it does not exist or carries edgec's signature: its last line
  is a digest of everything before it (JSON: an `edgec_digest` key written last), a bundle's first member is
  such a signed `edgec-bundle.json`;
- never a symlink (checked with lstat, opened with O_NOFOLLOW), a device or FIFO, the file-system root, the
  home folder, the current folder or one of its parents, nor a folder holding one of the command's inputs;
- files are written atomically (a temporary file beside the target, then os.replace, which replaces a link
  itself, never its target) with the permissions the umask gives (folders too: never mkdtemp's 0700).
A refusal is one line (EdgecError) naming the path and what to do instead.
"""
from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tarfile
import tempfile
import threading
from pathlib import Path

from edgec import __version__
from edgec.errors import EdgecError

MARKER = ".edgec-output"
BUNDLE_MEMBER = "edgec-bundle.json"
DIGEST_KEY = "edgec_digest"
STAGING_EXTRA = 10    # ".<name>.XXXXXXXX": staging and old-copy folders beside the output folder
MAX_SIGNED = 1 << 30  # a file edgec checks the signature of is read to the end; larger ones are not edgec's
# what edgec may add to a build folder after the build (bench's dataset firmware and reports, mlperf results)
LATER = {"build": ("dataset-firmware", "report.html", "bench-report.json", "mlperf-results")}
_TRAILER = re.compile(rb'(?:,\n "edgec_digest": "sha256:([0-9a-f]{64})"\n\}|'
                      rb'\n[^\n]{0,16}edgec-digest sha256:([0-9a-f]{64})[^\n]{0,16})\n\Z')
_umask_lock = threading.Lock()


def umask() -> int:
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- signatures ----

def _strict(value):
    """`value` with NaN and infinities as null: what edgec writes is valid JSON for every reader."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def signed_json(data: dict) -> str:
    """`data` as JSON (strict: NaN and infinities become null) with edgec's `edgec_version` first and its
    signature (`edgec_digest`) last."""
    body = json.dumps(_strict({"edgec_version": __version__, **data}), indent=1, allow_nan=False)[:-2]
    return body + f',\n "{DIGEST_KEY}": "sha256:{_sha(body.encode())}"\n}}\n'


def _comment(name: str) -> tuple[str, str]:
    return ("<!-- ", " -->") if name.endswith((".html", ".xml", ".svg")) else ("# ", "")


def signed_text(text: str, name: str) -> str:
    """`text` with a last line (a comment in the file's syntax) holding the digest of everything before it."""
    text = text if text.endswith("\n") else text + "\n"
    opening, closing = _comment(name)
    return text[:-1] + f"\n{opening}edgec-digest sha256:{_sha(text[:-1].encode())}{closing}\n"


def _verify(data: bytes) -> bool:
    tail = data[-300:]
    m = _TRAILER.search(tail)
    if m is None:
        return False
    return _sha(data[:len(data) - len(tail) + m.start()]) == (m.group(1) or m.group(2)).decode()


def _open_plain(path: Path) -> int | None:
    """A read descriptor of a regular file, never through a symlink and never blocking on a FIFO; None else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _read_plain(path: Path, limit: int = MAX_SIGNED) -> bytes | None:
    fd = _open_plain(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size > limit:
            return None
        return f.read(limit + 1)


def _is_bundle(path: Path) -> bool:
    fd = _open_plain(path)
    if fd is None:
        return False
    try:
        with os.fdopen(fd, "rb") as f, tarfile.open(fileobj=f, mode="r:*") as tar:
            first = tar.next()
            if first is None or first.name != BUNDLE_MEMBER or not first.isfile() or first.size > 1 << 20:
                return False
            return _verify(tar.extractfile(first).read())
    except (tarfile.TarError, OSError, EOFError, ValueError):
        return False


def is_edgec_file(path: Path) -> bool:
    """A file edgec wrote: a regular file (not a link) with edgec's signature (a bundle: its first member)."""
    path = Path(path)
    if path.name.endswith((".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz")):
        return _is_bundle(path)
    data = _read_plain(path)
    return data is not None and _verify(data)


# ---- folders ----

def _marker(folder: Path) -> dict | None:
    data = _read_plain(folder / MARKER, 16 << 20)
    if data is None or not _verify(data):
        return None
    try:
        info = json.loads(data)
    except ValueError:
        return None
    entries = info.get("entries") if isinstance(info, dict) else None
    return info if isinstance(entries, list) and all(isinstance(e, str) for e in entries) else None


def not_edgecs(folder: Path) -> str | None:
    """Why `folder` is not one edgec may replace (None: it is, or it is empty)."""
    names = set(os.listdir(folder))
    if not names:
        return None
    info = _marker(folder)
    if info is None:
        return f"no valid {MARKER} in it" if MARKER not in names else f"its {MARKER} is not one edgec wrote"
    strangers = sorted(names - {MARKER} - set(info["entries"]))
    if strangers:
        return f"it holds {', '.join(strangers[:3])}{' ...' if len(strangers) > 3 else ''}, which edgec did not write"
    return None


def is_edgec_folder(folder: Path) -> bool:
    """A folder edgec wrote (its marker lists everything in it) or an empty one; never a link."""
    folder = Path(folder)
    try:
        return not folder.is_symlink() and folder.is_dir() and not_edgecs(folder) is None
    except OSError:
        return False


def mark(folder: Path, kind: str, **extra) -> None:
    """The signed marker listing the folder's entries (and what edgec may add later), which makes `folder` one
    edgec may replace; the folder gets the permissions the umask gives."""
    entries = sorted(set(os.listdir(folder)) - {MARKER} | set(LATER.get(kind, ())))
    _atomic(folder / MARKER, signed_json({"written_by": "edgec", "kind": kind, "entries": entries, **extra}).encode())
    os.chmod(folder, 0o777 & ~umask())


def add_entry(folder: Path, name: str) -> None:
    """Record in an edgec folder's marker an entry edgec added after the fact."""
    info = _marker(folder)
    if info is None:
        raise EdgecError(f"{folder} is not a folder edgec wrote (no valid {MARKER}); edgec adds nothing to it")
    if name not in info["entries"]:
        info["entries"] = sorted([*info["entries"], name])
        info.pop(DIGEST_KEY, None)
        info.pop("edgec_version", None)
        _atomic(folder / MARKER, signed_json(info).encode())


# ---- checks ----

def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def check_names(path: Path, what: str, extra: int = 0) -> None:
    """Every name of the path fits the file system (first: before anything stats the path)."""
    absolute = Path(os.path.abspath(path))
    for part in absolute.parts[1:]:
        if len(part.encode()) + extra > _name_max(_existing_ancestor(absolute.parent)):
            raise EdgecError(f"{what} {path}: the name '{part[:40]}...' is too long for the file system; "
                             "choose a shorter name")
    if len(str(absolute).encode()) + extra >= 4096:
        raise EdgecError(f"{what} {path}: the path is too long for the file system; choose a shorter one")


def _check_location(path: Path, what: str, extra: int = 0) -> None:
    """The path's parent can hold it: names fit, parents are folders, the nearest existing one is writable."""
    check_names(path, what, extra)
    absolute = Path(os.path.abspath(path))
    base = _existing_ancestor(absolute.parent)
    if not base.is_dir():
        raise EdgecError(f"{what} {path}: {base} is a file, not a folder; choose another path")
    if not os.access(base, os.W_OK | os.X_OK):
        raise EdgecError(f"{what} {path}: {base} is not writable; choose another path")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _resolved(given) -> Path | None:
    try:
        return Path(given).resolve()
    except (OSError, RuntimeError):
        return None


def check_output_folder(outdir: str | Path, inputs=(), what: str = "output folder") -> Path:
    """Refuse (EdgecError, one line) an output folder edgec may not replace; returns it as a Path."""
    outdir = Path(outdir)
    if str(outdir).strip() == "":
        raise EdgecError(f"{what}: the name is empty; give a folder name with -o")
    check_names(outdir, what, STAGING_EXTRA)
    if outdir.is_symlink():
        raise EdgecError(f"{what} {outdir} is a symbolic link; give a real folder with -o")
    resolved = outdir.resolve()
    if resolved == Path(resolved.anchor) or resolved == Path.home().resolve():
        raise EdgecError(f"{what} {outdir} is {'the file-system root' if resolved == Path(resolved.anchor) else 'your home folder'}; "
                         "edgec replaces its output folder as a whole: give a new or empty folder with -o")
    if _inside(Path.cwd().resolve(), resolved):
        raise EdgecError(f"{what} {outdir} is the current folder or one of its parents; edgec replaces its output "
                         "folder as a whole: give a new or empty folder with -o")
    for given in inputs:
        if given is not None and (r := _resolved(given)) is not None and _inside(r, resolved):
            raise EdgecError(f"{what} {outdir} holds the input {given}; replacing it would delete it: "
                             "give another folder with -o")
    if os.path.lexists(outdir):
        if not outdir.is_dir():
            raise EdgecError(f"{what} {outdir} is a file, not a folder; give another path with -o")
        try:
            why = not_edgecs(outdir)
        except OSError as exc:
            raise EdgecError(f"{what} {outdir} cannot be read ({exc.strerror}); give another folder with -o") from None
        if why:
            raise EdgecError(f"{what} {outdir} exists and was not written by edgec ({why}); edgec replaces its "
                             "output folder as a whole: give a new or empty folder with -o")
        if outdir.is_mount():
            raise EdgecError(f"{what} {outdir} is a mount point, which cannot be replaced; give a folder inside it "
                             "with -o")
        if not os.access(outdir.parent, os.W_OK | os.X_OK):
            raise EdgecError(f"{what} {outdir}: {outdir.parent} is not writable; choose another path")
    _check_location(outdir, what, STAGING_EXTRA)
    return outdir


def check_output_file(path: str | Path, inputs=(), what: str = "output file", folder_exists: bool = True,
                      ours=None) -> Path:
    """Refuse (EdgecError, one line) an output file edgec may not write; returns it as a Path.
    folder_exists: the file's folder must exist already (False: edgec creates it); ours: also accept an existing
    file this says edgec wrote (a format edgec validates itself, as the tuning log of an earlier version)."""
    path = Path(path)
    if str(path).strip() == "":
        raise EdgecError(f"{what}: the name is empty; give a file name")
    check_names(path, what, 16)
    if path.is_symlink():
        raise EdgecError(f"{what} {path} is a symbolic link; give a plain file name")
    target = _resolved(path)
    for given in inputs:
        if given is not None and _resolved(given) == target:
            raise EdgecError(f"{what} {path} is one of the command's inputs; give another file name")
    if os.path.lexists(path):
        if path.is_dir():
            raise EdgecError(f"{what} {path} is a folder; give a file name")
        if not is_edgec_file(path) and not (ours is not None and path.is_file() and ours(path)):
            raise EdgecError(f"{what} {path} exists and was not written by edgec; give a new file name or "
                             "remove it first")
    _check_location(path, what, 16)     # ".<name>.XXXXXXXX.tmp" beside it
    if folder_exists and not path.parent.is_dir():
        raise EdgecError(f"{what} {path}: the folder {path.parent} does not exist; create it or write elsewhere")
    return path


# ---- writing ----

def _atomic(path: Path, data: bytes, mode: int = 0o666) -> None:
    """`data` into a new temporary file beside `path` (O_EXCL: never through a link), renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with _quiet():
            os.unlink(tmp)
        raise


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        return kind is not None and issubclass(kind, OSError)


def _write(path: Path, data: bytes, what: str, inputs=(), ours=None) -> Path:
    path = Path(path)
    check_output_file(path, inputs, what, ours=ours)     # again, just before: nothing else took its place meanwhile
    try:
        _atomic(path, data)
    except OSError as exc:
        raise EdgecError(f"could not write {what} {path} ({exc.strerror or exc}); check the disk space and "
                         "permissions") from None
    return path


def write_stream(path: Path, produce, what: str = "output file", inputs=()) -> Path:
    """A (large, binary) file `produce(fileobj)` writes, atomically; the temporary file is removed on every exit
    path (error, Ctrl-C, a signal the CLI turns into one)."""
    path = Path(path)
    check_output_file(path, inputs, what)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            produce(f)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~umask())
        check_output_file(path, inputs, what)     # nothing else took its place meanwhile
        os.replace(tmp, path)
    except OSError as exc:
        with _quiet():
            os.unlink(tmp)
        raise EdgecError(f"could not write {what} {path} ({exc.strerror or exc}); check the disk space and "
                         "permissions") from None
    except BaseException:
        with _quiet():
            os.unlink(tmp)
        raise
    return path


def write_json(path: Path, data: dict, what: str = "output file", inputs=(), ours=None) -> Path:
    """JSON with edgec's `edgec_version` key and signature, written atomically."""
    return _write(path, signed_json(data).encode(), what, inputs, ours)


def write_text(path: Path, text: str, what: str = "output file", inputs=()) -> Path:
    """A signed text file (HTML, XML, a log) written atomically: a reader sees the old or the new file, whole."""
    return _write(path, signed_text(text, Path(path).name).encode(), what, inputs)


def make_folder(path: Path, what: str = "output folder") -> Path:
    """Create a folder (and its parents) with the umask's permissions; an existing one must be a real folder."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EdgecError(f"could not create the {what} {path} ({exc.strerror or exc}); choose another path") from None
    if path.is_symlink() or not path.is_dir():
        raise EdgecError(f"{what} {path} is not a folder (a link or a file); choose another path")
    return path


def scratch_folder(beside: Path, prefix: str) -> Path:
    """A new folder edgec made (mkdtemp) beside `beside`, with the umask's permissions."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=beside))
    os.chmod(work, 0o777 & ~umask())
    return work


def remove_made(path: Path) -> None:
    """Delete a file or folder edgec made itself (a scratch folder, a temporary file): never through a link."""
    path = Path(path)
    if path.is_symlink() or path.is_file():
        with _quiet():
            path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def full_disk(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG,
                         errno.EBUSY, errno.EXDEV, errno.ENAMETOOLONG)
