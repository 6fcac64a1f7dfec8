"""The Jinja2 environment of edgec's templates (templates/: C sources, PlatformIO projects, reports and
plots), with the filters that make any text safe in generated C."""
from __future__ import annotations

import functools
import re

import jinja2
import numpy as np

from edgec.resources import resource_dir


def c_identifier(text: str) -> str:
    """A lower-case C identifier made from a model name ('MobileNet v1.onnx' -> 'mobilenet_v1')."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower() or "model"
    return "m_" + name if name[0].isdigit() else name


C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while _bool _complex _imaginary _alignas _alignof _atomic _generic _noreturn _static_assert
    _thread_local asm bool true false nullptr typeof alignas alignof static_assert thread_local constexpr
    class new delete this template typename namespace operator private public protected virtual friend""".split())
# headers a generated <name>.h would shadow (C standard, POSIX and the frameworks edgec builds with)
C_HEADERS = frozenset("""assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal
    stdalign stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn string tgmath threads time uchar
    wchar wctype unistd fcntl pthread sched semaphore strings alloca malloc memory endian features sys arm_math
    arm_acle arm_neon cmsis_compiler cmsis_gcc core_cm0 core_cm3 core_cm4 core_cm7 arduino wire spi hal main
    bench_main mlperf_main example model_data library config sdkconfig freertos task queue""".split())
# target names CMake reserves (policy CMP0037): a model library called `all` or `install` would not configure
CMAKE_TARGETS = frozenset("""all install test clean help package package_source edit_cache rebuild_cache depend
    list_install_components preinstall all_build zero_check run_tests""".split())
RESERVED_PREFIX = "edgec"     # the runtime's files and symbols: edgec_nn.h, edgec_conv.c, edgec_*()


def model_c_name(text: str) -> str:
    """The C name of a model (its file names, symbols and macros): c_identifier(text), changed
    when that would collide with a runtime file or symbol (edgec_*), a C or platform header, a firmware source
    (main), a C/C++ keyword or a target name CMake reserves (`model_` put in front): a model called
    `stdint.onnx` must not shadow <stdint.h>, one called `all.onnx` must not be CMake's target `all`."""
    name = c_identifier(text)
    if (name in C_KEYWORDS or name in C_HEADERS or name.lower() in CMAKE_TARGETS
            or name.startswith(RESERVED_PREFIX)):
        name = f"model_{name}"
    return name


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


def c_bytes(values, per_line: int = 16) -> str:
    """int8 values as the body of a C array initializer."""
    flat = [str(int(v)) for v in np.asarray(values).reshape(-1)]
    return ",\n".join("    " + ", ".join(flat[i:i + per_line]) for i in range(0, len(flat), per_line))


def c_float32(value) -> str:
    """A C float literal of exactly the float32 that NumPy rounds `value` to (a hexadecimal literal: no decimal
    rounding between the host and the C compiler), e.g. 0x1.95b3c4p-5f."""
    mantissa, exponent = float(np.float32(value)).hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.') if '.' in mantissa else mantissa}p{exponent}f"


def number(value, digits: int = 0) -> str:
    """A report figure with thousands separators; n/a when it was not measured."""
    return "n/a" if value is None else f"{value:,.{digits}f}"


def percent(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    """One environment per process, so each template is compiled once (compiling them took a quarter of a
    second per generated model). Shared: callers render, they never change it."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(c_float32=c_float32, c_string=c_string, c_comment=c_comment, c_bytes=c_bytes, num=number, pct=percent)
    return env
