"""Build an audio front end and a classifier as one model: `edgec build kws.onnx --frontend preprocessor.tflite
--calib clips.npz`. The front end (a quantized .tflite taking one window of int16 audio and giving one row of
int8 features, e.g. TFLite Micro's micro_speech preprocessor) runs over each clip a window every hop samples;
its rows, stacked, are the classifier's input. The calibration file holds raw clips (x: [N, samples], int16
sample values): the front end's integer reference turns them into the features the classifier is calibrated
on. One model library (edgec/codegen/chain.py), one firmware, raw audio in and scores out; the build folder
keeps both graphs (the classifier's at the top, the front end's in frontend/) and the chain's shape in the
report's "chain" entry, which `edgec bench` reads (edgec/bench/chained.py).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np

from edgec import __version__, board_fit
from edgec.array_data import data_file
from edgec.codegen import chain as chain_code
from edgec.codegen import constants
from edgec.data import load_dataset
from edgec.errors import EdgecError
from edgec.frontend import loader
from edgec.ir import Graph
from edgec.ops.registry import graph_macs
from edgec.outputs import check_output_folder, check_output_file
from edgec.pipeline import Log, calibrate_model, model_name, plan_to_fit, quiet
from edgec.plan import memory_report
from edgec.progress import Progress
from edgec.quant import artifact, chained, ptq
from edgec.settings import Settings
from edgec.staging import staged_folder
from edgec.targets import fit
from edgec.targets.boards import load_board
from edgec.targets.build_folder import REPORT

FRONTEND_DIR = "frontend"


def _frontend_graph(frontend_path: Path, log: Log, settings: Settings) -> Graph:
    if frontend_path.suffix.lower() != ".tflite":
        raise EdgecError(f"--frontend {frontend_path}: a front end is a quantized .tflite (TFLite Micro's audio "
                         "preprocessor, its signal operators); an ONNX front end is not chained yet")
    _, result = calibrate_model(frontend_path, None, None, log, settings)
    return result.graph


def _clips_file(path: Path, settings: Settings):
    """A data file of clips, x [N, samples] (any length: the chain checks it)."""
    try:
        with np.load(path) as z:
            shape = z["x"].shape if "x" in z.files else (0, 0)
    except (OSError, ValueError) as exc:
        raise EdgecError(f"{path}: not a readable .npz data file ({exc}); give clips as x [N, samples]") from None
    return load_dataset(path, (1, *shape[1:]), memory_limit=settings.memory_limit)


def _chain_shape(frontend: Graph, dims: list[int], samples: int | None, hop, where: str) -> chained.Chain:
    """The chain's shape from the classifier's input dims (without batch), the clip length and the hop (default:
    the windows spread evenly over the clip, first to last sample)."""
    features = int(np.prod(frontend.tensors[frontend.output].shape))
    window = int(np.prod(frontend.tensors[frontend.input].shape))
    n = int(np.prod(dims)) if dims and all(dims) else 0
    if not n or n % features:
        raise EdgecError(f"{where}: its input {dims} is not a stack of the front end's rows of {features} "
                         "features; give a classifier taking frames x features values")
    frames = n // features
    if hop is None:
        if samples is None or frames < 2 or samples < window or (samples - window) % (frames - 1):
            raise EdgecError(f"{where}: cannot spread {frames} windows of {window} samples evenly over clips of "
                             f"{samples} samples; give --frontend-hop")
        hop = (samples - window) // (frames - 1)
    if samples is None:
        samples = window + hop * (frames - 1)
    if hop <= 0 or window + hop * (frames - 1) > samples:
        raise EdgecError(f"{where}: {frames} windows of {window} samples every {hop} samples do not fit in clips of "
                         f"{samples} samples; give longer clips or a smaller --frontend-hop")
    return chained.Chain(window, int(hop), frames, features, int(samples))


def _classifier(model_path: Path, frontend: Graph, calib_path, hop, options, settings: Settings, log: Log):
    """(the quantized classifier, the chain's shape): a .tflite as it is (calib optional), a float ONNX model
    calibrated on the front end's features of the raw calibration clips."""
    clips = None
    if calib_path is not None:
        data = _clips_file(Path(calib_path), settings)
        clips, labels = chained.clips_int16(data.x, f"--calib {calib_path}"), data.y
    samples = None if clips is None else clips.shape[1]
    if model_path.suffix.lower() == ".tflite":
        _, quant = calibrate_model(model_path, None, options, log, settings)
        g = quant.graph
        shape = _chain_shape(frontend, list(g.input_onnx_shape[1:]), samples, hop, str(model_path))
        return quant, dataclasses.replace(shape, requantize=False)
    if clips is None:
        raise EdgecError("a chained build calibrates its classifier on the front end's features of raw audio: give "
                         "--calib CLIPS.npz (x: clips of int16 sample values)")
    model = loader.load_model(model_path, settings.memory_limit)
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][1:]
    chain = _chain_shape(frontend, dims, samples, hop, str(model_path))
    log(f"front end over {len(clips)} calibration clips ({chain.frames} windows each)")
    feats = chained.features(frontend, chain, clips, progress=Progress("front end", len(clips)))
    x = chained.float_features(frontend, feats).reshape(len(clips), *dims)
    with data_file({"x": x, **({"y": labels} if labels is not None else {})}, "calib") as features_file:
        _, quant = calibrate_model(model_path, features_file, options, log, settings)
    return quant, chain


def build(model_path: str | Path, calib_path, frontend_path: str | Path, board: str, outdir: str | Path | None = None,
          log: Log = quiet, firmware: bool = True, options: ptq.QuantOptions | None = None,
          optimize: str = "speed", hop: int | None = None, settings: Settings | None = None) -> dict:
    """Front end + classifier + raw calibration clips -> one build folder (see the module's text)."""
    from edgec.targets import firmware as fw

    model_path, frontend_path = Path(model_path), Path(frontend_path)
    for p, what in ((model_path, "model"), (frontend_path, "--frontend")):
        if not p.is_file():
            raise EdgecError(f"{what} {p}: no such file")
    the_board = load_board(board)
    outdir = Path(outdir) if outdir else Path("build") / f"{model_name(model_path)}-{the_board.name}"
    inputs = (model_path, frontend_path, *(() if calib_path is None else (Path(calib_path),)))
    check_output_folder(outdir, inputs)
    failed_log = outdir.parent / f"{outdir.name}.build-failed.log"
    if firmware:
        check_output_file(failed_log, inputs, what="failed-build log", folder_exists=False)
    settings = settings or Settings.from_environment()
    options = (options or ptq.QuantOptions()).normalized()
    frontend = _frontend_graph(frontend_path, log, settings)
    quant, chain = _classifier(model_path, frontend, calib_path, hop, options, settings, log)
    classifier = quant.graph
    chained.check(frontend, classifier, chain, str(model_path))     # the quantized graphs' shapes
    choose = board_fit.build_chooser(the_board, optimize, None, settings, {})
    parts = {}
    for part, graph in (("frontend", frontend), ("model", classifier)):
        g, plan, budget, mode = plan_to_fit(graph, the_board, 0, optimize, choose, log)
        parts[part] = (g, plan, {"arena_bytes": plan.arena_bytes, "constants": constants.breakdown(g),
                                 "macs": graph_macs(g), "ops": len(g.ops), "optimize": mode, "fit_estimate": budget})
    name = model_name(model_path)
    fe, net = parts["frontend"], parts["model"]
    log(f"{name}: front end {fe[2]['ops']} ops x {chain.frames} windows, arena {fe[2]['arena_bytes']:,} B; "
        f"classifier {net[2]['ops']} ops, {net[2]['macs']:,} MACs, arena {net[2]['arena_bytes']:,} B")
    with staged_folder(outdir, "build", inputs) as work:
        lib = work / "model"
        chain_code.generate(fe[:2], net[:2], chain, lib, name)
        artifact.save_graph(net[0], work)
        (work / FRONTEND_DIR).mkdir()
        artifact.save_graph(fe[0], work / FRONTEND_DIR)
        if quant.method == "tflite":
            shutil.copyfile(model_path, work / "model.tflite")
        else:
            loader.copy_model(model_path, work / "model.onnx")
        shutil.copyfile(frontend_path, work / FRONTEND_DIR / "model.tflite")
        (work / "plan.json").write_text(json.dumps(dict(net[1].to_json(), **memory_report.summary(net[0], net[1])),
                                                   indent=1))
        (work / memory_report.SVG).write_text(memory_report.render_svg(net[0], net[1]))
        tout = net[0].tensors[net[0].output]
        report = {
            "edgec_version": __version__, "board": the_board.name, "board_file": str(the_board.path),
            "model": name, "model_file": str(model_path.resolve()),
            "model_hash": chain_code.chain_hash(fe[0], net[0], chain),
            "macs": net[2]["macs"], "ops": net[2]["ops"] + 1,
            "input": {"shape": [1, chain.samples], "dtype": "int16", "scale": 1.0, "zero_point": 0,
                      "bytes": 2 * chain.samples},
            "output": {"shape": list(net[0].output_onnx_shape), "scale": tout.scale, "zero_point": tout.zero_point,
                       "bytes": tout.nbytes},
            "chain": {"frontend_file": str(frontend_path.resolve()), "window": chain.window, "hop": chain.hop,
                      "frames": chain.frames, "features": chain.features, "samples": chain.samples,
                      "rescale_features": chain.requantize,
                      "frontend": fe[2], "model": net[2]},
            "memory": {"arena_bytes": fe[2]["arena_bytes"] + net[2]["arena_bytes"],
                       "audio_buffer_bytes": 2 * chain.samples,
                       "weights_bytes": fe[2]["constants"]["total"] + net[2]["constants"]["total"],
                       "flash_bytes": None, "ram_bytes": None, "plan": "plan.json", "picture": memory_report.SVG},
            "firmware": None, "protocol": "edgec", "arena_guard": False,
            "optimize": {"mode": optimize},
            "quantization": {"method": quant.method, "warnings": quant.warnings},
            "warnings": quant.warnings,
        }
        if firmware:
            log(f"building firmware for {the_board.name} with PlatformIO")
            project = fw.write_project(work / "project", the_board, lib, name, "edgec", core=settings.platformio_home)
            result = fw.build_firmware(project, the_board, settings, log=log, log_file=failed_log)
            report["memory"]["flash_bytes"] = result.flash_bytes
            report["memory"]["ram_bytes"] = result.ram_bytes
            report["memory"].update(fit.measure(project, result.elf, name, host=result.elf.suffix != ".elf"))
            report["firmware"] = str(Path(result.elf).resolve().relative_to(work.resolve()))
        (work / REPORT).write_text(json.dumps(report, indent=1))
    return report


def load(outdir: Path) -> tuple[Graph, Graph, chained.Chain]:
    """A chained build folder's front end, classifier and chain shape."""
    report = json.loads((Path(outdir) / REPORT).read_text())
    c = report["chain"]
    return (artifact.load_graph(Path(outdir) / FRONTEND_DIR), artifact.load_graph(Path(outdir)),
            chained.Chain(c["window"], c["hop"], c["frames"], c["features"], c["samples"],
                          c["rescale_features"]))
