"""The `edgec` command: a thin shell over edgec.api.

Errors a user can cause print one line ("edgec: error: ...") and exit 2;
--debug shows the traceback instead.
"""
from __future__ import annotations

import argparse
import json
import sys

from edgec import __version__
from edgec import argtypes, children, cli_farm, outputs
from edgec.errors import EdgecError


BOARD_HELP = ("board name (see `edgec boards`) or a board .toml file (required unless the project settings give "
              "one: `edgec config`)")
CONFIGURED = ("build", "export", "calibrate", "bench", "flash", "config")   # commands that read project settings


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _quant_options(args):
    from edgec.quant.ptq import QuantOptions

    return QuantOptions(method=args.method, percentile=args.percentile, per_channel=not args.per_tensor,
                        bias_correction=args.bias_correction, equalize=args.equalize, cache=not args.no_cache,
                        sensitivity_samples=args.sensitivity_samples, auto_seconds=args.auto_seconds,
                        int16=_names(args.int16), weights=args.weights, int4=_names(args.int4),
                        max_accuracy_drop=args.max_accuracy_drop, val=args.val)


def _names(values) -> tuple[str, ...]:
    """NODE[,NODE...] arguments (repeatable) as one tuple of names."""
    return tuple(n for arg in values or () for n in arg.split(",") if n.strip())


def _add_quant_options(p: argparse.ArgumentParser) -> None:
    from edgec.quant.ptq import ALL_METHODS

    p.add_argument("--method", default="minmax", choices=ALL_METHODS,
                   help="activation range estimation (default minmax; auto-model picks the method whose INT8 "
                        "output is closest to float on held-out calibration samples, auto then refines it tensor "
                        "by tensor)")
    p.add_argument("--percentile", type=argtypes.percent, default=99.99, help="percentile of --method percentile (99.99)")
    p.add_argument("--per-tensor", action="store_true", help="one weight scale per layer instead of per channel")
    p.add_argument("--bias-correction", nargs="?", const="quantized", default=False, choices=["quantized", "float"],
                   help="remove the mean output shift quantization causes in every layer, measured on the "
                        "calibration set with the inputs the quantized layer really sees (default) or, with "
                        "'float', the shift of the weights' rounding alone on float inputs")
    p.add_argument("--equalize", action="store_true",
                   help="cross-layer equalization of conv pairs (also through ReLU and max/average pooling)")
    p.add_argument("--no-cache", action="store_true", help="recalibrate even if the statistics are cached")
    p.add_argument("--sensitivity-samples", type=argtypes.count(0), default=16,
                   help="calibration samples the per-layer sensitivity report uses (0: no report)")
    p.add_argument("--auto-seconds", type=argtypes.seconds, default=20.0,
                   help="time budget of --method auto's per-tensor search (default 20 s)")
    p.add_argument("--int16", action="append", metavar="NODE[,NODE...]",
                   help="run these layers (ONNX node names, as the sensitivity table shows them) with int16 "
                        "activations (TFLite 16x8); name a layer and the layer reading it to keep its output int16")
    p.add_argument("--weights", choices=("int8", "int4"), default="int8",
                   help="weight precision: int4 packs every conv, depthwise and fully connected layer's weights "
                        "two per byte (symmetric per channel, [-7, 7])")
    p.add_argument("--int4", action="append", metavar="NODE[,NODE...]",
                   help="int4 weights for these layers only (ONNX node names, as the sensitivity table shows them)")
    p.add_argument("--max-accuracy-drop", type=argtypes.finite, metavar="PTS",
                   help="choose int4 weights and int16 activations layer by layer: the smallest flash whose top-1 "
                        "stays within PTS points of float (on --val, else on the calibration set's held-out split)")
    p.add_argument("--val", metavar="DATA.npz", help="labelled samples (x, y) --max-accuracy-drop is measured on")


def _add_gate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CI gates (a failed gate prints one line and exits 1; see edgec/bench/gates.py)")
    g.add_argument("--min-accuracy", metavar="FRACTION", help="device top-1 accuracy at least this (0.9 or 90%%)")
    g.add_argument("--min-agreement", metavar="FRACTION",
                   help="fraction of samples bit-identical to the INT8 reference at least this (1.0: all)")
    g.add_argument("--max-latency", metavar="LIMIT", help="median latency at most this: a number in the board's "
                   "unit (cycles, instructions, ns) or a time (5ms, 800us)")
    g.add_argument("--max-ram", metavar="BYTES", help="firmware static RAM at most this (65536, 64KiB)")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: a test case per gate and per metric")


def cmd_calibrate(args) -> int:
    from edgec import api
    from edgec.frontend.tflite import is_tflite
    from edgec.quant import sensitivity as sens

    options = _quant_options(args)
    if is_tflite(args.model):
        raise EdgecError(f"{args.model}: a quantized .tflite model has its own quantization, there is nothing to "
                         "calibrate; build it directly (edgec build MODEL.tflite --board BOARD)")
    out = outputs.check_output_file(args.output, (args.model, args.calib)) if args.output else None
    _, result = api.calibrate_model(args.model, args.calib, options, log=_log)
    source = "from the cache" if result.cached else f"in {result.calib_seconds:.1f} s"
    print(f"calibrated on {result.samples} samples {source}; method {result.label}"
          + (" (auto: " + ", ".join(f"{m} {s:.1f} dB" for m, s in result.scores.items()) + ")" if result.scores else ""))
    g = result.graph
    t_in = g.tensors[g.input]
    print(f"input scale {t_in.scale:.6g}, zero point {t_in.zero_point}")
    if result.sensitivity:
        print("sensitivity, worst first (SQNR of INT8 vs float in dB, higher is better):")
        print(sens.table(result.sensitivity))
    if out is not None:
        outputs.write_json(out, result.to_json(options))
        print(f"wrote {out}")
    return 0


def _add_model_args(p) -> None:
    p.add_argument("model", help="float ONNX model, or a fully quantized INT8 .tflite model")
    p.add_argument("--calib", help=".npz with x (N, *input shape without batch); not for a quantized .tflite")
    p.add_argument("--board", required=p.prog.endswith(" tune"), help=BOARD_HELP)


def _add_optimize(p) -> None:
    p.add_argument("--optimize", choices=["speed", "size"], default="speed",
                   help="speed (default): per-layer specialized kernels (more flash for repacked weights); "
                        "size: the generic kernels")


def cmd_tune(args) -> int:
    from edgec import tune

    print(tune.summary(args.model, args.calib, args.board, getattr(args, "data", None), args.tuning_log,
                       _quant_options(args), only_missing=args.command == "build", log=_log))
    return 0


def cmd_build(args) -> int:
    from edgec import api

    if args.tune:
        cmd_tune(args)
    report = api.build(args.model, args.calib, args.board, args.output, log=_log, options=_quant_options(args),
                       protocol=args.protocol, mlperf_model=args.mlperf_model, arena_guard=args.arena_guard,
                       mlperf_mode=args.mlperf_mode, mlperf_baud=args.mlperf_baud, optimize=args.optimize, ram_budget=args.ram_budget,
                       tuning_log=args.tuning_log)
    m = report["memory"]
    print(f"built {report['model']} for {report['board']}: arena {m['arena_bytes']:,} B, "
          f"weights {m['weights_bytes']:,} B, firmware flash {m['flash_bytes']:,} B, RAM {m['ram_bytes']:,} B")
    return 0


def cmd_export(args) -> int:
    from edgec import api

    m = api.export(args.model, args.calib, args.board, args.format, args.output, log=_log,
                   options=_quant_options(args), name=args.name, lib_version=args.lib_version,
                   maintainer=args.maintainer, url=args.url, ram_budget=args.ram_budget, optimize=args.optimize)
    print(f"exported {m['model']} for {m['board']} as a {m['format']} library in {args.output}: "
          f"arena {m['arena_bytes']:,} B, weights {m['weights_bytes']:,} B, example {m['example']}")
    return 0


def cmd_bench(args) -> int:
    import time
    from edgec import api
    from edgec.bench import gates as bench_gates
    from edgec.bench import report

    outdirs, args.outdir = args.outdir, args.outdir[0]
    if cli_farm.is_matrix(args, outdirs):
        return cli_farm.cmd_bench_matrix(args, outdirs, _log)
    gates = bench_gates.parse_gates(args.min_accuracy, args.min_agreement, args.max_latency, args.max_ram)
    bench_gates.check_measurable(gates, args.outdir, args.data, junit=args.junit)
    report_dir = None if args.no_report else (args.report or args.outdir)
    t0 = time.monotonic()
    to_stdout = args.json == "-"
    json_file = outputs.check_output_file(args.json, (args.data,)) if args.json and not to_stdout else None
    r = api.bench(args.outdir, args.data, limit=args.limit, port=args.port, log=_log, profile=args.profile,
                  compare_layers=args.compare_layers, score=args.score, report_dir=report_dir,
                  flash=not args.no_flash, probe=args.probe, gdb=args.gdb, drive=args.drive,
                  dataset_in_flash=args.dataset_in_flash, max_chunk=args.chunk)
    if json_file is not None:
        outputs.write_json(json_file, r)
    out = sys.stderr if to_stdout else sys.stdout     # with --json -, stdout carries only the JSON
    if "profile" in r:
        print(report.profile_table(r), file=out)
    for line in report.summary_lines(r):
        print(line, file=out)
    if r.get("report_files"):
        print(f"report: {', '.join(r['report_files'])}", file=out)
    outcomes = bench_gates.evaluate(gates, r)
    if args.junit:
        print(f"junit: {bench_gates.write_junit(args.junit, r, outcomes, time.monotonic() - t0)}", file=out)
    for o in outcomes:
        print(o.line, file=out if o.passed else sys.stderr)
    if to_stdout:
        print(json.dumps(r, indent=1))
    return 1 if bench_gates.failures(outcomes) else 0


def _add_probe_options(p) -> None:
    from edgec.targets.boards import PROBES

    p.add_argument("--probe", choices=[k for k in PROBES if k != "emulator"],
                   help="how to write the firmware (default: the board profile's [flash] probe): "
                        + "; ".join(f"{k}: {v}" for k, v in PROBES.items() if k != "emulator"))
    p.add_argument("--gdb", metavar="HOST:PORT", help="the GDB server for --probe gdb (default localhost:3333; an "
                   "emulated board without it: edgec starts the emulator halted and loads through its GDB stub)")
    p.add_argument("--drive", metavar="DIR", help="the RP2040's BOOTSEL drive for --probe uf2 (default: looked for)")


def cmd_flash(args) -> int:
    from edgec import api

    if cli_farm.places_of(args, [args.outdir]):
        return cli_farm.cmd_flash_place(args, _log)
    hello = api.flash(args.outdir, port=args.port, log=_log, probe=args.probe, gdb=args.gdb, drive=args.drive)
    if hello.get("protocol") == "mlperf":
        print(f"flashed: the device answers the MLPerf Tiny runner as {hello.get('name')}, model "
              f"{hello.get('model')} ({hello.get('profile')}) on {hello.get('board')}")
        return 0
    print(f"flashed: the device runs {hello.get('model')} ({hello.get('model_hash')}) on {hello.get('board')}")
    return 0


def cmd_config(args) -> int:
    from edgec import config

    for line in config.describe(args.settings, args.project_config):
        print(line)
    return 0


def cmd_doctor(args) -> int:
    from edgec import doctor

    lines, code = doctor.report()
    print("\n".join(lines))
    return code


def cmd_completion(args) -> int:
    import shtab

    print(shtab.complete(parser(), shell=args.shell))
    return 0


def cmd_mlperf(args) -> int:
    from edgec import api

    r = api.mlperf(args.build, args.dataset, args.mode, args.results, args.port, args.window_seconds,
                   args.limit, log=_log)
    print(f"MLPerf Tiny {r['model']} {r['mode']} on {r['board']}: results in {r['results_file']}")
    return 0


def cmd_boards(args) -> int:
    from edgec.targets.boards import list_boards

    boards = list_boards()
    if args.json:
        print(json.dumps([_board_json(b) for b in boards], indent=1))
        return 0
    print(f"{'board':20} {'kind':16} {'cpu':13} {'fpu':11} {'dsp':3} {'clock':>8} {'RAM':>9} {'flash':>9} "
          f"{'model RAM':>9} {'model flash':>11}  timing")
    for b in boards:
        kind = "emulated" if b.emulated else ("host" if b.cpu == "host" else
                                               "real, tested" if b.tested_on_hardware else "real, untested")
        clock = f"{b.clock_hz / 1e6:g} MHz" if b.clock_hz else "-"
        print(f"{b.name:20} {kind:16} {b.cpu:13} {b.fpu:11} {'yes' if b.dsp else 'no':3} {clock:>8} "
              f"{_size(b.ram_bytes):>9} {_size(b.flash_bytes):>9} {_size(b.ram_bytes - b.reserved_ram_bytes):>9} "
              f"{_size(b.flash_bytes - b.reserved_flash_bytes):>11}  {b.timing_unit}")
    print("model RAM / flash: what is left for the model after the framework's estimated share (reserved_*_bytes); "
          "`edgec boards --json` has every field")
    return 0


def _board_json(b) -> dict:
    return {"name": b.name, "description": b.description, "cpu": b.cpu, "fpu": b.fpu, "dsp": b.dsp,
            "clock_hz": b.clock_hz, "ram_bytes": b.ram_bytes, "flash_bytes": b.flash_bytes,
            "reserved_ram_bytes": b.reserved_ram_bytes, "reserved_flash_bytes": b.reserved_flash_bytes,
            "memory": [vars(r) for r in b.regions], "emulated": b.emulated,
            "tested_on_hardware": b.tested_on_hardware, "cpu_flags": list(b.cpu_flags),
            "platformio": {"platform": b.pio_platform, "board": b.pio_board, "framework": b.framework},
            "timing_method": b.timing_method, "timing_unit": b.timing_unit, "flash": vars(b.flash),
            "emulator_deviations": list(b.emulator_deviations), "file": str(b.path)}


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n / 1024:,g} KiB"


def cmd_inspect(args) -> int:
    from edgec import api

    info = api.inspect_model(args.model)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0 if not info["problems"] else 1
    print(f"{info['model']}: opset {info['opset']}, input {info['input']['name']} {info['input']['shape']}, "
          f"output {info['output']['name']} {info['output']['shape']}, {info['parameters']:,} parameters")
    print(f"{'node':40} {'op':20} {'input shape':22} {'output shape':18} {'params':>9}  supported")
    for n in info["nodes"]:
        status = "yes" if n["supported"] else ("NO" if n["problem"]["kind"] == "unsupported" else "LIMIT")
        print(f"{n['name'][:40]:40} {n['op']:20} {str(n['inputs'][0] if n['inputs'] else '')[:22]:22} "
              f"{str(n['outputs'][0] if n['outputs'] else '')[:18]:18} {n['params']:>9,}  {status}")
    for p in info["problems"]:
        print(f"{'unsupported' if p['kind'] == 'unsupported' else 'limit'}: {p['op']} ({p['node']}, "
              f"opset {p['opset']}): {p['what']}")
    if "qdq" in info:
        print(f"QDQ model: the quantization of {info['qdq']['activations']} activations and "
              f"{info['qdq']['weights']} constants comes from its QuantizeLinear/DequantizeLinear nodes "
              "(shown as the Clips they become)")
    arena = info["arena_bytes_estimate"]
    print(f"{info['macs']:,} MACs, {info['canonical_ops']} ops after canonicalization, arena estimate "
          + (f"{arena:,} bytes" if arena is not None else "unknown")
          + (f" (of the nodes edgec can build; {len(info['problems'])} it cannot)" if info["problems"] else ""))
    return 0 if not info["problems"] else 1


def cmd_packages(args) -> int:
    from edgec import api

    if args.action == "install":
        done = api.packages_install(args.bundle, log=_log)
        print(f"installed {len(done['installed'])}, already there {len(done['kept'])}: "
              + ", ".join(done["installed"] + done["kept"]))
    elif args.action == "bundle":
        packed = api.packages_bundle(args.board, args.output, args.core, log=_log)
        print(f"wrote {args.output}: {', '.join(packed)}")
    else:
        info = api.packages_status()
        if args.json:
            print(json.dumps(info, indent=1))
            return 0
        print(f"PlatformIO core: {info['core_dir']}")
        for kind in ("platforms", "packages"):
            print(f"{kind}: " + (", ".join(f"{k} {v}" for k, v in info[kind].items()) or "none"))
        for board, lacking in info["boards"].items():
            print(f"  {board:24s} " + ("builds offline" if not lacking else "needs " + ", ".join(lacking)))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with edgec's one-line errors (the usage stays behind --help)."""

    def error(self, message: str):
        self.exit(2, f"edgec: error: {' '.join(message.split())} (see `{self.prog} --help`)\n")


def _add_ram_budget(p) -> None:
    p.add_argument("--ram-budget", type=argtypes.count(1), metavar="BYTES",
                   help="RAM the whole firmware may use (arena + static RAM + stack): edgec picks the fastest "
                        "schedule that fits (patch-based execution of the early layers if needed) or says the "
                        "least RAM it can reach")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="edgec", description="Float ONNX model + calibration set -> INT8 firmware, "
                                "built, flashed and benchmarked on a microcontroller board.")
    p.add_argument("--version", action="version", version=f"edgec {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="quantize a model and build its firmware")
    _add_model_args(b)
    b.add_argument("-o", "--output", help="build folder (default build/<model>-<board>)")
    _add_quant_options(b)
    _add_ram_budget(b)
    b.add_argument("--protocol", choices=["edgec", "mlperf"], default="edgec",
                   help="the firmware's serial protocol: edgec's bench link (default) or the MLPerf Tiny "
                        "runner's (name%%, profile%%, db load N%%, infer N W%%, results%%)")
    b.add_argument("--mlperf-model", help="with --protocol mlperf: the m-model-[...] name the runner sees "
                   "(kws01, vww01, ad01, ic01: the device then takes that benchmark's official input "
                   "encoding and prints its results format; default: the model's name, raw int8 input)")
    b.add_argument("--mlperf-mode", choices=["performance", "energy"], default="performance",
                   help="with --protocol mlperf: performance (m-lap-us timestamps) or energy (EEMBC energy mode: "
                        "9,600 baud, timestamps pulse the board profile's [mlperf] timestamp_pin)")
    b.add_argument("--mlperf-baud", type=int, help="with --protocol mlperf: the UART baud rate (default: 9600 in "
                   "energy mode, else the board profile's [mlperf] baud or serial.baud)")
    _add_optimize(b)
    b.add_argument("--tune", action="store_true", help="measure the kernel variants of layers the tuning log has "
                   "no record for (edgec tune) first")
    b.add_argument("--tuning-log", help="the tuning log (default ~/.cache/edgec/tuning.json)")
    b.add_argument("--arena-guard", action="store_true",
                   help="debug build: canaries around the arena and every buffer, checked after every layer; "
                        "a layer writing outside its buffer stops the run and the bench names it")
    b.set_defaults(func=cmd_build)

    m = sub.add_parser("mlperf", help="run the MLPerf Tiny runner's accuracy or performance flow on a "
                       "--protocol mlperf build")
    m.add_argument("build", help="build folder (edgec build --protocol mlperf --mlperf-model kws01|vww01|ic01|ad01)")
    m.add_argument("--dataset", required=True, help="folder with <model>/y_labels.csv and its files (the runner's "
                   "layout, inputs in the official encodings)")
    m.add_argument("--mode", choices=["accuracy", "performance"], default="accuracy")
    m.add_argument("--results", help="folder for <model>/<mode>/results.txt and results.json "
                   "(default BUILD/mlperf-results)")
    m.add_argument("--port", help="serial port of a real board (emulated boards are started by edgec)")
    m.add_argument("--window-seconds", type=float, default=10.0,
                   help="performance: each window runs long enough to last this long on the board (rules: 10)")
    m.add_argument("--limit", type=int, help="accuracy: only the first N files")
    m.set_defaults(func=cmd_mlperf)

    e = sub.add_parser("export", help="write a quantized model as a library for your own firmware")
    _add_model_args(e)
    e.add_argument("--format", required=True, choices=["c", "platformio", "arduino", "cmake"],
                   help="library layout: plain C files, PlatformIO library, Arduino library, CMake/Zephyr module")
    e.add_argument("-o", "--output", required=True, help="folder to write the library into")
    _add_optimize(e)
    e.add_argument("--name", help="C prefix of every symbol and the library's name (default: from the model file)")
    e.add_argument("--lib-version", help="the library's version in its manifests (default: edgec's version)")
    e.add_argument("--maintainer", help="library maintainer, 'Name <email>' (library.properties, library.json)")
    e.add_argument("--url", help="the library's home page (library.properties, library.json)")
    _add_quant_options(e)
    _add_ram_budget(e)
    e.set_defaults(func=cmd_export)

    t = sub.add_parser("tune", help="time every layer's kernel variants on the board; the fastest bit-exact ones "
                       "go into the tuning log that later builds for the board use")
    _add_model_args(t)
    t.add_argument("--data", help=".npz with x to time the layers on (default: the calibration set)")
    t.add_argument("--tuning-log", help="the tuning log to add to (default ~/.cache/edgec/tuning.json)")
    _add_quant_options(t)
    t.set_defaults(func=cmd_tune)

    c = sub.add_parser("calibrate", help="calibrate and quantize a model; print where INT8 loses accuracy")
    c.add_argument("model", help="float ONNX model")
    c.add_argument("--calib", required=True, help=".npz with x (N, *input shape without batch)")
    c.add_argument("-o", "--output", help="write the quantization parameters and sensitivity to this JSON file")
    _add_quant_options(c)
    c.set_defaults(func=cmd_calibrate)

    r = sub.add_parser("bench", help="run test data on the device and report accuracy and latency")
    r.add_argument("outdir", nargs="+", help="a build folder made by `edgec build` (several: a model x board "
                   "matrix run in parallel, one matrix report)")
    r.add_argument("--data", required=True, help=".npz with x and optional integer labels y")
    r.add_argument("--limit", type=argtypes.count(1), help="use only the first N samples")
    r.add_argument("--port", default="auto", help="serial port of the board (default auto: a real board's port "
                   "found by its USB VID:PID; an emulated board's from the emulator)")
    r.add_argument("--json", help="also write the JSON report to this file ('-': to stdout, for CI)")
    r.add_argument("--profile", action="store_true", help="time every layer on the device (table and chart)")
    r.add_argument("--compare-layers", action="store_true",
                   help="read every layer's output back for one sample and name the first that differs from "
                        "the reference (done automatically when a device output differs)")
    r.add_argument("--score", metavar="MODULE:FUNCTION",
                   help="your own metric: a function fn(outputs, labels, inputs) -> number or dict, named as "
                        "module:function or path/to/file.py:function")
    r.add_argument("--report", metavar="DIR", help="where to write report.html and bench-report.json "
                   "(default: the build folder)")
    r.add_argument("--no-report", action="store_true", help="write neither report.html nor bench-report.json")
    r.add_argument("--no-flash", action="store_true", help="the board already runs this build: do not flash it first")
    _add_probe_options(r)
    _add_gate_options(r)
    cli_farm.add_bench_options(r)
    r.set_defaults(func=cmd_bench)

    f = sub.add_parser("flash", help="write a build's firmware into the board (emulated: start it) and check it answers")
    f.add_argument("outdir")
    f.add_argument("--port", default="auto", help="serial port of the board (default auto: found by its USB VID:PID)")
    _add_probe_options(f)
    cli_farm.add_flash_options(f)
    f.set_defaults(func=cmd_flash)

    cf = sub.add_parser("config", help="print the settings in effect for a model and where each comes from "
                        "(command line, edgec.toml / pyproject.toml [tool.edgec], default)")
    cf.add_argument("model", nargs="?", help="the model whose folder's settings to show (default: this folder's)")
    cf.add_argument("--board", help=BOARD_HELP)
    _add_quant_options(cf)
    _add_gate_options(cf)
    cf.set_defaults(func=cmd_config)

    d = sub.add_parser("doctor", help="check this machine: toolchains, QEMU, PlatformIO, serial ports, Chromium")
    d.set_defaults(func=cmd_doctor)
    comp = sub.add_parser("completion", help="print a shell completion script: "
                          "`edgec completion bash > ~/.local/share/bash-completion/completions/edgec`")
    comp.add_argument("shell", choices=["bash", "zsh", "tcsh"])
    comp.set_defaults(func=cmd_completion)

    bo = sub.add_parser("boards", help="list board profiles")
    bo.add_argument("--json", action="store_true")
    bo.set_defaults(func=cmd_boards)

    pk = sub.add_parser("packages", help="offline PlatformIO packages: install a bundle, make one, list them")
    pk_sub = pk.add_subparsers(dest="action", required=True)
    pki = pk_sub.add_parser("install", help="install an offline bundle (.tar.xz) into edgec's PlatformIO core")
    pki.add_argument("bundle")
    pkb = pk_sub.add_parser("bundle", help="pack the platforms and packages boards build with (after an online "
                            "build) into a bundle for machines without internet")
    pkb.add_argument("--board", action="extend", nargs="+", required=True, help="board names or .toml files")
    pkb.add_argument("-o", "--output", required=True, help="the bundle to write (.tar.xz)")
    pkb.add_argument("--core", help="PlatformIO core dir to take them from (default: edgec's own)")
    pkl = pk_sub.add_parser("list", help="installed platforms and packages; which boards build offline")
    pkl.add_argument("--json", action="store_true")
    pk.set_defaults(func=cmd_packages)

    i = sub.add_parser("inspect", help="ops, shapes, parameters, MACs and support status of a model")
    i.add_argument("model")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_inspect)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    previous = children.signals_raise()   # SIGTERM/SIGHUP clean up like Ctrl-C: no child, no staging folder left
    try:
        if args.command in CONFIGURED:
            from edgec import config
            args.settings = config.apply(args, parser, argv)
            if args.command in ("build", "export") and not args.board:
                raise EdgecError(f"no board: give --board (see `edgec boards`) or set board in an edgec.toml or "
                                 f"pyproject.toml [tool.edgec] beside {args.model}")
        return args.func(args)
    except EdgecError as exc:
        if args.debug:
            raise
        print(f"edgec: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except children.Terminated as exc:
        print(f"edgec: terminated ({exc}); nothing half-written was left", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("edgec: interrupted", file=sys.stderr)
        return 130
    finally:
        children.restore(previous)


if __name__ == "__main__":
    sys.exit(main())
