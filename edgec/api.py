"""edgec's Python API: the pipeline stages chained. The CLI is a thin shell over this.

    from edgec import api
    report = api.build("model.onnx", "calib.npz", "qemu-cortex-m4", "build/model")
    result = api.bench("build/model", "test.npz")
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np

from edgec import __version__, board_fit, host_reference, ports
from edgec.array_data import accepts_arrays
from edgec.errors import EdgecError
from edgec.quant import artifact
from edgec.frontend import canonicalize
from edgec.codegen import cmodel as codegen
from edgec.codegen import constants
from edgec.lower import lowering, weight_staging
from edgec.targets import code_ram, fit
from edgec.frontend import loader
from edgec.plan import memory_report
from edgec.plan import planner
from edgec.plan import guard
from edgec.quant import ptq
from edgec.frontend import qdq
from edgec.frontend import qonnx
from edgec.frontend import support
from edgec.frontend import tflite
from edgec.frontend import tflite_float
from edgec.quant import sensitivity as sens
from edgec.targets.boards import load_board
from edgec.ir import Graph
from edgec.settings import Settings
from edgec.ops.select import int4_weights
from edgec.ops.registry import graph_macs
from edgec.staging import staged_folder
from edgec import outputs
from edgec.outputs import check_output_folder
from edgec.pipeline import Log, calibrate_model, compile_model, fit_or_int8, model_name, plan_to_fit, schedule_and_plan  # noqa: F401
from edgec.pipeline import quiet as _quiet
from edgec.targets.build_folder import REPORT, check_hello, load_build  # noqa: F401
from edgec.device_commands import bench, flash, flash_step, mlperf, stream_bench  # noqa: F401 (the API's)


QuantOptions = ptq.QuantOptions      # api.QuantOptions(...), or its fields as keywords of build and export


def quant_options(options: ptq.QuantOptions | None, fields: dict) -> ptq.QuantOptions:
    """`options` with the QuantOptions fields given as keywords (api.build(..., method="percentile")); a keyword
    that is no field is refused as Python refuses an unknown keyword, naming the fields."""
    names = {f.name for f in dataclasses.fields(ptq.QuantOptions)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}: the quantization keywords are "
                        f"{', '.join(sorted(names))} (edgec.api.QuantOptions)")
    return dataclasses.replace(options or ptq.QuantOptions(), **fields)


def write_quant_report(result: ptq.QuantResult, options: ptq.QuantOptions, folder: Path, title: str) -> dict:
    """quant.json, sensitivity.json and sensitivity.svg in `folder`; returns the build report's entry."""
    options = result.options or options              # as applied: the default recipe's choices in
    (folder / "quant.json").write_text(json.dumps(result.to_json(options), indent=1))
    entry = {"method": result.method, "method_label": result.label, "per_channel": options.per_channel, "bias_correction": options.bias_correction,
             "equalize": options.equalize, "calibration_samples": result.samples,
             "calibration_seconds": round(result.calib_seconds, 3), "quant_params": "quant.json"}
    if result.fixes:
        entry["fixes"] = {k: v for k, v in result.fixes.to_json().items() if k != "trials"}
    four = [op.name for op in result.graph.ops if int4_weights(op)]
    if four:
        entry["int4_layers"] = four
    if notes := {k: v for k in ("recurrence", "tail", "attention") if (v := getattr(result, k))}:
        entry["int16_choices"] = notes      # what the calibration set chose (or the board's RAM left: fit_or_int8)
    if result.mixed:
        entry["mixed_precision"] = {k: v for k, v in result.mixed.to_json().items() if k != "trials"}
    if result.sensitivity:
        (folder / "sensitivity.json").write_text(json.dumps(result.sensitivity, indent=1))
        sens.write_svg(result.sensitivity, folder / "sensitivity.svg", f"{title}: where INT8 loses accuracy")
        worst = result.sensitivity[0]
        entry.update(sensitivity="sensitivity.json", sensitivity_plot="sensitivity.svg",
                     worst_layer={k: worst[k] for k in ("layer", "kind", "isolated_output_db", "isolated_db")})
    return entry


@accepts_arrays("calib_path")
def build(model_path: str | Path, calib_path: str | Path | None, board: str, outdir: str | Path | None = None,
          log: Log = _quiet, firmware: bool = True, options: ptq.QuantOptions | None = None,
          protocol: str = "edgec", mlperf_model: str | None = None, arena_guard: bool = False,
          mlperf_mode: str = "performance", mlperf_baud: int | None = None, ram_budget: int | None = None,
          optimize: str = "speed", tuning_log: str | Path | None = None, choose=None,
          settings: Settings | None = None, io_buffers: str = "arena", frontend: str | Path | None = None,
          frontend_hop: int | None = None, weights_in_ram: bool = False, code_in_ram: bool | None = None,
          stage_for: str | None = None, **quantization) -> dict:
    """Model + calibration data -> build folder with model library, project, firmware and report (a quantized
    .tflite model needs no calibration data: calib_path None).
    protocol "mlperf" builds a firmware for the MLPerf Tiny runner instead of edgec's bench link
    (mlperf_mode performance or energy, mlperf_baud: see edgec/targets/mlperf_firmware.py).
    arena_guard: a debug build that checks after every layer that no layer wrote outside its buffer.
    ram_budget: bytes of RAM the whole firmware may use (edgec/plan/ram_budget.py picks the schedule).
    optimize "speed" (per-layer specialized kernels) or "size" (the generic kernels: edgec/ops/select.py);
    with speed, each layer the tuning log (tuning_log, default ~/.cache/edgec/tuning.json: edgec/lower/tuning_records.py)
    has a record for on this board runs the variant recorded there; `choose` (op, generic lowering) -> variant
    overrides the log (edgec tune's measuring builds). settings: the environment's (edgec/settings.py), read
    here when not given. io_buffers "caller": the model's inputs and outputs in buffers its caller owns, not in
    the arena (edgec/plan/caller_io.py; the bench firmware uses the library's static ones). frontend: an audio
    front end (.tflite) chained before the model, one firmware from raw clips to scores, calib_path then holding
    clips; frontend_hop: samples between its windows (edgec/chain.py). weights_in_ram: the weights and their
    requantization records (constants.RAM_KINDS) copied into RAM at startup (RAM the statics count; a part whose
    flash has wait states then reads them at SRAM speed, as STM32Cube.AI's weights-in-RAM does). code_in_ram: the
    runtime's kernels copied at startup into the board's code RAM and run there (edgec/targets/code_ram.py); None
    (the default): so where the board has one and flash wait states and it fits (code_ram.decide), else False.
    On a part whose flash has wait states (not with weights_in_ram or ram_budget), the layers that re-read their
    weights copy them into their scratch first (edgec/lower/weight_staging.py); stage_for: another board's part
    decides that (a build for an emulated board staged as the real part's build is: benchmarks/cycle_model.py)."""
    from edgec.targets import firmware as fw

    if frontend is not None:     # an audio front end chained before the model: raw clips in (edgec/chain.py)
        from edgec import chain
        if protocol != "edgec" or arena_guard or ram_budget is not None or io_buffers != "arena" or tuning_log \
                or weights_in_ram or code_in_ram:
            raise EdgecError("--frontend builds edgec's bench firmware on one static arena per model: drop --protocol, "
                             "--arena-guard, --ram-budget, --io-buffers, --tuning-log, --weights-in-ram, --code-in-ram")
        return chain.build(model_path, calib_path, frontend, board, outdir, log, firmware,
                           quant_options(options, quantization), optimize, frontend_hop, settings)
    model_path = Path(model_path)
    the_board = load_board(board)
    if code_in_ram:      # a board without a code RAM is refused before any work
        code_ram.region(the_board)
    outdir = Path(outdir) if outdir else Path("build") / f"{model_name(model_path)}-{the_board.name}"
    inputs = (model_path, calib_path)
    check_output_folder(outdir, inputs)      # before any work: edgec only ever replaces a folder it wrote
    failed_log = outdir.parent / f"{outdir.name}.build-failed.log"
    if firmware:      # the build log of a failed build waits beside OUTDIR: never over a user's file or a link
        outputs.check_output_file(failed_log, inputs, what="failed-build log", folder_exists=False)
    settings = settings or Settings.from_environment()
    options = quant_options(options, quantization).normalized()     # as the report states them
    tuned: dict[str, str] = {}
    if choose is None:    # a damaged log is refused before any work (inspect --board chooses the same way)
        choose = board_fit.build_chooser(the_board, optimize, tuning_log, settings, tuned, weights_in_ram)
    if protocol == "mlperf":
        from edgec.targets.mlperf_firmware import check_mode
        check_mode(the_board, mlperf_mode, mlperf_baud)
    staging = None if weights_in_ram else weight_staging.for_board(load_board(stage_for) if stage_for else the_board)
    model, quant = calibrate_model(model_path, calib_path, options, log, settings)
    # before anything is written: does it fit the board? (else int8 where the calibration set chose int16 rows)
    quant, (graph, plan, budget, optimize) = fit_or_int8(
        quant, options, lambda g: plan_to_fit(g, the_board, guard.GUARD_BYTES if arena_guard else 0, optimize, choose,
                                              log, ram_budget, io_buffers=io_buffers, staging=staging),
        lambda o: calibrate_model(model_path, calib_path, o, _quiet, settings)[1], log)
    speed = dict(lowering.summary(graph.ops), mode=optimize, tuned_layers=len(tuned) if optimize == "speed" else 0)
    log(f"--optimize {optimize}: " + ", ".join(f"{n} ops on {v}" for v, n in sorted(speed['variants'].items()))
        + (f" ({len(tuned)} chosen by the tuning log)" if tuned else "")
        + f"; the specialized kernels' constants cost {speed['extra_constant_bytes']:,} bytes of flash")
    if quant.sensitivity:
        log("sensitivity (worst first; SQNR of INT8 vs float, higher is better):\n"
            + sens.table(quant.sensitivity, 10))
    name = graph.name
    flash_constants = constants.breakdown(graph)
    ram = budget["ram"]      # (edgec/targets/fit.py: arena + runtime + stack + framework, against the board's)
    if (in_ram := constants.in_ram(flash_constants) if weights_in_ram else 0) and ram["total"] + in_ram > ram["board"]:
        raise EdgecError(f"--weights-in-ram: {name}'s weights and requantization records ({in_ram:,} B) do not fit "
                         f"{the_board.name}'s RAM beside the {ram['total']:,} B the firmware needs ({ram['board']:,} "
                         "B): build without --weights-in-ram")
    log(f"{name}: {len(graph.ops)} ops, {graph_macs(graph):,} MACs, arena {plan.arena_bytes:,} bytes, "
        + constants.describe(flash_constants))
    mlperf = None
    if protocol != "edgec" and ports.multi(graph):
        raise EdgecError(f"--protocol {protocol} sends one input and reads one output; this model has "
                         f"{len(graph.inputs)} inputs and {len(graph.outputs)} outputs: build it with edgec's own link")
    if protocol == "mlperf":
        from edgec.targets.mlperf_firmware import settings as mlperf_settings
        mlperf_model = mlperf_model or name
        mlperf = mlperf_settings(the_board, graph, mlperf_model, mlperf_mode, mlperf_baud)
    # Build in a scratch folder next to OUTDIR, moved in place only when everything worked.
    with staged_folder(outdir, "build", inputs) as work:
        lib = work / "model"
        placed = {}     # code RAM: the RAM left below the code RAM's alias, the rest of the weights above it
        tried = code_in_ram if code_in_ram is not None else firmware and code_ram.pays(the_board)
        codegen.generate(graph, plan, lib, name, weights_in_ram=weights_in_ram, placed=placed,
                         far_capacity=code_ram.far_capacity(the_board, tried and weights_in_ram))
        # the default: on where the board has a code RAM and flash wait states, if the code and the RAM fit
        wanted = code_in_ram if firmware or code_in_ram is not None else False    # a library alone: off unless asked
        code_in_ram, why = code_ram.decide(the_board, wanted, name, budget["flash"]["code"],
                                           ram["total"] + in_ram - placed["far_bytes"])
        if why:
            log(why)
        if code_in_ram:
            code_ram.check_ram(the_board, name, ram["total"] + in_ram - placed["far_bytes"])
        elif placed["far_bytes"]:     # the default fell back to flash: no weights above the alias either
            shutil.rmtree(lib)
            codegen.generate(graph, plan, lib, name, weights_in_ram=weights_in_ram, placed=placed)
        artifact.save_graph(graph, work)
        if quant.method == "tflite":      # the bench's reference checks itself against TFLite Micro on this file
            shutil.copyfile(model_path, work / "model.tflite")
        else:
            loader.copy_model(model_path, work / "model.onnx", calib_path)
        (work / "plan.json").write_text(json.dumps(dict(plan.to_json(), **memory_report.summary(graph, plan)), indent=1))
        (work / memory_report.SVG).write_text(memory_report.render_svg(graph, plan))
        report = {
            "edgec_version": __version__, "board": the_board.name, "board_file": str(the_board.path),
            "model": name, "model_file": str(model_path.resolve()), "model_hash": artifact.graph_hash(graph),
            "macs": graph_macs(graph), "ops": len(graph.ops),
            "input": _io_info(graph, graph.input, graph.input_onnx_shape),
            "output": _io_info(graph, graph.output, graph.output_onnx_shape),
            **({"ports": ports.describe(graph)} if ports.multi(graph) else {}),
            "memory": {"arena_bytes": plan.arena_bytes, "weights_bytes": flash_constants["total"],
                       "io_buffers": io_buffers,
                       "weights_in_ram_bytes": in_ram, "code_in_ram": code_in_ram,
                       "staged_weights": weight_staging.staged_bytes(graph),
                       "constants": flash_constants,
                       "flash_bytes": None, "ram_bytes": None,
                       "live_set_lower_bound_bytes": planner.live_set_lower_bound(graph),
                       "plan": "plan.json", "picture": memory_report.SVG, "fit_estimate": budget},
            "firmware": None, "protocol": protocol, "arena_guard": arena_guard,
            "optimize": speed,
            **({"mlperf": dict(mlperf, model=mlperf_model)} if mlperf else {}),
            "quantization": write_quant_report(quant, options, work, name),
            "warnings": quant.warnings,
        }
        if firmware:
            log(f"building firmware for {the_board.name} with PlatformIO")
            project = fw.write_project(work / "project", the_board, lib, name, protocol, mlperf_model, mlperf,
                                       core=settings.platformio_home, code_in_ram=code_in_ram)
            # the build log of a failed build must outlive the scratch folder: it waits beside OUTDIR
            result = fw.build_firmware(project, the_board, settings, log=log, log_file=failed_log)
            report["memory"]["flash_bytes"] = result.flash_bytes
            report["memory"]["ram_bytes"] = result.ram_bytes
            report["memory"]["linker_region_usage"] = result.linker_usage or None
            if code_in_ram:
                report["memory"]["code_in_ram_bytes"] = code_ram.placed_bytes(result.elf)
            report["memory"].update(fit.measure(project, result.elf, name, host=result.elf.suffix != ".elf"))
            report["firmware"] = str(Path(result.elf).resolve().relative_to(work.resolve()))
        (work / REPORT).write_text(json.dumps(report, indent=1))
    return report


def export_build(build_dir: str | Path, fmt: str, outdir: str | Path, log: Log = _quiet, board: str | None = None,
                 lib_version: str | None = None, maintainer: str | None = None, url: str | None = None) -> dict:
    """A benched build folder -> its model library byte for byte, with the compile flags it was benched with, in
    `fmt` layout (see edgec/export_build.py)."""
    from edgec.export_build import export_build as export_benched

    return export_benched(build_dir, fmt, outdir, log=log, board=board, lib_version=lib_version,
                          maintainer=maintainer, url=url)


@accepts_arrays("calib_path")
def export(model_path: str | Path, calib_path: str | Path | None, board: str, fmt: str, outdir: str | Path,
           log: Log = _quiet, options: ptq.QuantOptions | None = None, name: str | None = None,
           lib_version: str | None = None, maintainer: str | None = None, url: str | None = None,
           ram_budget: int | None = None, optimize: str = "speed", settings: Settings | None = None,
           io_buffers: str = "arena", **quantization) -> dict:
    """Model + calibration data (none for a quantized .tflite) -> a self-contained model library for `board`
    (see edgec/export.py); quantization options as `options` or as keywords (method="percentile", ...):
    name is the C prefix (default from the file name), lib_version the manifests' version (default edgec's),
    maintainer and url the Arduino/PlatformIO metadata, ram_budget, io_buffers and settings as for build."""
    from edgec.export import export as export_library

    for flag, value in (("--maintainer", maintainer), ("--url", url), ("--lib-version", lib_version)):
        check_manifest_text(flag, value)
    return export_library(model_path, calib_path, board, fmt, outdir, log=log,
                          options=quant_options(options, quantization), name=name, lib_version=lib_version, maintainer=maintainer, url=url, ram_budget=ram_budget,
                          optimize=optimize, settings=settings or Settings.from_environment(), io_buffers=io_buffers)


def check_manifest_text(flag: str, value: str | None) -> None:
    """A value the library manifests quote (library.properties is key=value lines, idf_component.yml and
    library.json quoted strings): one printable line without quotes or backslashes, or it would add keys or
    break the file."""
    if value is None:
        return
    bad = sorted({c for c in value if not c.isprintable() or c in '"\\'})
    if bad or not value.strip() or len(value) > 200:
        shown = ", ".join(repr(c) for c in bad) or "an empty or over-long value"
        raise EdgecError(f"{flag} {value[:60]!r}: the library manifests cannot hold {shown}; give one printable "
                         "line without quotes or backslashes")


def _io_info(graph: Graph, tensor: str, shape) -> dict:
    t = graph.tensors[tensor]
    return {"shape": list(shape), "scale": t.scale, "zero_point": t.zero_point, "bytes": t.nbytes}


@accepts_arrays("calib_path")
def calibrate(model_path: str | Path, calib_path=None, options: ptq.QuantOptions | None = None, log: Log = _quiet,
              settings: Settings | None = None, **quantization) -> ptq.QuantResult:
    """Load, canonicalize, calibrate and quantize (`edgec calibrate`): the ptq.QuantResult (its .graph is the
    quantized model api.reference runs). calib_path: an .npz, or the arrays themselves (x (N, *input shape), or a
    dict of arrays by name for several inputs); None for a quantized .tflite. Quantization options as `options`
    or keywords (method="percentile", ...)."""
    return calibrate_model(model_path, calib_path, quant_options(options, quantization), log, settings)[1]


def reference(build_or_graph, x, quantized: bool = False) -> host_reference.Reference:
    """The host-only INT8 reference for one sample, bit-exact with the device: `build_or_graph` a build folder,
    a quantized graph or api.calibrate's result; x the float input (ONNX layout; several inputs: packed), quantized
    as NAME_quantize_input does, or its integer values with quantized=True. Returns (q: the integer output, y: its
    float values) (edgec/host_reference.py)."""
    return host_reference.run(build_or_graph, x, quantized)


def inspect_model(model_path: str | Path, settings: Settings | None = None, calib=None) -> dict:
    """Ops, shapes, parameters, MACs, an arena estimate and the support status of every node, without
    building anything: every unsupported node and every node beyond a limit is listed (`problems`)."""
    model_path = Path(model_path)
    if tflite_float.quantized_tflite(model_path):
        graph, info = tflite.survey(model_path, model_name(model_path))
        info.update(macs=graph_macs(graph), canonical_ops=len(graph.ops), arena_bytes_estimate=None)
        if not info["problems"]:
            graph = graph.replace_ops(planner.schedule(graph))
            info["arena_bytes_estimate"] = planner.plan(graph).arena_bytes
        return info
    model = loader.load_model(model_path, (settings or Settings.from_environment()).memory_limit, calib)
    shapes = {vi.name: loader.static_shape(vi) for vi in
              list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    inits = {i.name: i for i in model.graph.initializer}
    graph, problems = canonicalize.survey(model, model_name(model_path))
    by_node = {p.node: p for p in problems}
    nodes = []
    for i, node in enumerate(model.graph.node):
        name = node.name or f"node #{i}"
        params = sum(int(np.prod(inits[x].dims)) for x in node.input if x in inits)
        problem = by_node.get(name)
        nodes.append({"name": name, "op": node.op_type,
                      "inputs": [list(shapes.get(x) or []) for x in node.input if x and x not in inits],
                      "outputs": [list(shapes.get(x) or []) for x in node.output],
                      "params": params, "supported": problem is None,
                      "problem": problem.to_json() if problem else None})
    info = {"model": str(model_path), "opset": support.opset_of(model, ""),
            "input": {"name": loader.graph_inputs(model)[0].name,
                      "shape": list(shapes.get(loader.graph_inputs(model)[0].name) or [])},
            "output": {"name": model.graph.output[0].name, "shape": list(shapes.get(model.graph.output[0].name) or [])},
            "inputs": [{"name": v.name, "shape": list(shapes.get(v.name) or [])} for v in loader.graph_inputs(model)],
            "outputs": [{"name": v.name, "shape": list(shapes.get(v.name) or [])} for v in model.graph.output],
            "parameters": int(sum(np.prod(i.dims) for i in model.graph.initializer)),
            "nodes": nodes, "problems": [p.to_json() for p in problems],
            "unsupported": [p.label for p in problems if p.unsupported],
            "limits": [str(p) for p in problems if not p.unsupported]}
    given = qdq.info(model)
    if given["activations"] or given["weights"]:
        info["qdq"] = {"activations": len(given["clips"]), "weights": len(given["weights"])}   # Q/DQ pairs, DQ constants
        if qonnx.info(model):
            info["qdq"]["qonnx"] = qonnx.info(model)     # the file's Quant nodes (edgec/frontend/qonnx.py)
    info["macs"] = graph_macs(graph)            # of the nodes edgec can build, when some it cannot
    info["canonical_ops"] = len(graph.ops)
    graph = graph.replace_tensors({k: dataclasses.replace(t, scale=1.0, zero_point=0) for k, t in graph.tensors.items()})
    try:
        graph = graph.replace_ops(planner.schedule(graph))
        info["arena_bytes_estimate"] = planner.plan(graph).arena_bytes
    except Exception:
        if not problems:
            raise
        info["arena_bytes_estimate"] = None     # a partial graph the planner cannot order: no estimate
    return info


@accepts_arrays("calib_path")
def inspect_board(model_path: str | Path, board: str, calib_path=None, optimize: str = "speed", log: Log = _quiet,
                  settings: Settings | None = None, ram_budget: int | None = None, **quantization) -> dict:
    """Arena, scratch, RAM, flash and stack of the plan `build` would choose for `board` (with ram_budget: the
    plan of `build(..., ram_budget=...)`), and whether it fits, without generating or building anything
    (edgec/board_fit.py)."""
    return board_fit.inspect_board(model_path, board, calib_path, optimize, quant_options(None, quantization),
                                   log=log, settings=settings, ram_budget=ram_budget)


def packages_install(bundle: str | Path, log: Log = _quiet, settings: Settings | None = None) -> dict:
    """Seed edgec's PlatformIO core from an offline bundle (see edgec/targets/packages.py)."""
    from edgec.targets import packages
    return packages.install_bundle(Path(bundle), (settings or Settings.from_environment()).platformio_home, log=log)


def packages_bundle(boards: list[str], output: str | Path, core: str | Path | None = None, log: Log = _quiet,
                    settings: Settings | None = None) -> list[str]:
    """Pack the PlatformIO platforms and packages these boards build with (in `core`, default edgec's own)
    into an offline bundle."""
    from edgec.targets import packages
    core = Path(core) if core else (settings or Settings.from_environment()).platformio_home
    return packages.bundle([load_board(b) for b in boards], Path(output), core, log=log)


def packages_status(settings: Settings | None = None) -> dict:
    """Installed PlatformIO platforms/packages and, per board profile, what it lacks to build offline."""
    from edgec.targets import packages
    return packages.status((settings or Settings.from_environment()).platformio_home)
