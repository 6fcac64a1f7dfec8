"""Write an output folder all at once: nothing half-written is ever left behind, and only a folder edgec
wrote is ever replaced (edgec/outputs.py, the one writer)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from edgec import outputs
from edgec.errors import EdgecError
from edgec.outputs import check_output_folder, mark


@contextmanager
def staged_folder(outdir: Path, kind: str = "build", inputs=(), what: str = "output folder"):
    """A scratch folder next to `outdir`; when the block succeeds it replaces `outdir`, when it fails
    (error, interrupt or a signal the CLI turns into one) it is removed and `outdir` is left as it was.
    `outdir` is checked first (check_output_folder) and again just before it is replaced."""
    outdir = check_output_folder(outdir, inputs, what)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        work = outputs.scratch_folder(outdir.parent, f".{outdir.name}.")
    except OSError as exc:
        raise EdgecError(f"could not create a folder beside {outdir} ({exc.strerror or exc}); "
                         "choose another -o folder") from None
    try:
        yield work
        mark(work, kind)
        check_output_folder(outdir, inputs, what)     # nothing else took its place meanwhile
        _replace(work, outdir)
    except OSError as exc:
        outputs.remove_made(work)
        if outputs.full_disk(exc):
            raise EdgecError(f"could not write the {what} {outdir} ({exc.strerror}); nothing was written: "
                             "free some disk space or choose another folder") from None
        raise
    except BaseException:
        outputs.remove_made(work)
        raise


def _replace(work: Path, outdir: Path) -> None:
    """Put `work` in `outdir`'s place: the old folder (checked to be edgec's) is moved aside first, then
    removed, so at every moment `outdir` is the old or the new folder, whole."""
    if not outdir.exists():
        work.rename(outdir)
        return
    old = outputs.scratch_folder(outdir.parent, f".{outdir.name}.")
    old.rmdir()
    outdir.rename(old)
    try:
        work.rename(outdir)
    except BaseException:
        old.rename(outdir)
        raise
    outputs.remove_made(old)
