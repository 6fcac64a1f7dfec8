"""PlatformIO, offline: edgec's own core dir, tool-scons from the installed SCons package, `pio` runs.

edgec never touches the user's ~/.platformio: it uses its own core dir, ~/.cache/edgec/platformio (or
$EDGEC_PLATFORMIO_HOME: Settings.platformio_home, edgec/settings.py, which the caller passes as `core`).
PlatformIO registers a local platform under its name (one `platforms/edgec-qemu.pio-link` per core dir), so two
edgec installations (checkouts, worktrees, wheels) sharing that core dir would keep re-registering it under each
other's builds; each installation therefore gets its own platforms folder, keyed by where its boards/ folder is.
PlatformIO's registry is not needed for edgec's local platforms: the one core package a build needs, tool-scons,
is made from the `SCons` Python package edgec depends on.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from edgec import children
from edgec.errors import EdgecError
from edgec.resources import resource_dir

REGISTRY_HOST = "api.registry.platformio.org"
_ERROR_RE = re.compile(r"error|overflowed|undefined reference|not found|No such file|HTTPClientError|"
                       r"UnknownBoard|UnknownPlatform|PlatformioException", re.IGNORECASE)


def platforms_dir(core: Path) -> Path:
    """This installation's PlatformIO platforms folder in edgec's core dir `core` (see the module docstring)."""
    key = hashlib.sha1(str(resource_dir("boards").resolve()).encode()).hexdigest()[:12]
    return core / "platforms-by-install" / key


def pio_environ(core: Path) -> dict[str, str]:
    """Environment for PlatformIO (edgec's environment, passed on to the child): private core dir `core`, no
    telemetry, no update or prune checks."""
    env = dict(os.environ)
    env.update({
        "PLATFORMIO_CORE_DIR": str(core),
        "PLATFORMIO_PLATFORMS_DIR": str(platforms_dir(core)),
        "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No",
        "PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL": "3650",   # days between upgrade checks
        "PLATFORMIO_SETTING_CHECK_PRUNE_SYSTEM_THRESHOLD": "0",
        "PLATFORMIO_DISABLE_UPGRADE_CHECK": "true",
        "PLATFORMIO_DISABLE_PROGRESSBAR": "true",
        "PLATFORMIO_NO_ANSI": "true",
        "PYTHONUNBUFFERED": "1",
    })
    for var in ("PLATFORMIO_BUILD_FLAGS", "PLATFORMIO_SRC_BUILD_FLAGS", "PLATFORMIO_DEFAULT_ENVS",
                "PLATFORMIO_BUILD_DIR", "PLATFORMIO_WORKSPACE_DIR"):
        env.pop(var, None)      # the generated project alone decides how it is built
    return env


def scons_package_version() -> str:
    """The tool-scons version the installed PlatformIO asks for (its core dependencies, e.g. "~4.41101.0"
    in PlatformIO 6.1 and 6.2), as the version edgec gives the package it makes."""
    try:
        from platformio.dependencies import get_core_dependencies       # PlatformIO >= 6.1.8
        spec = get_core_dependencies().get("tool-scons")
    except ImportError:
        import platformio
        spec = getattr(platformio, "__core_packages__", {}).get("tool-scons")   # earlier 6.1 releases
    if not spec:
        raise EdgecError("cannot tell which tool-scons this PlatformIO needs; install a supported PlatformIO "
                         "(pip install 'platformio>=6.1,<7')")
    return spec.lstrip("~^=>< ")


def ensure_scons(core: Path) -> Path:
    """Install tool-scons into the core dir `core` from the installed SCons package (idempotent)."""
    dest = core / "packages" / "tool-scons"
    piopm = dest / ".piopm"
    version = scons_package_version()
    if piopm.is_file() and (dest / "SCons").is_dir() and json.loads(piopm.read_text()).get("version") == version:
        return dest
    spec = importlib.util.find_spec("SCons")
    if spec is None or not spec.submodule_search_locations:
        raise EdgecError("the Python package 'scons' is missing: install it (pip install scons) so edgec "
                         "can build firmware with PlatformIO offline")
    src = Path(next(iter(spec.submodule_search_locations)))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tool-scons-", dir=dest.parent))
    shutil.copytree(src, tmp / "SCons", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "scons.py").write_text("from SCons.Script.Main import main\n\nmain()\n")
    return install_tool_package(tmp, dest, "tool-scons", version,
                                "SCons from the Python package installed with edgec")


def install_tool_package(work: Path, dest: Path, name: str, version: str, description: str) -> Path:
    """Finish a PlatformIO tool package made in `work` (a temporary folder beside `dest`): its package.json and
    .piopm, then moved into place as `dest` (replacing an older one); returns dest."""
    (work / "package.json").write_text(json.dumps({
        "name": name, "version": version, "description": description, "system": "*"}))
    (work / ".piopm").write_text(json.dumps({
        "type": "tool", "name": name, "version": version,
        "spec": {"owner": "platformio", "id": None, "name": name, "requirements": None, "uri": None}}))
    if dest.exists():
        shutil.rmtree(dest, ignore_errors=True)
    try:
        work.rename(dest)
    except OSError:               # another edgec process installed it meanwhile
        shutil.rmtree(work, ignore_errors=True)
    return dest


def pio_command() -> list[str]:
    """How to start PlatformIO: the `platformio` module of this Python."""
    if importlib.util.find_spec("platformio") is None:
        raise EdgecError("PlatformIO is not installed in this Python: pip install platformio")
    return [sys.executable, "-m", "platformio"]


def _error_summary(output: str) -> str:
    """The most telling line of a failed build's output."""
    lines = [re.sub(r"^\S*/(ld|collect2)(\.\w+)?:", r"\1:", ln.strip()) for ln in output.splitlines() if ln.strip()]
    for line in lines:                       # the first compiler/linker error is the cause
        if re.search(r"(error:|overflowed|undefined reference)", line):
            return line
    for line in reversed(lines):
        if _ERROR_RE.search(line) and not line.startswith("="):
            return line
    return lines[-1] if lines else "no output"


PROGRESS_EVERY_S = 15.0      # a long build says how far it got this often
# PlatformIO's lines worth showing while it works: its package downloads and installs, and the size summary
_SHOWN_RE = re.compile(r"^(RAM:|Flash:|\S.* Manager: |Downloading|Unpacking|Installing)")
_NETWORK_RE = re.compile(r"HTTPClientError|Could not resolve|Max retries exceeded|Connection(Error| refused)|"
                         r"Temporary failure in name resolution|InternetConnectionError")
OFFLINE_HINT = ("without internet, install an offline bundle with `edgec packages install BUNDLE` (e.g. "
                "../shared/frameworks/stm32duino-offline.tar.xz, or one made with `edgec packages bundle` on a "
                "connected machine), or connect once so PlatformIO can download them")


def _stream(cmd: list[str], project_dir: Path, core: Path, log, timeout: float) -> tuple[str, int | None]:
    """Run cmd, passing PlatformIO's download/install lines to log and, every PROGRESS_EVERY_S seconds
    (even while a download prints nothing), a progress line; (output, exit code), the code None on timeout."""
    # its own process group, killed on any interrupt or signal, and it dies with edgec (edgec/children.py)
    proc = children.spawn(cmd, cwd=project_dir, env=pio_environ(core), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    lines: list[str] = []
    expired, done = threading.Event(), threading.Event()
    start = time.monotonic()

    def kill() -> None:
        expired.set()
        children.end(proc)       # the whole build (scons, compilers) and its temporary files

    def progress() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            compiled = sum(ln.startswith(("Compiling ", "Archiving ", "Linking ")) for ln in list(lines))
            log(f"  ... still building: {compiled} files compiled in {time.monotonic() - start:.0f} s")
    # a daemon timer, started inside the try: an interrupt right after the spawn (while a thread starts) left
    # the timer waiting out the build timeout, and edgec's exit waited for it (a hang after "terminated")
    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    ticker = threading.Thread(target=progress, daemon=True) if log is not None else None
    try:
        timer.start()
        if ticker:
            ticker.start()
        for line in proc.stdout:
            lines.append(line)
            if log is not None and _SHOWN_RE.match(line) and not line.startswith(("RAM:", "Flash:")):
                log(line.rstrip())
        proc.wait()
    finally:
        timer.cancel()
        done.set()
        if ticker and ticker.ident is not None:       # (started)
            ticker.join()
        if proc.poll() is None:      # interrupted: take PlatformIO and its compilers down with us
            children.kill_group(proc)
    return "".join(lines), (None if expired.is_set() else proc.returncode)


def run_pio(args: list[str], project_dir: Path, log_file: Path, core: Path, timeout: float, log=print) -> str:
    """Run `pio <args>` in project_dir with edgec's core dir `core`, saving its output to log_file; EdgecError on
    failure (and the log stays in log_file, which the error names) or after `timeout` seconds
    (Settings.build_timeout)."""
    ensure_scons(core)
    cmd = pio_command() + list(args)
    from edgec import outputs
    output, code = _stream(cmd, project_dir, core, log, timeout)
    outputs.write_text(log_file, f"$ {' '.join(cmd)}\n{output}" + (f"\n[edgec] timed out after {timeout:.0f} s\n"
                                                                     if code is None else ""), what="build log")
    if code is None:
        raise EdgecError(f"`pio {' '.join(args)}` timed out after {timeout:.0f} s (log: {log_file}); give it longer "
                         "with EDGEC_BUILD_TIMEOUT=SECONDS")
    if code != 0:
        hint = f"; PlatformIO could not reach its registry: {OFFLINE_HINT}" if _NETWORK_RE.search(output) else ""
        raise EdgecError(f"`pio {' '.join(args)}` failed: {_error_summary(output)}{hint} (full log: {log_file})")
    if log is not None:
        for line in output.splitlines():
            if line.startswith(("RAM:", "Flash:")):
                log(line)
    return output


def registry_reachable(timeout: float = 3.0) -> bool:
    """Can PlatformIO's registry be reached (a TCP connection to it within `timeout` seconds)?"""
    answer: list[bool] = []

    def probe() -> None:            # in a thread: a stuck DNS lookup ignores the socket's timeout
        try:
            with socket.create_connection((REGISTRY_HOST, 443), timeout=timeout):
                answer.append(True)
        except OSError:
            answer.append(False)
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def register_local_platforms(core: Path) -> list[str]:
    """Make edgec's local platforms (boards/platforms/<name>) known to PlatformIO by name, so a project can
    say `platform = edgec-qemu` (an exported example: no absolute path). Returns the names registered now."""
    done = []
    for folder in sorted((resource_dir("boards") / "platforms").iterdir()):
        if (folder / "platform.json").is_file() and not (platforms_dir(core) / f"{folder.name}.pio-link").is_file():
            argv = pio_command() + ["pkg", "install", "--global", "--silent", "--platform", f"symlink://{folder.resolve()}"]
            proc = subprocess.run(argv, env=pio_environ(core), stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if proc.returncode != 0:
                raise EdgecError(f"cannot register edgec's platform {folder.name} with PlatformIO: "
                                 f"{_error_summary(proc.stdout + proc.stderr)}")
            done.append(folder.name)
    return done


def main(argv: list[str] | None = None) -> int:
    """`python -m edgec.targets.pio ARGS`: PlatformIO with edgec's offline set-up (for exported examples). A
    command of its own: it reads the environment's settings (edgec/settings.py) once, here."""
    from edgec.settings import Settings

    try:
        core = Settings.from_environment().platformio_home
        ensure_scons(core)
        register_local_platforms(core)
    except EdgecError as e:
        print(f"edgec: error: {e}", file=sys.stderr)
        return 2
    args = sys.argv[1:] if argv is None else argv
    return subprocess.call(pio_command() + list(args), env=pio_environ(core))


if __name__ == "__main__":
    sys.exit(main())
