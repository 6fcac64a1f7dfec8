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

import json
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

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


def _members(archive: Path) -> list[tarfile.TarInfo]:
    try:
        with tarfile.open(archive) as tar:
            return tar.getmembers()
    except FileNotFoundError:
        raise EdgecError(f"package bundle {archive} does not exist") from None
    except (tarfile.TarError, OSError, EOFError) as e:
        raise EdgecError(f"package bundle {archive} is not a readable tar archive: {e}") from None


def install_bundle(archive: Path, core: Path, log: Log | None = None) -> dict[str, list[str]]:
    """Install an offline bundle into edgec's PlatformIO core `core` (idempotent: folders whose .piopm already
    matches are kept).  Returns {"installed": [...], "kept": [...]} as "platforms/ststm32" entries."""
    log = log or _quiet
    archive = Path(archive)
    tops = {}
    for m in _members(archive):
        parts = Path(m.name).parts
        if len(parts) >= 2 and parts[0] in ("platforms", "packages"):
            tops.setdefault((parts[0], parts[1]), False)
            if len(parts) == 3 and parts[2] == ".piopm":
                tops[(parts[0], parts[1])] = True
    if not tops:
        raise EdgecError(f"package bundle {archive} holds no platforms/ or packages/ folder; make one with "
                         "`edgec packages bundle --board BOARD -o FILE`")
    unmarked = sorted(f"{k}/{n}" for (k, n), marked in tops.items() if not marked)
    if unmarked:
        raise EdgecError(f"package bundle {archive}: {', '.join(unmarked)} has no .piopm, so PlatformIO would "
                         "not recognise it; make the bundle with `edgec packages bundle`")
    dest = {"platforms": platforms_dir(core), "packages": core / "packages"}
    for folder in dest.values():
        folder.mkdir(parents=True, exist_ok=True)
    result: dict[str, list[str]] = {"installed": [], "kept": []}
    scratch = Path(tempfile.mkdtemp(prefix=".bundle-", dir=core))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        for kind, name in sorted(tops):
            new, target = scratch / kind / name, dest[kind] / name
            if target.is_dir() and _piopm(target) == _piopm(new):
                result["kept"].append(f"{kind}/{name}")
                continue
            if target.exists() or target.is_symlink():
                shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
            try:
                new.rename(target)
            except OSError:
                if _piopm(target) != _piopm(new):    # not another edgec process installing the same
                    raise
                result["kept"].append(f"{kind}/{name}")
                continue
            result["installed"].append(f"{kind}/{name}")
            log(f"installed {kind}/{name} {(_piopm(target) or {}).get('version', '')}")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise EdgecError(f"cannot install package bundle {archive} into {core}: {e}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
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
    output = Path(output)
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
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.partial")
    mode = "w:xz" if output.name.endswith((".xz", ".txz")) else "w:gz" if output.name.endswith(("gz", ".tgz")) else "w"
    with tarfile.open(tmp, mode) as tar:
        for arcname, folder in sorted(folders.items()):
            log(f"adding {arcname}")
            tar.add(folder, arcname=arcname, filter=lambda t: None if "__pycache__" in t.name else t)
    tmp.replace(output)
    return sorted(folders)


def _is_shim(package: Path) -> bool:
    return "made by edgec" in (package / "package.json").read_text(errors="replace") \
        if (package / "package.json").is_file() else False
