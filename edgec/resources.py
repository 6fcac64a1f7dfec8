"""Where edgec's data folders (templates/, boards/, runtime_c/) live.

In a wheel they are packaged under edgec/_data/; in a source checkout (or an
editable install) they are the top-level folders of the repository.
"""
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Absolute path of the data folder `name` ("templates", "boards" or "runtime_c")."""
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"edgec data folder '{name}' is missing from the installation ({packaged})")
