"""Write an output folder all at once: nothing half-written is ever left behind."""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged_folder(outdir: Path):
    """A scratch folder next to `outdir`; when the block succeeds it replaces `outdir`, when it fails
    (error or interrupt) it is removed and `outdir` is left as it was."""
    outdir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if outdir.exists():
        shutil.rmtree(outdir)
    work.rename(outdir)
