"""PlatformIO packages without PlatformIO's registry: install a bundle, make one, list what can build offline.

A bundle is a .tar.xz (or .tar.gz / .tar) in PlatformIO's own core-dir layout: `platforms/<name>/` and
`packages/<name>/`, each with its `.piopm` (see ../shared/frameworks/README.md for the STM32duino one).
`install_bundle` seeds edgec's PlatformIO core (`core`: Settings.platformio_home, EDGEC_PLATFORMIO_HOME):
platforms into this installation's platforms folder, packages beside tool-scons.  When the bundle carries no
Arm toolchain, the toolchain PlatformIO asks for is made from the system's arm-none-eabi-gcc (Debian's
gcc-arm-none-eabi): a package folder whose bin/ links to /usr/bin/arm-none-eabi-*.

`bundle` makes such an archive on a connected machine from the packages an online build installed;
`status` says what is installed and which board profiles can build offline; `missing` is what the build
asks before running PlatformIO, so an offline build fails in seconds instead of after a registry timeout.
"""
from __future__ import annotations

import fcntl
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from edgec import outputs
from edgec.errors import EdgecError
from edgec.targets.boards import Board, list_boards
from edgec.targets.pio import install_tool_package, platforms_dir

ARM_TOOLCHAIN = "toolchain-gccarmnoneeabi"
# what STM32duino 2.12's PlatformIO builder asks for ("~1.120301.0"); Debian 12 ships gcc 12.2.1
ARM_TOOLCHAIN_VERSION = "1.120301.0"
ARM_TOOLCHAIN_PREFIX = "arm-none-eabi-"
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _piopm(folder: Path) -> dict | None:
    try:
        return json.loads((folder / ".piopm").read_text())
    except (OSError, ValueError):
        return None


def installed(core: Path) -> dict[str, dict[str, str]]:
    """{"platforms": {name: version}, "packages": {name: version}} in edgec's PlatformIO core `core`."""
    found: dict[str, dict[str, str]] = {"platforms": {}, "packages": {}}
    for kind, folder in (("platforms", platforms_dir(core)), ("packages", core / "packages")):
        for sub in sorted(folder.glob("*")) if folder.is_dir() else ():
            meta = _piopm(sub)
            if sub.is_dir() and meta:
                found[kind][meta.get("name", sub.name)] = str(meta.get("version", "?"))
    return found


MAX_MEMBER_BYTES = 4 << 30          # one file of a toolchain is far smaller
MAX_BUNDLE_BYTES = 16 << 30         # everything unpacked
MAX_MEMBERS = 500_000
_NAME_RE = re.compile(r"[A-Za-z0-9@+_.-]{1,200}")


def _members(archive: Path) -> list[tarfile.TarInfo]:
    """The bundle's members, every one checked before anything is written or deleted (an archive is untrusted
    input): a relative path under platforms/<name>/ or packages/<name>/ without `..`, a plain file or folder
    (no link, device or FIFO), sizes within bounds."""
    try:
        st = archive.stat()
    except FileNotFoundError:
        raise EdgecError(f"package bundle {archive} does not exist") from None
    except OSError as e:
        raise EdgecError(f"package bundle {archive} cannot be read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise EdgecError(f"package bundle {archive} is not a regular file (a device, FIFO or folder); give the "
                         ".tar.xz file `edgec packages bundle` wrote")
    members, total = [], 0
    try:
        with tarfile.open(archive) as tar:
            for m in tar:
                members.append(m)
                total += m.size
                _check_member(archive, m)
                if len(members) > MAX_MEMBERS or total > MAX_BUNDLE_BYTES:
                    raise EdgecError(f"package bundle {archive} unpacks to more than {MAX_MEMBERS:,} files or "
                                     f"{MAX_BUNDLE_BYTES >> 30} GiB; it is not an edgec bundle")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise EdgecError(f"package bundle {archive} is not a readable tar archive: {e}") from None
    return members


def _check_member(archive: Path, m: tarfile.TarInfo) -> None:
    parts = m.name.split("/")
    while parts and parts[-1] == "":            # "packages/x/" (a folder)
        parts.pop()
    bad = (m.name.startswith("/") or "\\" in m.name or not parts or any(p in ("", ".", "..") for p in parts)
           or "\0" in m.name)
    if not bad and parts != [outputs.BUNDLE_MEMBER]:
        bad = parts[0] not in ("platforms", "packages") or (len(parts) > 1 and not _NAME_RE.fullmatch(parts[1]))
    if bad:
        raise EdgecError(f"package bundle {archive}: member {m.name[:120]!r} is not a path inside platforms/<name>/ "
                         "or packages/<name>/; nothing was installed (make bundles with `edgec packages bundle`)")
    if not (m.isfile() or m.isdir()):
        kind = "a link" if m.issym() or m.islnk() else "a device or FIFO"
        raise EdgecError(f"package bundle {archive}: member {m.name[:120]!r} is {kind}; a bundle holds only files "
                         "and folders: nothing was installed")
    if m.size > MAX_MEMBER_BYTES:
        raise EdgecError(f"package bundle {archive}: member {m.name[:120]!r} claims {m.size:,} bytes; nothing was "
                         "installed")


@contextmanager
def core_lock(core: Path, shared: bool):
    """The PlatformIO core's lock: builds hold it shared, `edgec packages install` exclusively, so an install
    never changes the platforms and packages under a running build."""
    core = Path(core)
    core.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(core / ".edgec-core.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise EdgecError(f"cannot lock edgec's PlatformIO core {core} ({e.strerror or e}); check "
                         "EDGEC_PLATFORMIO_HOME") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def install_bundle(archive: Path, core: Path, log: Log | None = None) -> dict[str, list[str]]:
    """Install an offline bundle into edgec's PlatformIO core `core` (idempotent: folders whose .piopm already
    matches are kept).  Transactional: every member is checked first; the replaced folders are moved aside and
    moved back if anything fails, so a failed install leaves the core as it was.  Holds the core's lock
    exclusively (no build runs meanwhile).  Returns {"installed": [...], "kept": [...]} as "platforms/ststm32"
    entries."""
    log = log or _quiet
    archive = Path(archive)
    tops = {}
    for m in _members(archive):
        parts = [p for p in m.name.split("/") if p]
        if len(parts) >= 2:
            tops.setdefault((parts[0], parts[1]), False)
            if len(parts) == 3 and parts[2] == ".piopm" and m.isfile():
                tops[(parts[0], parts[1])] = True
    if not tops:
        raise EdgecError(f"package bundle {archive} holds no platforms/ or packages/ folder; make one with "
                         "`edgec packages bundle --board BOARD -o FILE`")
    unmarked = sorted(f"{k}/{n}" for (k, n), marked in tops.items() if not marked)
    if unmarked:
        raise EdgecError(f"package bundle {archive}: {', '.join(unmarked)} has no .piopm, so PlatformIO would "
                         "not recognise it; make the bundle with `edgec packages bundle`")
    dest = {"platforms": platforms_dir(core), "packages": core / "packages"}
    result: dict[str, list[str]] = {"installed": [], "kept": []}
    with core_lock(core, shared=False):
        for folder in dest.values():
            outputs.make_folder(folder, "PlatformIO core folder")
        scratch = outputs.scratch_folder(core, ".bundle-")
        moved: list[tuple[Path, Path]] = []      # (target, where its old copy waits)
        placed: list[Path] = []
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(scratch / "new", filter="data")
            (scratch / "old").mkdir()
            for kind, name in sorted(tops):
                new, target = scratch / "new" / kind / name, dest[kind] / name
                if target.is_dir() and not target.is_symlink() and _piopm(target) == _piopm(new):
                    result["kept"].append(f"{kind}/{name}")
                    continue
                if os.path.lexists(target):
                    aside = scratch / "old" / f"{kind}-{name}"
                    target.rename(aside)
                    moved.append((target, aside))
                new.rename(target)
                placed.append(target)
                result["installed"].append(f"{kind}/{name}")
            for entry in result["installed"]:
                log(f"installed {entry} {(_piopm(dest[entry.split('/')[0]] / entry.split('/')[1]) or {}).get('version', '')}")
        except BaseException as e:
            for i, target in enumerate(reversed(placed)):    # undo: the core as it was
                target.rename(scratch / "new" / f"undo-{i}-{target.name}")
            for target, aside in reversed(moved):
                aside.rename(target)
            if isinstance(e, (tarfile.TarError, OSError, EOFError)):
                raise EdgecError(f"cannot install package bundle {archive} into {core}: {e}; the core is as it "
                                 "was") from None
            raise
        finally:
            outputs.remove_made(scratch)
        if ARM_TOOLCHAIN not in installed(core)["packages"] and shutil.which(f"{ARM_TOOLCHAIN_PREFIX}gcc"):
            make_toolchain_shim(core)
            result["installed"].append(f"packages/{ARM_TOOLCHAIN}")
            log(f"made packages/{ARM_TOOLCHAIN} {ARM_TOOLCHAIN_VERSION} from the system's {ARM_TOOLCHAIN_PREFIX}gcc")
    return result


def make_toolchain_shim(core: Path) -> Path:
    """packages/toolchain-gccarmnoneeabi (in core) whose bin/ links to the system's arm-none-eabi-* programs."""
    gcc = shutil.which(f"{ARM_TOOLCHAIN_PREFIX}gcc")
    if gcc is None:
        raise EdgecError(f"{ARM_TOOLCHAIN_PREFIX}gcc is not installed: apt-get install gcc-arm-none-eabi "
                         "libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib (or give a bundle with the toolchain)")
    bindir = Path(gcc).resolve().parent
    dest = core / "packages" / ARM_TOOLCHAIN
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{ARM_TOOLCHAIN}-", dir=dest.parent))
    (work / "bin").mkdir()
    for tool in sorted(bindir.glob(f"{ARM_TOOLCHAIN_PREFIX}*")):
        (work / "bin" / tool.name).symlink_to(tool)
    return install_tool_package(work, dest, ARM_TOOLCHAIN, ARM_TOOLCHAIN_VERSION,
                                f"links to the system's {ARM_TOOLCHAIN_PREFIX}gcc in {bindir} (made by edgec)")


def _platform_folder(core: Path, platform: str) -> Path:
    """Where a platform is: edgec's per-installation platforms folder, or a plain PlatformIO core's."""
    ours = platforms_dir(core) / platform
    return ours if ours.is_dir() or not (core / "platforms" / platform).is_dir() else core / "platforms" / platform


def _platform_manifest(core: Path, platform: str) -> dict | None:
    try:
        return json.loads((_platform_folder(core, platform) / "platform.json").read_text())
    except (OSError, ValueError):
        return None


def missing(board: Board, core: Path) -> list[str]:
    """PlatformIO platform and packages a board's build needs that edgec's core lacks ([] = can build offline).
    Boards on edgec's own local platforms need none; a registry platform needs itself, its framework
    package and its toolchain (the `type: toolchain` package of its platform.json)."""
    if board.local_platform_dir is not None:
        return []
    platform = board.pio_platform.split("@")[0].strip()
    manifest = _platform_manifest(core, platform)
    if manifest is None:
        return [f"platform {platform}"]
    have = installed(core)["packages"]
    packages = manifest.get("packages", {})
    needed = [name for name, spec in packages.items()
              if spec.get("type") == "toolchain" and not spec.get("optional")]
    framework = manifest.get("frameworks", {}).get(board.framework, {}).get("package")
    if framework:
        needed.append(framework)
    return [f"package {name}" for name in needed if name not in have]


def status(core: Path) -> dict:
    """What is installed in core, and for every board profile whether it can build offline (and what it
    lacks)."""
    boards = {b.name: missing(b, core) for b in list_boards()}
    return {"core_dir": str(core), **installed(core), "boards": boards}


def bundle(boards: list[Board], output: Path, core: Path, log: Log | None = None) -> list[str]:
    """Pack the platforms and packages these boards build with (from a core where an online build
    installed them) into OUTPUT (.tar.xz).  A toolchain that only links to system programs is left out:
    `install_bundle` makes it again on the other machine.  Returns the folders packed."""
    log = log or _quiet
    output = outputs.check_output_file(output, what="package bundle", folder_exists=False)   # before packing
    folders: dict[str, Path] = {}
    for board in boards:
        lacking = missing(board, core)
        if lacking:
            raise EdgecError(f"cannot bundle {board.name}: {', '.join(lacking)} not installed in {core}; build "
                             f"it once online (`edgec build ... --board {board.name}`) and bundle again")
        if board.local_platform_dir is not None:
            continue                     # ships with edgec
        platform = board.pio_platform.split("@")[0].strip()
        folders[f"platforms/{platform}"] = _platform_folder(core, platform)
        manifest = _platform_manifest(core, platform) or {}
        for name, spec in manifest.get("packages", {}).items():
            pkg = core / "packages" / name
            if pkg.is_dir() and _piopm(pkg) and not (name == ARM_TOOLCHAIN and _is_shim(pkg)):
                folders[f"packages/{name}"] = pkg
    if not folders:
        raise EdgecError("nothing to bundle: these boards use edgec's own local platforms, which need no packages")
    outputs.make_folder(output.parent, "bundle folder")
    mode = "w:xz" if output.name.endswith((".xz", ".txz")) else "w:gz" if output.name.endswith(("gz", ".tgz")) else "w"
    stamp = outputs.signed_json({"written_by": "edgec", "kind": "package bundle", "folders": sorted(folders)}).encode()

    def pack(f) -> None:
        with tarfile.open(fileobj=f, mode=mode) as tar:
            info = tarfile.TarInfo(outputs.BUNDLE_MEMBER)      # first: what makes the file one edgec wrote
            info.size, info.mode = len(stamp), 0o644
            tar.addfile(info, io.BytesIO(stamp))
            for arcname, folder in sorted(folders.items()):
                log(f"adding {arcname}")
                tar.add(folder, arcname=arcname, filter=lambda t: None if "__pycache__" in t.name else t)

    outputs.write_stream(output, pack, what="package bundle")
    return sorted(folders)


def _is_shim(package: Path) -> bool:
    return "made by edgec" in (package / "package.json").read_text(errors="replace") \
        if (package / "package.json").is_file() else False
