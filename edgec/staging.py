"""Write an output folder all at once: nothing half-written is ever left behind, and only a folder edgec
wrote is ever replaced (edgec/outputs.py)."""
from __future__ import annotations

import errno
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from edgec.errors import EdgecError
from edgec.outputs import check_output_folder, mark


@contextmanager
def staged_folder(outdir: Path, kind: str = "build", inputs=()):
    """A scratch folder next to `outdir`; when the block succeeds it replaces `outdir`, when it fails
    (error, interrupt or a signal the CLI turns into one) it is removed and `outdir` is left as it was.
    `outdir` is checked first (check_output_folder) and again just before it is replaced."""
    outdir = check_output_folder(outdir, inputs)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    except OSError as exc:
        raise EdgecError(f"could not create a folder beside {outdir} ({exc.strerror or exc}); "
                         "choose another -o folder") from None
    try:
        yield work
        mark(work, kind)
        check_output_folder(outdir, inputs)     # nothing else took its place meanwhile
        _replace(work, outdir)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG,
                         errno.EBUSY, errno.EXDEV, errno.ENAMETOOLONG):
            raise EdgecError(f"could not write the output folder {outdir} ({exc.strerror}); nothing was written: "
                             "free some disk space or choose another -o folder") from None
        raise
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _replace(work: Path, outdir: Path) -> None:
    """Put `work` in `outdir`'s place: the old folder (checked to be edgec's) is moved aside first, then
    removed, so at every moment `outdir` is the old or the new folder, whole."""
    if not outdir.exists():
        work.rename(outdir)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    old.rmdir()
    outdir.rename(old)
    try:
        work.rename(outdir)
    except BaseException:
        old.rename(outdir)
        raise
    shutil.rmtree(old, ignore_errors=True)
