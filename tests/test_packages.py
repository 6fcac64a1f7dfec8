"""Offline PlatformIO packages (edgec/targets/packages.py, `edgec packages`), the build's pre-flight check
and the fate of a failed build's log: all on small fake cores and bundles, no firmware is built here."""
from __future__ import annotations

import json
import shutil
import sys
import tarfile
import time
from pathlib import Path

import pytest

import conftest
from conftest import EXAMPLES, assert_clean_error, edgec
from edgec.errors import EdgecError
from edgec.targets import packages, pio
from edgec.targets.boards import load_board
from edgec.targets.firmware import build_firmware
from edgec.settings import Settings

STM32_PLATFORM = {"name": "ststm32", "version": "19.6.0",
                  "frameworks": {"arduino": {"package": "framework-arduinoststm32"}},
                  "packages": {"toolchain-gccarmnoneeabi": {"type": "toolchain", "version": ">=1.60301.0"},
                               "framework-arduinoststm32": {"type": "framework", "optional": True},
                               "framework-cmsis": {"type": "framework", "optional": True}}}


def _folder(root: Path, kind: str, name: str, version: str, manifest: dict | None = None) -> Path:
    folder = root / kind / name
    folder.mkdir(parents=True)
    (folder / ".piopm").write_text(json.dumps({"type": kind[:-1], "name": name, "version": version}))
    if manifest is not None:
        (folder / "platform.json").write_text(json.dumps(manifest))
    (folder / "README").write_text(f"{name} {version}\n")
    return folder


def _bundle(tmp_path: Path, version: str = "4.21200.0", with_toolchain: bool = False) -> Path:
    root = tmp_path / f"bundle-src-{version}"
    _folder(root, "platforms", "ststm32", "19.6.0", STM32_PLATFORM)
    _folder(root, "packages", "framework-arduinoststm32", version)
    _folder(root, "packages", "framework-cmsis", "2.60300.0")
    if with_toolchain:
        _folder(root, "packages", "toolchain-gccarmnoneeabi", "1.120301.0")
    archive = tmp_path / f"bundle-{version}.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for kind in ("platforms", "packages"):
            tar.add(root / kind, arcname=kind)
    return archive


@pytest.fixture
def core(tmp_path, monkeypatch):
    """An empty PlatformIO core of edgec's (EDGEC_PLATFORMIO_HOME) for this test alone."""
    home = tmp_path / "core"
    monkeypatch.setenv("EDGEC_PLATFORMIO_HOME", str(home))
    return home


def test_install_bundle_seeds_the_core_makes_the_toolchain_shim_and_is_idempotent(core, tmp_path):
    board = load_board("nucleo-f446re")
    assert packages.missing(board, core) == ["platform ststm32"]
    archive = _bundle(tmp_path)
    first = packages.install_bundle(archive, core)
    assert set(first["installed"]) == {"platforms/ststm32", "packages/framework-arduinoststm32",
                                       "packages/framework-cmsis", "packages/toolchain-gccarmnoneeabi"}
    assert (pio.platforms_dir(core) / "ststm32" / "platform.json").is_file()
    gcc = core / "packages" / "toolchain-gccarmnoneeabi" / "bin" / "arm-none-eabi-gcc"
    assert gcc.is_symlink() and gcc.resolve() == Path(shutil.which("arm-none-eabi-gcc")).resolve()
    assert json.loads((gcc.parent.parent / ".piopm").read_text())["version"] == packages.ARM_TOOLCHAIN_VERSION
    assert packages.missing(board, core) == []
    assert packages.status(core)["boards"]["nucleo-f446re"] == []

    again = packages.install_bundle(archive, core)
    assert again["installed"] == [] and len(again["kept"]) == 3
    newer = packages.install_bundle(_bundle(tmp_path, version="4.21300.0"), core)
    assert newer["installed"] == ["packages/framework-arduinoststm32"]
    assert packages.installed(core)["packages"]["framework-arduinoststm32"] == "4.21300.0"


def test_missing_names_the_framework_and_toolchain_packages_of_an_installed_platform(core):
    _folder(pio.platforms_dir(core).parent, pio.platforms_dir(core).name, "ststm32", "19.6.0", STM32_PLATFORM)
    lacking = packages.missing(load_board("nucleo-l4r5zi"), core)
    assert lacking == ["package toolchain-gccarmnoneeabi", "package framework-arduinoststm32"]
    assert packages.missing(load_board("qemu-cortex-m4"), core) == []      # edgec's own platform needs nothing


def test_bundle_round_trip_leaves_the_toolchain_shim_out(core, tmp_path, monkeypatch):
    packages.install_bundle(_bundle(tmp_path), core)
    out = tmp_path / "made.tar.xz"
    packed = packages.bundle([load_board("nucleo-f446re"), load_board("nucleo-h743zi2")], out, core)
    assert packed == ["packages/framework-arduinoststm32", "packages/framework-cmsis", "platforms/ststm32"]
    with tarfile.open(out) as tar:
        assert not any("toolchain" in n for n in tar.getnames())
    with pytest.raises(EdgecError, match=r"cannot bundle rpi-pico: platform raspberrypi not installed"):
        packages.bundle([load_board("rpi-pico")], tmp_path / "pico.tar.xz", core)
    other = tmp_path / "other-core"                      # the machine without internet
    packages.install_bundle(out, other)
    assert packages.missing(load_board("nucleo-h743zi2"), other) == []


def test_bad_bundles_are_one_line_errors(core, tmp_path):
    with pytest.raises(EdgecError, match="does not exist"):
        packages.install_bundle(tmp_path / "nope.tar.xz", core)
    junk = tmp_path / "junk.tar.xz"
    junk.write_bytes(b"not a tar")
    with pytest.raises(EdgecError, match="not a readable tar archive"):
        packages.install_bundle(junk, core)
    bare = tmp_path / "bare"
    (bare / "packages" / "x").mkdir(parents=True)
    with tarfile.open(tmp_path / "bare.tar", "w") as tar:
        tar.add(bare / "packages", arcname="packages")
    with pytest.raises(EdgecError, match=r"packages/x has no \.piopm"):
        packages.install_bundle(tmp_path / "bare.tar", core)
    assert not (core / "packages" / "x").exists()


def test_packages_cli_install_and_list(tmp_path):
    env = {"EDGEC_PLATFORMIO_HOME": str(tmp_path / "core")}
    archive = _bundle(tmp_path)
    proc = edgec("packages", "install", archive, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "platforms/ststm32" in proc.stdout
    listed = json.loads(edgec("packages", "list", "--json", env=env).stdout)
    assert listed["platforms"] == {"ststm32": "19.6.0"}
    assert listed["boards"]["nucleo-f446re"] == [] and listed["boards"]["rpi-pico"] == ["platform raspberrypi"]
    assert_clean_error(edgec("packages", "install", tmp_path / "missing.tar.xz", env=env), "does not exist")


def test_offline_build_without_the_platform_fails_in_seconds_and_keeps_its_log(tmp_path):
    env = {"EDGEC_PLATFORMIO_HOME": str(tmp_path / "empty-core"), "EDGEC_OFFLINE": "1"}
    out = tmp_path / "out" / "digits"
    t0 = time.monotonic()
    proc = edgec("build", EXAMPLES / "digits_cnn" / "model.onnx", "--calib", EXAMPLES / "digits_cnn" / "calib.npz",
                 "--board", "nucleo-f446re", "-o", out, "--sensitivity-samples", "0", env=env)
    assert time.monotonic() - t0 < 60
    log = out.parent / "digits.build-failed.log"
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]          # (the lines before it are the build's progress)
    assert error.startswith("edgec: error: board nucleo-f446re needs PlatformIO's platform ststm32"), error
    assert "edgec packages install" in error and error.endswith(f"(log: {log})"), error
    assert "platform ststm32" in log.read_text()
    assert not out.exists() and [p.name for p in out.parent.iterdir()] == [log.name]   # nothing half-written


def test_a_failed_pio_run_keeps_its_log_where_the_error_says(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "platformio.ini").write_text("[env:qemu-cortex-m4]\nplatform = symlink:///nonexistent/platform\n")
    kept = tmp_path / "kept.log"
    with pytest.raises(EdgecError, match=rf"failed: .*\(full log: {kept}\)") as e:
        build_firmware(project, load_board("qemu-cortex-m4"), Settings.from_environment(), log=None, log_file=kept)
    assert kept.is_file() and "nonexistent" in kept.read_text(), str(e.value)


def test_a_pio_run_past_its_timeout_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_BUILD_TIMEOUT", "0.3")
    env = Settings.from_environment()
    (tmp_path / "platformio.ini").write_text("[env:x]\nplatform = native\n")
    t0 = time.monotonic()
    with pytest.raises(EdgecError, match=r"timed out after 0 s .*EDGEC_BUILD_TIMEOUT"):
        pio.run_pio(["run"], tmp_path, tmp_path / "build.log", env.platformio_home, env.build_timeout, log=None)
    assert time.monotonic() - t0 < 10
    assert "[edgec] timed out" in (tmp_path / "build.log").read_text()
    monkeypatch.setenv("EDGEC_BUILD_TIMEOUT", "soon")
    with pytest.raises(EdgecError, match="is not a number of seconds"):
        Settings.from_environment()


def test_pio_output_is_streamed_and_a_registry_error_says_how_to_work_offline(tmp_path, monkeypatch):
    script = ("import time; print('Compiling .pio/build/x/src/a.c.o', flush=True); time.sleep(0.5); "
              "print('Platform Manager: Installing ststm32', flush=True); print('HTTPClientError: '); raise SystemExit(1)")
    monkeypatch.setattr(pio, "pio_command", lambda: [sys.executable, "-c", script])
    monkeypatch.setattr(pio, "PROGRESS_EVERY_S", 0.2)
    shown = []
    with pytest.raises(EdgecError, match=r"could not reach its registry: .*edgec packages install.*\(full log: "):
        env = Settings.from_environment()
        pio.run_pio(["run"], tmp_path, tmp_path / "log.txt", env.platformio_home, env.build_timeout, log=shown.append)
    assert "Platform Manager: Installing ststm32" in shown
    assert any(s.startswith("  ... still building: 1 files compiled in ") for s in shown), shown
    assert "HTTPClientError" in (tmp_path / "log.txt").read_text()


def test_a_missing_stm32duino_bundle_fails_in_ci_and_skips_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "STM32DUINO_BUNDLE", tmp_path / "stm32duino-offline.tar.xz")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI expects ../shared/frameworks"):
        conftest.require_stm32duino_bundle()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not present: the vendor-framework builds need it"):
        conftest.require_stm32duino_bundle()


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.is_symlink(), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(folder.rglob("*"))}


def _hostile(tmp_path: Path, name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, linkname: str = "") -> Path:
    """A bundle with a good package and one hostile member (written header by header: no sanitising)."""
    archive = tmp_path / "hostile.tar"
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as tar:
        for member, data in (("packages/good/.piopm", b'{"name": "good", "version": "1"}'),
                             (name, b"x" * size)):
            info = tarfile.TarInfo(member)
            info.type, info.size, info.linkname = kind if member == name else tarfile.REGTYPE, len(data), linkname
            if info.type in (tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE):
                info.size, data = 0, b""
            tar.addfile(info, __import__("io").BytesIO(data))
    return archive


@pytest.mark.parametrize("name, kind, linkname", [
    ("packages/../X/.piopm", tarfile.REGTYPE, ""), ("packages/..", tarfile.DIRTYPE, ""),
    ("platforms/../X/.piopm", tarfile.REGTYPE, ""), ("/etc/edgec-owned", tarfile.REGTYPE, ""),
    ("packages/x/../../../outside", tarfile.REGTYPE, ""), ("packages/x/link", tarfile.SYMTYPE, "/etc/passwd"),
    ("packages/x/hard", tarfile.LNKTYPE, "packages/good/.piopm"), ("packages/x/dev", tarfile.CHRTYPE, ""),
    ("packages/x/fifo", tarfile.FIFOTYPE, ""), ("elsewhere/x/.piopm", tarfile.REGTYPE, ""),
    ("packages/./x/.piopm", tarfile.REGTYPE, "")])
def test_hostile_bundle_members_are_refused_before_anything_changes(name, kind, linkname, core, tmp_path):
    """Every member is checked against the destination before anything is deleted or written: the core (an
    installed platform and package, a user's file) is left exactly as it was."""
    packages.install_bundle(_bundle(tmp_path), core)
    (core / "mine.txt").write_text("the user's")
    before = _snapshot(core)
    with pytest.raises(EdgecError, match="nothing was installed|not a path inside") as e:
        packages.install_bundle(_hostile(tmp_path, name, kind, linkname=linkname), core)
    assert "\n" not in str(e.value)
    assert _snapshot(core) == before and not (tmp_path / "outside").exists()


def test_devices_and_absurd_sizes_are_not_bundles(core, tmp_path):
    with pytest.raises(EdgecError, match="not a regular file"):
        packages.install_bundle(Path("/dev/zero"), core)       # used to spin forever
    huge = tmp_path / "huge.tar"
    with tarfile.open(huge, "w") as tar:
        info = tarfile.TarInfo("packages/x/blob")
        info.size = packages.MAX_MEMBER_BYTES + 1
        tar.addfile(info)                   # a header only: the size is a claim
    with pytest.raises(EdgecError):
        packages.install_bundle(huge, core)
    assert not (core / "packages" / "x").exists()


def test_a_failed_install_leaves_the_core_as_it_was(core, tmp_path, monkeypatch):
    packages.install_bundle(_bundle(tmp_path), core)
    before = _snapshot(core)
    real, failed = Path.rename, []

    def rename(self, target):
        if Path(target).name == "framework-cmsis" and Path(target).parent.name == "packages" and not failed:
            failed.append(target)
            raise OSError(28, "No space left on device")      # moving in the second package of the install
        return real(self, target)
    monkeypatch.setattr(Path, "rename", rename)
    newer = _bundle(tmp_path, version="4.21300.0")
    root = tmp_path / "bundle-src-4.21300.0"
    (root / "packages" / "framework-cmsis" / ".piopm").write_text(json.dumps({"name": "framework-cmsis",
                                                                              "version": "9"}))
    with tarfile.open(newer, "w:xz") as tar:
        for kind in ("platforms", "packages"):
            tar.add(root / kind, arcname=kind)
    with pytest.raises(EdgecError, match="the core is as it was"):
        packages.install_bundle(newer, core)
    assert _snapshot(core) == before
    assert packages.installed(core)["packages"]["framework-arduinoststm32"] == "4.21200.0"


def test_an_install_holds_the_core_lock_builds_share(core, tmp_path, monkeypatch):
    """While the bundle is unpacked and moved in, a build cannot take the core's shared lock."""
    import fcntl
    import os
    seen = []
    real = tarfile.TarFile.extractall

    def extractall(self, *a, **k):
        fd = os.open(core / ".edgec-core.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            seen.append("free")
        except BlockingIOError:
            seen.append("held")
        finally:
            os.close(fd)
        return real(self, *a, **k)
    monkeypatch.setattr(tarfile.TarFile, "extractall", extractall)
    packages.install_bundle(_bundle(tmp_path), core)
    assert seen == ["held"]


def test_bundle_output_is_edgecs_own_file(core, tmp_path):
    """bundle -o: a folder is refused before packing, a user's file is kept, no .partial is left; edgec's own
    bundle is replaced."""
    packages.install_bundle(_bundle(tmp_path), core)
    board = [load_board("nucleo-f446re")]
    folder = tmp_path / "out"
    folder.mkdir()
    mine = tmp_path / "mine.tar.xz"
    mine.write_text("mine")
    for target, needle in ((folder, "is a folder"), (mine, "not written by edgec")):
        with pytest.raises(EdgecError, match=needle):
            packages.bundle(board, target, core)
    assert mine.read_text() == "mine" and list(folder.iterdir()) == []
    ours = tmp_path / "ours.tar.xz"
    for _ in range(2):
        packages.bundle(board, ours, core)
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name or p.name.startswith(".")] == []
    other = tmp_path / "other-core"
    packages.install_bundle(ours, other)
    assert packages.missing(board[0], other) == []
