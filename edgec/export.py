"""Model library export: a quantized model as a self-contained library for someone else's firmware.

`edgec export MODEL --calib CALIB --board BOARD --format c|platformio|arduino|cmake -o DIR` writes the
model's `.c`/`.h` plus the runtime files it calls (edgec/cheader.py files_called), a README (API, a minimal
main), an example with one reference sample, and the manifest of the chosen build system:

    c           DIR/<name>.c .h, runtime, example/main.c
    platformio  DIR/library.json, DIR/src/, DIR/examples/basic/ (a PlatformIO project for BOARD)
    arduino     DIR/library.properties, DIR/src/, DIR/examples/<name>_basic/<name>_basic.ino
    cmake       DIR/CMakeLists.txt (add_subdirectory, or build + `cmake --install` for find_package(<name>) and
                the target edgec::<name>), DIR/src/, DIR/examples/main.c; the same folder is a Zephyr module
                (DIR/zephyr/: module.yml, CMakeLists.txt, Kconfig) and an ESP-IDF component
                (idf_component_register; DIR/idf_component.yml); the Zephyr module is built and run by
                tests/test_export_zephyr.py (Zephyr 3.5.0, QEMU), the ESP-IDF component is not built here

Options: `name` (the C prefix of every symbol, default from the model's file name), `lib_version` (the
library's version in its manifests, default edgec's), `maintainer` and `url` (library.properties, library.json).

Several exported models link into one firmware: their symbols carry the model name and a runtime file is
identical in every export of one edgec version that ships it (each build system links the union once).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Callable

import numpy as np

from edgec import __version__, ports
from edgec.codegen import cmodel as codegen
from edgec.pipeline import calibrated, fit_or_int8, plan_to_fit, quiet
from edgec.settings import Settings
from edgec.ops.registry import graph_macs
from edgec.templating import environment
from edgec.quant import reference
from edgec.targets.boards import Board, load_board
from edgec.staging import staged_folder
from edgec.outputs import check_output_folder
from edgec.errors import EdgecError
from edgec.ir import DTYPES
from edgec.templating import model_c_name

FORMATS = ("c", "platformio", "arduino", "cmake")
MARKER = "edgec-export.json"
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VERSION_RE = re.compile(r"[0-9]+(\.[0-9]+){0,3}")


def example_sample(graph, samples) -> tuple[np.ndarray, np.ndarray]:
    """The first calibration sample, quantized, and the reference output for it (no calibration samples, a
    quantized .tflite: the input filled with its zero point), each as the bytes the C ports hold (int8 view):
    several inputs and outputs packed in the model's order (edgec/ports.py), an int16 or float32 port as its
    little-endian bytes, so the example's memcmp compares what the library writes."""
    if samples is None:      # every input at its zero point (a real zero), in its own type
        xq = ports.pack(graph, [np.full((1, p.size), graph.tensors[p.tensor].zero_point,
                                        DTYPES[graph.tensors[p.tensor].dtype]) for p in ports.inputs(graph)])[0]
    else:
        xq = ports.quantize_inputs(graph, samples.first(1))[0]
    env = reference.run(graph, xq, keep_all=True)
    outputs = graph.outputs if graph.more_outputs else [graph.output]
    expected = np.concatenate([_port_bytes(env[t]) for t in outputs])
    if graph.more_inputs:    # each input in its own type and byte size (an int32 index beside int8 values)
        return np.frombuffer(ports.sample_bytes(graph, xq), np.int8), expected
    return _port_bytes(xq), expected


def _port_bytes(values: np.ndarray) -> np.ndarray:
    """A port's values as the bytes the device holds (little-endian, as every edgec target), viewed as int8."""
    a = np.ascontiguousarray(values)
    return a.astype(a.dtype.newbyteorder("<")).reshape(-1).view(np.int8)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_metadata(name: str | None, lib_version: str | None) -> None:
    if name is not None and (not _IDENT_RE.fullmatch(name) or name.lower().startswith("edgec_")):
        raise EdgecError(f"--name {name!r}: the library's C prefix must be a C identifier (letters, digits, _; "
                         "not starting with a digit or edgec_)")
    if name is not None and model_c_name(name) != name:
        raise EdgecError(f"--name {name!r}: collides with a C keyword, a C or platform header or a firmware "
                         f"source; choose another (e.g. {model_c_name(name)})")
    if lib_version is not None and not _VERSION_RE.fullmatch(lib_version):
        raise EdgecError(f"--lib-version {lib_version!r}: expected a version like 1.2.0 (up to four numbers)")


def export(model_path: str | Path, calib_path: str | Path | None, board_name: str, fmt: str, outdir: str | Path,
           log: Callable[[str], None] = lambda _: None, options=None, name: str | None = None,
           lib_version: str | None = None, maintainer: str | None = None, url: str | None = None,
           ram_budget: int | None = None, optimize: str = "speed", settings: Settings | None = None,
           io_buffers: str = "arena") -> dict:
    """Quantize the model and write it as a library in `fmt` layout into outdir; returns the export manifest
    (optimize: "speed" or "size", edgec/ops/select.py; settings: the environment's, read here when not
    given; io_buffers "caller": the inputs and outputs in the caller's buffers, edgec/plan/caller_io.py)."""

    if fmt not in FORMATS:
        raise EdgecError(f"unknown export format '{fmt}': use one of {', '.join(FORMATS)}")
    check_metadata(name, lib_version)
    board = load_board(board_name)
    outdir = check_output_folder(outdir, (model_path, calib_path))     # before any work
    settings = settings or Settings.from_environment()
    with calibrated(model_path, calib_path, options, log, settings) as (_, result, samples):   # options: QuantOptions
        def again(o):       # int8 where the calibration set chose int16 rows that do not fit (fit_or_int8)
            with calibrated(model_path, calib_path, o, quiet, settings) as (_, r, _s):
                return r
        result, (graph, plan) = fit_or_int8(
            result, options, lambda g: plan_to_fit(dataclasses.replace(g, name=name or g.name), board,
                                                   optimize=optimize, log=log, ram_budget=ram_budget, helium=False,
                                                   io_buffers=io_buffers)[:2], again, log)
        # (the generic kernels if speed's do not fit; DSP kernels: no Helium flags)
        example = example_sample(result.graph, samples)       # the calibration file's first sample
    name = graph.name
    meta = {"lib_version": lib_version or __version__, "maintainer": maintainer, "url": url}
    if fmt in ("arduino", "platformio") and not (maintainer and url):
        log(f"{fmt} metadata: give --maintainer and --url before publishing the library (the manifest names "
            "edgec as its author until then)")
    with staged_folder(outdir, "export", (model_path, calib_path)) as work:
        manifest = write_layout(work, graph, plan.arena_bytes, board, fmt, Path(model_path),
                          Path(calib_path).name if calib_path else "(none: quantized .tflite)", meta, example,
                          lambda src: codegen.generate(graph, plan, src, graph.name))
    log(f"exported {name} for {board.name} as a {fmt} library in {outdir}")
    return manifest


def write_layout(work: Path, graph, arena_bytes: int, board: Board, fmt: str, model_path: Path, calib_file: str,
           meta: dict, example: tuple[np.ndarray, np.ndarray], write_library: Callable[[Path], list[Path]],
           flags: dict | None = None) -> dict:
    """The library in `fmt` layout: write_library(src) writes the model library (generated, or a build's copied)
    and returns its files; flags: the benched build's compile flags (edgec/export_build.py), or None."""
    from edgec.targets.firmware import board_options, env_name

    name = graph.name
    src = work if fmt == "c" else work / "src"
    lib_files = [p.relative_to(src).as_posix() for p in write_library(src)]   # fast/...
    runtime = [f for f in lib_files if f not in (f"{name}.c", f"{name}.h")]
    tin, tout = graph.tensors[graph.input], graph.tensors[graph.output]
    xq, expected = example
    local = board.local_platform_dir is not None
    ctx = dict(name=name, NAME=name.upper(), version=__version__, **meta, board=board, fmt=fmt,
               local=local, model_file=model_path.name, calib_file=calib_file,
               input_shape=list(graph.input_onnx_shape), output_shape=list(graph.output_onnx_shape),
               input_bytes=tin.size, output_bytes=tout.size, input_scale=float(tin.scale), input_zp=tin.zero_point,
               output_scale=float(tout.scale), output_zp=tout.zero_point, arena_bytes=arena_bytes, flags=flags,
               weights_bytes=graph.weights_bytes(), macs=graph_macs(graph), model_hash=_model_hash(graph),
               files=lib_files, runtime_sources=[f for f in runtime if f.endswith(".c")],
               runtime_hashes=[(f, _sha256(src / f)) for f in runtime], input=xq, expected=expected,
               ports=ports.describe(graph) if ports.multi(graph) else None,
               output_ctype=ports.c_number_type(tout.dtype)["ctype"])     # NAME_output()'s type
    env = environment()

    def render(template: str, dest: Path) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(env.get_template(f"export/{template}").render(**ctx))

    # a plain-C main for the c and cmake layouts (any C toolchain, CMake, Zephyr), whatever the board's framework
    arduino_main = fmt == "arduino" or (fmt == "platformio" and board.framework == "arduino")
    main_template = "example_arduino.cpp.j2" if arduino_main else "example_main.c.j2"
    example = {"c": "example", "platformio": "examples/basic/src", "cmake": "examples",
               "arduino": f"examples/{name}_basic"}[fmt]
    main_name = {"arduino": f"{name}_basic.ino"}.get(fmt, "main.cpp" if arduino_main else "main.c")
    render(main_template, work / example / main_name)
    render("example_data.h.j2", work / example / f"{name}_example_data.h")
    if fmt == "platformio":
        ctx["manifest"] = _library_json(ctx)
        render("library.json.j2", work / "library.json")
        # a local platform by its name, registered by `python -m edgec.targets.pio` (no absolute path)
        env_ctx = dict(env_name=env_name(board), platform=board.pio_platform, board_options=board_options(board))
        ctx.update(env_ctx)
        render("example_platformio.ini.j2", work / "examples" / "basic" / "platformio.ini")
    elif fmt == "arduino":
        render("library.properties.j2", work / "library.properties")
    elif fmt == "cmake":
        render("CMakeLists.txt.j2", work / "CMakeLists.txt")
        render("Config.cmake.j2", work / "cmake" / f"{name}Config.cmake")
        for template in ("module.yml", "CMakeLists.txt", "Kconfig"):
            render(f"zephyr/{template}.j2", work / "zephyr" / template)
        render("idf_component.yml.j2", work / "idf_component.yml")
    ctx["example_main"] = (work / example / main_name).read_text().strip()
    ctx["example_path"] = f"{example}/{main_name}"
    render("README.md.j2", work / "README.md")
    manifest = {"edgec_version": __version__, "model": name, "model_hash": ctx["model_hash"], "board": board.name,
                "format": fmt, "library_files": [str((src / f).relative_to(work)) for f in lib_files],
                "runtime_files": dict(ctx["runtime_hashes"]), "arena_bytes": arena_bytes,
                **({"build": flags["build"], "compile_flags": flags["applied"], "target_flags": flags["target"]}
                   if flags else {}),
                "weights_bytes": ctx["weights_bytes"], "example": ctx["example_path"], "version": meta["lib_version"]}
    (work / MARKER).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _model_hash(graph) -> str:
    from edgec.quant.artifact import graph_hash
    return graph_hash(graph)


def _library_json(ctx: dict) -> dict:
    return {
        "name": ctx["name"], "version": ctx["lib_version"],
        "description": f"INT8 model '{ctx['name']}' generated by edgec {ctx['version']} (C99, static arena, no malloc)",
        "keywords": ["edgec", "tinyml", "int8", "neural network"],
        **({"authors": [{"name": ctx["maintainer"], "maintainer": True}]} if ctx["maintainer"] else {}),
        **({"homepage": ctx["url"]} if ctx["url"] else {}),
        "frameworks": "*", "platforms": "*",
        "build": {"srcDir": "src", "includeDir": "src", "libArchive": True,
                  **({"flags": ctx["flags"]["applied"]} if ctx["flags"] else {})},
        "export": {"exclude": ["examples/*/.pio"]},
    }
