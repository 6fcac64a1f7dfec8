"""The `edgec` command: a thin shell over edgec.api.

Errors a user can cause print one line ("edgec: error: ...") and exit 2;
--debug shows the traceback instead.
"""
from __future__ import annotations

import json
import sys

from edgec import children, cli_farm, cli_parser, outputs
from edgec.errors import EdgecError


CONFIGURED = ("build", "export", "calibrate", "bench", "flash", "config")   # commands that read project settings
# commands that read the environment's settings (edgec/settings.py: once, into args.env)
ENVIRONMENT = ("build", "export", "calibrate", "tune", "bench", "flash", "doctor", "inspect", "packages")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _quant_options(args):
    from edgec.quant.ptq import QuantOptions

    return QuantOptions(method=args.method, percentile=args.percentile, per_channel=not args.per_tensor,
                        bias_correction=False if args.bias_correction == "off" else args.bias_correction, equalize=args.equalize,
                        saturation=args.saturation, unseen_ranges=args.unseen_ranges, cache=not args.no_cache,
                        sensitivity_samples=args.sensitivity_samples, auto_seconds=args.auto_seconds,
                        int16=_names(args.int16), recurrent_int16=args.int16_recurrence, tail_int16=args.int16_tail,
                        attention_int16=args.int16_attention, weights=args.weights, int4=_names(args.int4),
                        max_accuracy_drop=args.max_accuracy_drop, min_sqnr=args.min_sqnr, rounding=args.rounding, val=args.val, state=_names(args.state),
                        input_layout=args.input_layout, requantize=args.requantize)


def _names(values) -> tuple[str, ...]:
    """NODE[,NODE...] arguments (repeatable) as one tuple of names."""
    return tuple(n for arg in values or () for n in arg.split(",") if n.strip())


def cmd_calibrate(args) -> int:
    from edgec import api
    from edgec.frontend.tflite_float import quantized_tflite
    from edgec.quant import sensitivity as sens

    options = _quant_options(args)
    if quantized_tflite(args.model):
        raise EdgecError(f"{args.model}: a quantized .tflite model has its own quantization, there is nothing to "
                         "calibrate; build it directly (edgec build MODEL.tflite --board BOARD)")
    out = outputs.check_output_file(args.output, (args.model, args.calib)) if args.output else None
    _, result = api.calibrate_model(args.model, args.calib, options, log=_log, settings=args.env)
    source = "from the cache" if result.cached else f"in {result.calib_seconds:.1f} s"
    print(f"calibrated on {result.samples} samples {source}; method {result.label}"
          + (" (auto: " + ", ".join(f"{m} {s:.1f} dB" for m, s in result.scores.items()) + ")" if result.scores else ""))
    g = result.graph
    for name in g.inputs:
        t_in = g.tensors[name]
        label = f"input {g.port_names[name]}" if name in g.port_names else "input"
        print(f"{label} scale {t_in.scale:.6g}, zero point {t_in.zero_point}")
    if result.sensitivity:
        print("sensitivity, worst first (SQNR of INT8 vs float in dB, higher is better):")
        print(sens.table(result.sensitivity))
    if out is not None:
        outputs.write_json(out, result.to_json(result.options or options.normalized()))     # as applied
        print(f"wrote {out}")
    return 0


def cmd_tune(args) -> int:
    from edgec import tune

    print(tune.summary(args.model, args.calib, args.board, getattr(args, "data", None), args.tuning_log,
                       _quant_options(args), only_missing=args.command == "build", log=_log, settings=args.env))
    return 0


def cmd_build(args) -> int:
    from edgec import api

    if args.tune:
        cmd_tune(args)
    report = api.build(args.model, args.calib, args.board, args.output, log=_log, options=_quant_options(args),
                       protocol=args.protocol, mlperf_model=args.mlperf_model, arena_guard=args.arena_guard,
                       mlperf_mode=args.mlperf_mode, mlperf_baud=args.mlperf_baud, optimize=args.optimize, ram_budget=args.ram_budget,
                       tuning_log=args.tuning_log, settings=args.env, io_buffers=args.io_buffers,
                       frontend=args.frontend, frontend_hop=args.frontend_hop, weights_in_ram=args.weights_in_ram,
                       code_in_ram=args.code_in_ram)
    m = report["memory"]
    if "chain" in report:
        c = report["chain"]
        print(f"built {report['model']} for {report['board']}: front end x {c['frames']} windows of {c['window']} "
              f"samples (hop {c['hop']}) + classifier; arenas {c['frontend']['arena_bytes']:,} + "
              f"{c['model']['arena_bytes']:,} B, constants {c['frontend']['constants']['total']:,} + "
              f"{c['model']['constants']['total']:,} B, firmware flash {m['flash_bytes']:,} B, RAM {m['ram_bytes']:,} B")
        return 0
    print(f"built {report['model']} for {report['board']}: arena {m['arena_bytes']:,} B, "
          f"constants {m['weights_bytes']:,} B (weights {m['constants']['weights']:,} B), firmware flash "
          f"{m['flash_bytes']:,} B, RAM {m['ram_bytes']:,} B")
    if m.get("weights_in_ram_bytes"):
        print(f"--weights-in-ram: {m['weights_in_ram_bytes']:,} B of weights and requantization records copied into RAM at startup (in the RAM figure)")
    if m.get("code_in_ram_bytes"):
        print(f"code RAM: {m['code_in_ram_bytes']:,} B of kernel code copied into the code RAM at startup (--no-code-in-ram: in flash)")
    if m.get("code"):
        from edgec.targets.code_size import summary_line
        print(summary_line(m["code"]))
    return 0


def _exports_a_build(args) -> bool:
    from edgec.export_build import is_build_folder
    return args.command == "export" and is_build_folder(args.model)


def cmd_export(args) -> int:
    from edgec import api
    from edgec.quant.ptq import QuantOptions

    if _exports_a_build(args):    # the benched build as it is: nothing that would make another model
        changed = [flag for flag, given in (("--calib", args.calib), ("--name", args.name),
                                            ("--ram-budget", args.ram_budget), ("--optimize", args.optimize != "speed"),
                                            ("--io-buffers", args.io_buffers != "arena"),
                                            ("quantization options", _quant_options(args) != QuantOptions()))
                   if given]
        if changed:
            raise EdgecError(f"{args.model} is a build: its export is the model as it was built and benched, so "
                             f"{', '.join(changed)} cannot apply; drop them, or export the model file with them")
        m = api.export_build(args.model, args.format, args.output, log=_log, board=args.board,
                             lib_version=args.lib_version, maintainer=args.maintainer, url=args.url)
        print(f"exported the build {args.model} ({m['model']}, model hash {m['model_hash']}) as a {m['format']} "
              f"library in {args.output}, compiled as benched: {' '.join(m['compile_flags'])}")
        return 0
    m = api.export(args.model, args.calib, args.board, args.format, args.output, log=_log,
                   options=_quant_options(args), name=args.name, lib_version=args.lib_version,
                   maintainer=args.maintainer, url=args.url, ram_budget=args.ram_budget, optimize=args.optimize,
                   settings=args.env, io_buffers=args.io_buffers)
    print(f"exported {m['model']} for {m['board']} as a {m['format']} library in {args.output}: "
          f"arena {m['arena_bytes']:,} B, weights {m['weights_bytes']:,} B, example {m['example']}")
    return 0


def cmd_bench(args) -> int:
    import time
    from edgec import api
    from edgec.bench import gates as bench_gates
    from edgec.bench import report

    outdirs, args.outdir = args.outdir, args.outdir[0]
    if args.stream:
        return _bench_stream(args, api)
    if not args.data:
        raise EdgecError("edgec bench needs --data FILE.npz (or --stream WAV for a sww01 build)")
    gates = bench_gates.parse_gates(args.min_accuracy, args.min_agreement, args.max_latency, args.max_ram)
    for outdir in outdirs:
        bench_gates.check_measurable(gates, outdir, args.data, junit=args.junit)
    to_stdout = args.json == "-"
    json_file = outputs.check_output_file(args.json, (args.data,)) if args.json and not to_stdout else None
    if json_file is not None and args.junit and outputs._resolved(args.json) == outputs._resolved(args.junit):
        raise EdgecError(f"--json and --junit name the same file {args.junit}; give two file names")
    if cli_farm.is_matrix(args, outdirs):
        return cli_farm.cmd_bench_matrix(args, outdirs, _log, gates)
    report_dir = None if args.no_report else (args.report or args.outdir)
    t0 = time.monotonic()
    r = api.bench(args.outdir, args.data, limit=args.limit, port=args.port, log=_log, profile=args.profile,
                  compare_layers=args.compare_layers, score=args.score, report_dir=report_dir,
                  reset_state=args.reset_state,
                  flash=not args.no_flash, probe=args.probe, gdb=args.gdb, drive=args.drive,
                  dataset_in_flash=args.dataset_in_flash, max_chunk=args.chunk, settings=args.env, gates=gates)
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
        print(f"junit: {bench_gates.write_junit(args.junit, r, outcomes, time.monotonic() - t0, (args.data,))}",
              file=out)
    for o in outcomes:
        print(o.line, file=out if o.passed else sys.stderr)
    if to_stdout:
        print(json.dumps(r, indent=1))
    return 1 if bench_gates.failures(outcomes) else 0


def _bench_stream(args, api) -> int:
    r = api.stream_bench(args.outdir, args.stream, args.windows, port=args.port, seconds=args.seconds, log=_log)
    print(f"streamed {r['seconds']:.2f} s ({r['host']['hops']} hops of 32 ms), {len(r['windows'])} labelled windows")
    for side in ("device", "host"):
        if side in r:
            s = r[side]
            print(f"{side:6}: {len(s['detections_ms'])} detecting hops; {s['true_positives']} true positives, "
                  f"{s['false_negatives']} false negatives, {s['false_positives']} false positives")
    if "bit_exact" in r:
        print("device = host reference bit for bit (features and outputs of every hop)" if r["bit_exact"] else
              f"device differs from the host reference from hop {r['first_differing_hop']}")
    if "cycles_estimate" in r:
        c = r["cycles_estimate"]
        print(f"per hop (cycle estimate): front end {c['front_end']:,.0f} + model {c['model']:,.0f} = "
              f"{c['total']:,.0f} cycles, {100 * c['share_of_budget']:.1f}% of the 32 ms hop at "
              f"{c['budget_board']}'s clock ({c['budget']:,.0f} cycles)")
    if args.json:
        outputs.write_json(outputs.check_output_file(args.json, (args.stream,)), r)
    return 0 if r.get("bit_exact", True) else 1


def cmd_flash(args) -> int:
    from edgec import api

    if cli_farm.places_of(args, [args.outdir]):
        return cli_farm.cmd_flash_place(args, _log)
    hello = api.flash(args.outdir, port=args.port, log=_log, probe=args.probe, gdb=args.gdb, drive=args.drive,
                      settings=args.env)
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

    lines, code = doctor.report(args.env)
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

    if args.board is not None:
        return _inspect_board(args)
    if args.ram_budget is not None:
        raise EdgecError("edgec inspect: --ram-budget is read with --board only (it plans the model for the "
                         "board); add --board BOARD")
    info = _unsized(args.model) if args.calib is None else None        # a dynamic axis nothing sizes
    info = info or api.inspect_model(args.model, settings=args.env, calib=args.calib)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0 if not info["problems"] else 1
    ins, outs = info.get("inputs", [info["input"]]), info.get("outputs", [info["output"]])
    print(f"{info['model']}: opset {info['opset']}, input{'s' * (len(ins) > 1)} "
          + ", ".join(f"{v['name']} {v['shape']}" for v in ins) + f", output{'s' * (len(outs) > 1)} "
          + ", ".join(f"{v['name']} {v['shape']}" for v in outs) + f", {info['parameters']:,} parameters")
    print(f"{'node':40} {'op':20} {'input shape':22} {'output shape':18} {'params':>9}  supported")
    for n in info["nodes"]:
        status = "yes" if n["supported"] else ("NO" if n["problem"]["kind"] == "unsupported" else "LIMIT")
        print(f"{n['name'][:40]:40} {n['op']:20} {str(n['inputs'][0] if n['inputs'] else '')[:22]:22} "
              f"{str(n['outputs'][0] if n['outputs'] else '')[:18]:18} {n['params']:>9,}  {status}")
    for p in info["problems"]:
        print(f"{'unsupported' if p['kind'] == 'unsupported' else 'limit'}: {p['op']} ({p['node']}, "
              f"opset {p['opset']}): {p['what']}")
    if "qonnx" in info.get("qdq", {}):
        q = info["qdq"]["qonnx"]
        print(f"QONNX model: the quantization of {q['activations']} activations and {q['constants']} constants "
              "comes from its Quant nodes (shown as the Clips they become)")
    elif "qdq" in info:
        print(f"QDQ model: the quantization of {info['qdq']['activations']} activations and "
              f"{info['qdq']['weights']} constants comes from its QuantizeLinear/DequantizeLinear nodes "
              "(shown as the Clips they become)")
    if info.get("note"):
        print(f"note: {info['note']}")
        return 0 if not info["problems"] else 1
    arena = info["arena_bytes_estimate"]
    print(f"{info['macs']:,} MACs, {info['canonical_ops']} ops after canonicalization, arena estimate "
          + (f"{arena:,} bytes" if arena is not None else "unknown")
          + (f" (of the nodes edgec can build; {len(info['problems'])} it cannot)" if info["problems"] else ""))
    return 0 if not info["problems"] else 1


def _unsized(path: str):
    """`edgec inspect` of an .onnx with a dynamic non-batch input axis and no --calib: what can be said unsized."""
    from pathlib import Path

    import onnx

    from edgec.frontend import input_shapes

    if not str(path).endswith(".onnx") or not Path(path).is_file():
        return None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        return None                  # (api.inspect_model says what is wrong with the file)
    return input_shapes.unsized(model, path)


def _inspect_board(args) -> int:
    from edgec import api, board_fit

    info = api.inspect_board(args.model, args.board, args.calib, args.optimize, log=_log, settings=args.env,
                             ram_budget=args.ram_budget)
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print("\n".join(board_fit.lines(info)))
    return 0 if info["fits"] else 1


def cmd_packages(args) -> int:
    from edgec import api

    if args.action == "install":
        done = api.packages_install(args.bundle, log=_log, settings=args.env)
        print(f"installed {len(done['installed'])}, already there {len(done['kept'])}: "
              + ", ".join(done["installed"] + done["kept"]))
    elif args.action == "bundle":
        packed = api.packages_bundle(args.board, args.output, args.core, log=_log, settings=args.env)
        print(f"wrote {args.output}: {', '.join(packed)}")
    else:
        info = api.packages_status(settings=args.env)
        if args.json:
            print(json.dumps(info, indent=1))
            return 0
        print(f"PlatformIO core: {info['core_dir']}")
        for kind in ("platforms", "packages"):
            print(f"{kind}: " + (", ".join(f"{k} {v}" for k, v in info[kind].items()) or "none"))
        for board, lacking in info["boards"].items():
            print(f"  {board:24s} " + ("builds offline" if not lacking else "needs " + ", ".join(lacking)))
    return 0


def parser():
    """The argument parser (edgec/cli_parser.py) wired to the commands below."""
    return cli_parser.parser({name[len("cmd_"):]: fn for name, fn in globals().items() if name.startswith("cmd_")})


def _stdout_closed() -> int:
    """The reader of our output went away (`edgec inspect ... | head`): stop quietly, as a shell tool does, with
    128 + SIGPIPE; stdout goes to /dev/null so that the interpreter's final flush does not complain again."""
    import os
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):    # no file descriptor behind stdout (an embedding caller's stream)
        pass
    return 141


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    previous = children.signals_raise()   # SIGTERM/SIGHUP clean up like Ctrl-C: no child, no staging folder left
    try:
        if args.command in ENVIRONMENT:
            from edgec.settings import Settings
            args.env = Settings.from_environment()
        if args.command in CONFIGURED:
            from edgec import config
            args.settings = config.apply(args, parser, argv)
            if args.command in ("build", "export") and not args.board and not _exports_a_build(args):
                raise EdgecError(f"no board: give --board (see `edgec boards`) or set board in an edgec.toml or "
                                 f"pyproject.toml [tool.edgec] beside {args.model}")
        status = args.func(args)
        sys.stdout.flush()     # here, not at exit: a closed pipe (`edgec inspect ... | head`) is handled below
        return status
    except BrokenPipeError:
        return _stdout_closed()
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
