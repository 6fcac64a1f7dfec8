"""edgec's settings from the environment, read once.

The application (edgec/api.py, cli.py, testing.py, the pytest plugin, tune, export, doctor, the farm) calls
`Settings.from_environment()` once and hands the value down: the stages take what they need of it as
parameters (a memory limit, a cache folder, a PlatformIO core, a timeout) and never read the environment
themselves. Every variable as docs/ describes it:

    EDGEC_CACHE_DIR         the cache root (calibration statistics calib/, the tuning log tuning.json, the
                            compiled QEMU plugin qemu-plugins/), default ~/.cache/edgec
    EDGEC_MEMORY_LIMIT      the largest array edgec allocates at once (bytes, or with K/M/G), default 1 GiB
    EDGEC_PLATFORMIO_HOME   edgec's own PlatformIO core, default ~/.cache/edgec/platformio
    EDGEC_BUILD_TIMEOUT     seconds a `pio run` may take, default 900
    EDGEC_OFFLINE=1         no probe of PlatformIO's registry before a build that lacks packages
    LG_COORDINATOR          the labgrid coordinator, default 127.0.0.1:20408
    CC                      the host C compiler of the cycle-estimate QEMU plugin, default cc (else gcc)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from edgec import limits
from edgec.errors import EdgecError

DEFAULT_BUILD_TIMEOUT_S = 900.0
DEFAULT_COORDINATOR = "127.0.0.1:20408"


def _home_cache() -> Path:
    return Path.home() / ".cache" / "edgec"


@dataclass(frozen=True)
class Settings:
    cache_root: Path = field(default_factory=_home_cache)
    memory_limit: int = limits.DEFAULT
    platformio_home: Path = field(default_factory=lambda: _home_cache() / "platformio")
    build_timeout: float = DEFAULT_BUILD_TIMEOUT_S
    offline: bool = False
    labgrid_coordinator: str = DEFAULT_COORDINATOR
    c_compiler: str = "cc"

    @property
    def calib_cache(self) -> Path:
        """Where calibration statistics are cached (edgec/quant/calibrate.py)."""
        return self.cache_root / "calib"

    @property
    def tuning_log(self) -> Path:
        """The default tuning log (edgec/lower/tuning_records.py)."""
        return self.cache_root / "tuning.json"

    @property
    def qemu_plugins(self) -> Path:
        """Where the compiled cycle-estimate QEMU plugin is kept (edgec/bench/cycles.py)."""
        return self.cache_root / "qemu-plugins"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment (os.environ unless given) asks for; an EdgecError naming a variable
        whose value is not what it takes."""
        env = os.environ if environ is None else environ
        cache, pio = env.get("EDGEC_CACHE_DIR"), env.get("EDGEC_PLATFORMIO_HOME")
        for name, value in (("EDGEC_CACHE_DIR", cache), ("EDGEC_PLATFORMIO_HOME", pio)):
            if value and os.path.lexists(Path(value).expanduser()) and not Path(value).expanduser().is_dir():
                raise EdgecError(f"{name}={value!r} is not a folder; point it at a folder (or unset it)")
        return cls(cache_root=Path(cache).expanduser() if cache else _home_cache(),
                   memory_limit=limits.parse(env.get(limits.ENV, "")),
                   platformio_home=Path(pio).expanduser() if pio else _home_cache() / "platformio",
                   build_timeout=_timeout(env.get("EDGEC_BUILD_TIMEOUT", "")),
                   offline=env.get("EDGEC_OFFLINE") == "1",
                   labgrid_coordinator=env.get("LG_COORDINATOR") or DEFAULT_COORDINATOR,
                   c_compiler=env.get("CC", "cc"))


def _timeout(text: str) -> float:
    try:
        value = float(text) if text else DEFAULT_BUILD_TIMEOUT_S
    except ValueError:
        raise EdgecError(f"EDGEC_BUILD_TIMEOUT={text!r} is not a number of seconds") from None
    if value <= 0:
        raise EdgecError(f"EDGEC_BUILD_TIMEOUT={text!r} must be positive")
    return value
