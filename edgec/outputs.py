"""What edgec may write and replace: every output path is checked before any work starts.

Rules (docs/building.md, "What edgec writes and deletes"):
- an output folder (`build -o`, `export -o`) may be replaced only when it does not exist, is empty, or
  holds edgec's marker file (`MARKER`, or the report an earlier edgec version left there);
- an output file (`--json`, `calibrate -o`, the bench report) may be overwritten only when it does not
  exist or edgec wrote it (JSON with an `edgec_version` key, HTML with edgec's generator tag);
- never a symlink, the file-system root, the home folder, the current folder or one of its parents, nor a
  folder holding one of the command's input files; names must fit the file system.
A refusal is one line (EdgecError) naming the path and what to do instead.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from edgec import __version__
from edgec.errors import EdgecError

MARKER = ".edgec-output"
LEGACY_MARKERS = ("build-report.json", "edgec-export.json")   # what earlier edgec versions left in their folders
HTML_TAG = '<meta name="generator" content="edgec">'
STAGING_EXTRA = 10    # ".<name>.XXXXXXXX": staging and old-copy folders beside the output folder


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_location(path: Path, what: str, extra: int = 0) -> None:
    """The path's parent can hold it: names fit, parents are folders, the nearest existing one is writable."""
    absolute = Path(os.path.abspath(path))
    for part in absolute.parts[1:]:
        if len(part.encode()) + extra > _name_max(_existing_ancestor(absolute.parent)):
            raise EdgecError(f"{what} {path}: the name '{part[:40]}...' is too long for the file system; "
                             "choose a shorter name")
    if len(str(absolute).encode()) + extra >= 4096:
        raise EdgecError(f"{what} {path}: the path is too long for the file system; choose a shorter one")
    base = _existing_ancestor(absolute.parent)
    if not base.is_dir():
        raise EdgecError(f"{what} {path}: {base} is a file, not a folder; choose another path")
    if not os.access(base, os.W_OK | os.X_OK):
        raise EdgecError(f"{what} {path}: {base} is not writable; choose another path")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def is_edgec_file(path: Path) -> bool:
    """A file edgec wrote: JSON with an `edgec_version` key, or HTML with edgec's generator tag."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
        if HTML_TAG.encode() in head:
            return True
        if path.stat().st_size > 64 << 20:
            return False
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "edgec_version" in data


def is_edgec_folder(folder: Path) -> bool:
    """A folder edgec wrote (its marker, or what an earlier edgec version left there) or an empty one."""
    return any((folder / m).is_file() for m in (MARKER, *LEGACY_MARKERS)) or not any(folder.iterdir())


def check_output_folder(outdir: str | Path, inputs=(), what: str = "output folder") -> Path:
    """Refuse (EdgecError, one line) an output folder edgec may not replace; returns it as a Path."""
    outdir = Path(outdir)
    if str(outdir).strip() == "":
        raise EdgecError(f"{what}: the name is empty; give a folder name with -o")
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
        if given is not None and _inside(Path(given).resolve(), resolved):
            raise EdgecError(f"{what} {outdir} holds the input {given}; replacing it would delete it: "
                             "give another folder with -o")
    if outdir.exists():
        if not outdir.is_dir():
            raise EdgecError(f"{what} {outdir} is a file, not a folder; give another path with -o")
        try:
            ours = is_edgec_folder(outdir)
        except OSError as exc:
            raise EdgecError(f"{what} {outdir} cannot be read ({exc.strerror}); give another folder with -o") from None
        if not ours:
            raise EdgecError(f"{what} {outdir} exists and was not written by edgec (no {MARKER} in it); "
                             "edgec replaces its output folder as a whole: give a new or empty folder with -o")
        if outdir.is_mount():
            raise EdgecError(f"{what} {outdir} is a mount point, which cannot be replaced; give a folder inside it "
                             "with -o")
        if not os.access(outdir.parent, os.W_OK | os.X_OK):
            raise EdgecError(f"{what} {outdir}: {outdir.parent} is not writable; choose another path")
    _check_location(outdir, what, STAGING_EXTRA)
    return outdir


def check_output_file(path: str | Path, inputs=(), what: str = "output file", folder_exists: bool = True) -> Path:
    """Refuse (EdgecError, one line) an output file edgec may not write; returns it as a Path.
    folder_exists: the file's folder must exist already (False: edgec creates it)."""
    path = Path(path)
    if str(path).strip() == "":
        raise EdgecError(f"{what}: the name is empty; give a file name")
    if path.is_symlink():
        raise EdgecError(f"{what} {path} is a symbolic link; give a plain file name")
    for given in inputs:
        if given is not None and Path(given).resolve() == path.resolve():
            raise EdgecError(f"{what} {path} is one of the command's inputs; give another file name")
    if path.exists():
        if path.is_dir():
            raise EdgecError(f"{what} {path} is a folder; give a file name")
        if not path.is_file() or not is_edgec_file(path):
            raise EdgecError(f"{what} {path} exists and was not written by edgec; give a new file name or "
                             "remove it first")
    _check_location(path, what, 16)     # ".<name>.<pid>.tmp" beside it
    if folder_exists and not path.parent.is_dir():
        raise EdgecError(f"{what} {path}: the folder {path.parent} does not exist; create it or write elsewhere")
    return path


def write_json(path: Path, data: dict) -> None:
    """JSON with edgec's `edgec_version` key, written atomically (a temporary file renamed in place)."""
    write_text(path, json.dumps({"edgec_version": __version__, **data}, indent=1))


def write_text(path: Path, text: str) -> None:
    """Write a file atomically: a reader sees the old or the new file, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise EdgecError(f"could not write {path} ({exc.strerror or exc}); check the disk space and "
                         "permissions") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def mark(folder: Path, kind: str) -> None:
    """The marker file that makes `folder` one edgec may replace later."""
    (folder / MARKER).write_text(json.dumps({"written_by": "edgec", "edgec_version": __version__, "kind": kind}) + "\n")
