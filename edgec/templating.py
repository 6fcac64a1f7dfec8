"""The Jinja2 environment of edgec's templates (templates/: C sources, PlatformIO projects, reports and
plots), with the filters that make any text safe in generated C."""
from __future__ import annotations

import re

import jinja2

from edgec.resources import resource_dir


def c_identifier(text: str) -> str:
    """A lower-case C identifier made from a model name ('MobileNet v1.onnx' -> 'mobilenet_v1')."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower() or "model"
    return "m_" + name if name[0].isdigit() else name


def c_string(text: str, limit: int = 255) -> str:
    """The body of a C string literal holding `text` (UTF-8, at most `limit` bytes): printable ASCII as is,
    everything else octal escaped; '?' escaped too (no trigraphs), so any ONNX name is safe in generated C."""
    out = []
    for b in str(text).encode("utf-8", "replace")[:limit]:
        c = chr(b)
        out.append("\\" + c if c in '"\\?' else c if 32 <= b < 127 else f"\\{b:03o}")
    return "".join(out)


def c_comment(text: str, limit: int = 120) -> str:
    """`text` made safe inside a C comment: printable ASCII only, no comment ends or trigraphs, shortened."""
    safe = "".join(c if 32 <= ord(c) < 127 else "?" for c in str(text)).replace("*/", "*?").replace("/*", "/?").replace("??", "?.")
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(c_string=c_string, c_comment=c_comment)
    return env
