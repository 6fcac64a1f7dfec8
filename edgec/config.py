"""Project configuration: defaults for edgec's command-line options kept with the model.

Where: an `edgec.toml` (top-level keys) or a `pyproject.toml` with a `[tool.edgec]` table, in the model's
folder or one of its parents within the model's project (for `bench`/`flash`: the build's model, then the
current folder); the first folder that has either wins, edgec.toml before pyproject.toml.  The search stops
at the project's root: a folder with .git or .hg, a file with `root = true`, the home folder; it never reads
a world-writable folder (/tmp) or the file-system root.  Settings that run code or reach a device (board:
a board file's build flags; port) are taken only from a file the user owns that nobody else may write.
Keys are the long option names:

    [tool.edgec]
    board = "qemu-cortex-m4"
    method = "percentile"
    percentile = 99.9
    bias-correction = "quantized"
    min-accuracy = "90%"
    max-latency = "5ms"

A flag on the command line always wins over the file; `edgec config` prints every setting in effect
and where it came from (command line, the file, or edgec's default).
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ImportError:             # Python 3.10
    import tomli as tomllib

from edgec.errors import EdgecError

# option name (as on the command line, without --) -> argparse dest
SETTABLE = ("board", "method", "percentile", "per-tensor", "bias-correction", "equalize", "int16", "weights", "int4", "rounding",
            "max-accuracy-drop", "min-sqnr",
            "sensitivity-samples", "auto-seconds", "no-cache", "limit", "port", "min-accuracy", "min-agreement",
            "max-latency", "max-ram", "name", "lib-version", "maintainer", "url")
DEFAULT, COMMAND_LINE = "default", "command line"
TRUSTED_ONLY = ("board", "port")           # settings that choose what runs: only from the user's own files
ROOT_KEY = "root"                          # `root = true`: this file's folder is the project's root


@dataclass
class ProjectConfig:
    values: dict = field(default_factory=dict)     # dest -> value, as the file has it
    path: Path | None = None                       # the file they came from

    @property
    def source(self) -> str:
        return f"{self.path.name} ({self.path})" if self.path else DEFAULT


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EdgecError(f"{path}: not valid TOML: {e}; fix the file (edgec reads its settings from it)") from None
    except OSError as e:
        raise EdgecError(f"{path}: cannot read it: {e.strerror or e}") from None


def _table(path: Path) -> dict | None:
    """The edgec settings of one file, or None when it has none (a pyproject.toml without [tool.edgec])."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("edgec")
        if data is None:
            return None
        if not isinstance(data, dict):
            raise EdgecError(f"{path}: [tool.edgec] must be a table of settings")
    values = {}
    for key, value in data.items():
        name = key.replace("_", "-")
        if name == ROOT_KEY:
            if not isinstance(value, bool):
                raise EdgecError(f"{path}: root must be true or false")
            values[ROOT_KEY] = value
            continue
        if name not in SETTABLE:
            raise EdgecError(f"{path}: unknown edgec setting '{key}'; known: {', '.join(SETTABLE)}")
        values[name.replace("-", "_")] = value
    return values


def _shared(folder: Path) -> bool:
    """A folder anyone may write into (/tmp): its files are nobody's project settings."""
    try:
        return bool(folder.stat().st_mode & 0o002)
    except OSError:
        return True


def _check_trusted(path: Path, values: dict) -> None:
    """board and port only from a file the user owns and only the user may write (edgec/config.py)."""
    risky = [k for k in TRUSTED_ONLY if k in values]
    if not risky:
        return
    st = path.stat()
    why = ("is not yours" if st.st_uid != os.getuid() else
           "may be written by others (group or world writable)" if st.st_mode & 0o022 else None)
    if why:
        raise EdgecError(f"{path} sets {', '.join(risky)} but {why}; edgec takes settings that choose a board or "
                         f"a port only from your own files: chmod go-w {path}, or give --{risky[0]} on the command line")


def find(start_dirs: list[Path]) -> ProjectConfig:
    """The settings of the first folder (a start folder or one of its parents, within the project: see the
    module's docstring) with an edgec.toml or a pyproject.toml holding [tool.edgec]; empty when there is none."""
    home = Path.home().resolve()
    for start in start_dirs:
        for folder in [start.resolve(), *start.resolve().parents]:
            if folder == Path(folder.anchor) or _shared(folder):
                break
            for name in ("edgec.toml", "pyproject.toml"):
                path = folder / name
                if path.is_file() and (values := _table(path)) is not None:
                    values.pop(ROOT_KEY, None)
                    _check_trusted(path, values)
                    return ProjectConfig(values, path)
            if folder == home or any(os.path.lexists(folder / m) for m in (".git", ".hg")):
                break
    return ProjectConfig()


def start_dirs(args: argparse.Namespace) -> list[Path]:
    """Where to look for a command's settings: the model's folder, else the build's model's, then cwd."""
    dirs = []
    if getattr(args, "model", None):
        dirs.append(Path(args.model).parent)
    elif getattr(args, "outdir", None):
        outdir = args.outdir[0] if isinstance(args.outdir, list) else args.outdir    # bench takes several
        try:
            report = json.loads((Path(outdir) / "build-report.json").read_text())
            dirs.append(Path(report["model_file"]).parent)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return dirs + [Path.cwd()]


def _actions(parser: argparse.ArgumentParser, command: str) -> list[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices[command]._actions)
    return list(parser._actions)


def explicit_dests(make_parser, argv: list[str], command: str) -> set[str]:
    """The options the user gave on the command line: argv parsed again with every default suppressed."""
    parser = make_parser()
    for action in parser._actions + _actions(parser, command):
        action.default = argparse.SUPPRESS
        action.required = False
    return set(vars(parser.parse_args(argv)))


def _convert(action: argparse.Action, value, path: Path):
    key = action.option_strings[0 if isinstance(action, argparse.BooleanOptionalAction) else -1]
    if isinstance(action, (argparse._StoreTrueAction, argparse.BooleanOptionalAction)):
        if not isinstance(value, bool):
            raise EdgecError(f"{path}: {key[2:]} must be true or false")
        return value
    if isinstance(action, argparse._AppendAction):
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise EdgecError(f"{path}: {key[2:]} must be a string or a list of strings")
        return value
    if value is False and action.nargs == "?":              # bias-correction = false
        return False
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise EdgecError(f"{path}: {key[2:]} = {value!r}: expected a value like on the command line ({key} VALUE)")
    if action.type is not None:
        try:
            value = action.type(value if isinstance(value, str) else str(value))
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            reason = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else f"is not a valid {action.type.__name__}"
            raise EdgecError(f"{path}: {key[2:]} = {value!r}: {reason}") from None
    elif not isinstance(value, str):
        value = str(value)
    if action.choices is not None and value not in action.choices:
        raise EdgecError(f"{path}: {key[2:]} = {value!r}: choose one of {', '.join(map(str, action.choices))}")
    return value


def apply(args: argparse.Namespace, make_parser, argv: list[str]) -> dict[str, tuple[object, str]]:
    """Fill the options the user did not give from the project's settings. Returns, for every option of the
    command, (value in effect, where it came from)."""
    command = args.command
    explicit = explicit_dests(make_parser, argv, command)
    project = find(start_dirs(args))
    effective = {}
    for action in _actions(make_parser(), command):
        dest = action.dest
        if not action.option_strings or dest in ("help", "debug"):
            continue
        if dest in explicit:
            effective[dest] = (getattr(args, dest), COMMAND_LINE)
        elif dest in project.values:
            setattr(args, dest, _convert(action, project.values[dest], project.path))
            effective[dest] = (getattr(args, dest), project.source)
        else:
            effective[dest] = (getattr(args, dest, None), DEFAULT)
    args.project_config = project
    return effective


def describe(effective: dict[str, tuple[object, str]], project: ProjectConfig) -> list[str]:
    """`edgec config`'s lines: every setting, its value and its source."""
    lines = [f"project settings: {project.path}" if project.path else
             "project settings: none (no edgec.toml or pyproject.toml with [tool.edgec] beside the model or above, "
             "up to the project's root)"]
    width = max((len(k) for k in effective), default=0) + 2
    for dest, (value, source) in effective.items():
        shown = "(not set)" if value is None else json.dumps(value) if not isinstance(value, str) else value
        lines.append(f"{dest.replace('_', '-'):{width}} {shown:24} {source}")
    return lines
