"""edgec's command-line arguments: every command's options, the validating types in argtypes.py (edgec/cli.py
runs the commands)."""
from __future__ import annotations

import argparse

from edgec import __version__
from edgec import argtypes, cli_farm

BOARD_HELP = ("board name (see `edgec boards`) or a board .toml file (required unless the project settings give "
              "one: `edgec config`)")


def add_quant_options(p: argparse.ArgumentParser) -> None:
    from edgec.quant.ptq import ALL_METHODS

    p.add_argument("--method", default=None, choices=ALL_METHODS,
                   help="activation range estimation (default: minmax, or the method the default recipe measures "
                        "better on held-out calibration samples; auto-model picks the method whose INT8 "
                        "output is closest to float on held-out calibration samples, auto then refines it tensor "
                        "by tensor)")
    p.add_argument("--percentile", type=argtypes.percent, default=99.99, help="percentile of --method percentile (99.99)")
    p.add_argument("--per-tensor", action="store_true", help="one weight scale per layer instead of per channel")
    p.add_argument("--bias-correction", nargs="?", const="quantized", default=None,
                   choices=["quantized", "float", "weights", "off"],
                   help="(default: on when it measurably helps on held-out calibration samples; 'off': never) remove the mean output shift quantization causes in every layer, measured on the "
                        "calibration set with the inputs the quantized layer really sees (default) or, with "
                        "'float', the shift of the weights' rounding alone on float inputs, or, with 'weights', "
                        "the shift of the layer's own weights' rounding on the inputs the quantized layer sees")
    p.add_argument("--equalize", action=argparse.BooleanOptionalAction, default=None,
                   help="cross-layer equalization of conv pairs (also through ReLU and max/average pooling); "
                        "default: on when it measurably helps on held-out calibration samples")
    p.add_argument("--saturation", action=argparse.BooleanOptionalAction, default=None,
                   help="cut the input range of a saturating activation (Tanh, Sigmoid...) to where its function "
                        "moves; default: on when it measurably helps on held-out calibration samples")
    p.add_argument("--unseen-ranges", action=argparse.BooleanOptionalAction, default=None,
                   help="a model the default recipe cannot judge (several inputs or outputs, a stateful model, few "
                        "calibration samples): widen each minmax end to where samples not seen likely pass it; "
                        "--no-unseen-ranges keeps the observed extremes; default: widened when it measurably helps "
                        "on the calibration samples, cross-validated (docs/quantization.md)")
    p.add_argument("--requantize", choices=("tflite", "once"), default="tflite",
                   help="how an int8 layer of a float model rounds its int32 sum to its output: 'tflite' "
                        "(default: TFLite's multiplier and right shift, rounded twice where the shift is 1..10 "
                        "bits) or 'once' (to the nearest level, as ONNX Runtime's INT8 and a QDQ file's layers do)")
    p.add_argument("--no-cache", action="store_true", help="recalibrate even if the statistics are cached")
    p.add_argument("--sensitivity-samples", type=argtypes.count(0), default=16,
                   help="calibration samples the per-layer sensitivity report uses (0: no report)")
    p.add_argument("--auto-seconds", type=argtypes.seconds, default=20.0,
                   help="time budget of --method auto's per-tensor search (default 20 s)")
    p.add_argument("--int16", action="append", metavar="NODE[,NODE...]",
                   help="run these layers (ONNX node names, as the sensitivity table shows them) with int16 "
                        "activations (TFLite 16x8); name a layer and the layer reading it to keep its output int16")
    p.add_argument("--int16-recurrence", dest="int16_recurrence", action="store_const", const=True, default=None,
                   help="run a float model's LSTMs and GRUs and the layers reading their sequence with int16 "
                        "activations (default: only where that gains over 0.5 dB on the calibration set; "
                        "docs/quantization.md: up to twice the sequence's RAM)")
    p.add_argument("--int8-recurrence", dest="int16_recurrence", action="store_const", const=False,
                   help="keep a float model's LSTMs and GRUs int8 (their sequence's RAM as small as it gets)")
    p.add_argument("--int16-tail", dest="int16_tail", action="store_const", const=True, default=None,
                   help="run a float model's output L2 normalization, LogSoftmax or smooth table (Sigmoid, Tanh, "
                        "Softplus, a square...) and the layer feeding it with int16 activations, the output an "
                        "int16 port (default: only where that gains over 0.5 dB on the calibration set; "
                        "docs/quantization.md)")
    p.add_argument("--int8-tail", dest="int16_tail", action="store_const", const=False,
                   help="keep a float model's output layers int8 (an int8 output port)")
    p.add_argument("--int16-attention", dest="int16_attention", action="store_const", const=True, default=None,
                   help="run a float transformer's rows (its LayerNorms, attention Softmaxes and MatMuls, and the "
                        "layers between them) with int16 activations (default: only where that gains over 6.02 dB, "
                        "one bit, on the calibration set; docs/quantization.md: up to twice their RAM)")
    p.add_argument("--int8-attention", dest="int16_attention", action="store_const", const=False,
                   help="keep a float transformer's rows int8 (their activations' RAM as small as it gets)")
    p.add_argument("--weights", choices=("int8", "int4"), default="int8",
                   help="weight precision: int4 packs every conv, depthwise, fully connected and LSTM/GRU layer's "
                        "weights two per byte (symmetric per channel, [-7, 7])")
    p.add_argument("--rounding", choices=("nearest", "gptq"), default=None,
                   help="weight rounding: gptq pushes each weight's rounding error onto the weights not yet rounded, "
                        "learned from the calibration data (default for int4 weights: gptq; for int8: nearest)")
    p.add_argument("--int4", action="append", metavar="NODE[,NODE...]",
                   help="int4 weights for these layers only (ONNX node names, as the sensitivity table shows them)")
    p.add_argument("--max-accuracy-drop", type=argtypes.finite, metavar="PTS",
                   help="choose int4 weights and int16 activations layer by layer: the smallest flash whose top-1 "
                        "predictions change on at most PTS %% of the samples against float (on --val, else on the "
                        "calibration set's held-out split; no labels needed)")
    p.add_argument("--min-sqnr", type=argtypes.finite, metavar="DB",
                   help="the budget of a model that is not a classifier: choose int4 weights and int16 activations "
                        "layer by layer, the smallest flash whose output SQNR against float stays at least DB dB")
    p.add_argument("--val", metavar="DATA.npz", help="samples (x, labels y optional) --max-accuracy-drop or --min-sqnr "
                                                     "is measured on, kept apart from calibration")
    p.add_argument("--state", action="append", metavar="OUTPUT=INPUT[,...]",
                   help="a stateful model: this output goes back into this input; both get one scale and zero "
                        "point (the union of their calibrated ranges), so the bytes can be copied as they are")
    p.add_argument("--input-layout", choices=("nchw", "nhwc"),
                   help="nhwc: an NCHW model's C input (NAME_input, the bench's link) takes channels-last data, so "
                        "the device runs no input transpose; data files stay in the model's own layout (default: "
                        "the model's)")


def add_gate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CI gates (a failed gate prints one line and exits 1; see edgec/bench/gates.py)")
    g.add_argument("--min-accuracy", metavar="FRACTION", help="device top-1 accuracy at least this (0.9 or 90%%)")
    g.add_argument("--min-agreement", metavar="FRACTION",
                   help="fraction of samples bit-identical to the INT8 reference at least this (1.0: all)")
    g.add_argument("--max-latency", metavar="LIMIT", help="median latency at most this: a number in the board's "
                   "unit (cycles, instructions, ns) or a time (5ms, 800us)")
    g.add_argument("--max-ram", metavar="BYTES",
                   help="firmware RAM (.data + .bss + reserved stack, as the ELF allocates it) at most this (65536, 64KiB)")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: a test case per gate and per metric")


def add_model_args(p) -> None:
    p.add_argument("model", help="float ONNX model, or a fully quantized INT8 .tflite model")
    p.add_argument("--calib", help=".npz with x (N, *input shape without batch); not for a quantized .tflite")
    p.add_argument("--board", required=p.prog.endswith(" tune"), help=BOARD_HELP)


def add_optimize(p) -> None:
    p.add_argument("--optimize", choices=["speed", "size"], default="speed",
                   help="speed (default): per-layer specialized kernels (more flash for repacked weights); "
                        "size: the generic kernels")


def add_probe_options(p) -> None:
    from edgec.targets.boards import PROBES

    p.add_argument("--probe", choices=[k for k in PROBES if k != "emulator"],
                   help="how to write the firmware (default: the board profile's [flash] probe): "
                        + "; ".join(f"{k}: {v}" for k, v in PROBES.items() if k != "emulator"))
    p.add_argument("--gdb", metavar="HOST:PORT", help="the GDB server for --probe gdb (default localhost:3333; an "
                   "emulated board without it: edgec starts the emulator halted and loads through its GDB stub)")
    p.add_argument("--drive", metavar="DIR", help="the RP2040's BOOTSEL drive for --probe uf2 (default: looked for)")


class Parser(argparse.ArgumentParser):
    """argparse with edgec's one-line errors (the usage stays behind --help)."""

    def error(self, message: str):
        self.exit(2, f"edgec: error: {' '.join(message.split())} (see `{self.prog} --help`)\n")


def add_io_buffers(p) -> None:
    p.add_argument("--io-buffers", choices=("arena", "caller"), default="arena",
                   help="where the model's inputs and outputs live: in the arena (an output may share bytes with "
                        "an input; the header says which) or in buffers the caller owns (the C API's "
                        "NAME_ctx_set_input/_output; the arena shrinks by them, the next input never touches "
                        "the last output)")


def add_ram_budget(p, prefix: str = "") -> None:
    p.add_argument("--ram-budget", type=argtypes.count(1), metavar="BYTES",
                   help=prefix + "RAM the whole firmware may use (arena + static RAM + stack): edgec picks the fastest "
                        "schedule that fits (patch-based execution of the early layers if needed) or says the "
                        "least RAM it can reach")


def parser(commands: dict) -> argparse.ArgumentParser:
    """edgec's command line; `commands` maps each command to its function (edgec/cli.py's cmd_*)."""
    p = Parser(prog="edgec", description="Float ONNX model + calibration set -> INT8 firmware, "
                                "built, flashed and benchmarked on a microcontroller board.")
    p.add_argument("--version", action="version", version=f"edgec {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="quantize a model and build its firmware")
    add_model_args(b)
    b.add_argument("-o", "--output", help="build folder (default build/<model>-<board>)")
    add_quant_options(b)
    add_ram_budget(b)
    add_io_buffers(b)
    b.add_argument("--weights-in-ram", action="store_true",
                   help="copy the weight tensors and their biases / requantization records from flash into RAM at "
                        "startup (they count as RAM): on a part whose flash has wait states the kernels read them at "
                        "SRAM speed")
    b.add_argument("--code-in-ram", action=argparse.BooleanOptionalAction, default=None,
                   help="run the runtime's kernels from the board's code RAM (a profile's [[memory]] kind = "
                        "\"code-ram\", e.g. the NUCLEO-L4R5ZI's SRAM2 at 0x10000000), copied there at startup "
                        "(default: so where the board also has flash wait states and the code and RAM fit, else in "
                        "flash with a line saying why; --no-code-in-ram: always in flash)")
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
    add_optimize(b)
    b.add_argument("--tune", action="store_true", help="measure the kernel variants of layers the tuning log has "
                   "no record for (edgec tune) first")
    b.add_argument("--tuning-log", help="the tuning log (default ~/.cache/edgec/tuning.json)")
    b.add_argument("--frontend", metavar="FRONTEND.tflite", help="an audio front end run before the model (e.g. TFLite "
                   "Micro's micro_speech preprocessor): one firmware from raw audio to scores; --calib then holds "
                   "raw clips (x: [N, samples] int16 values) (docs/audio.md)")
    b.add_argument("--frontend-hop", type=int, metavar="SAMPLES", help="with --frontend: samples between windows "
                   "(default: the clip length spread evenly over the model's frames)")
    b.add_argument("--arena-guard", action="store_true",
                   help="debug build: canaries around the arena and every buffer, checked after every layer; "
                        "a layer writing outside its buffer stops the run and the bench names it")
    b.set_defaults(func=commands["build"])

    m = sub.add_parser("mlperf", help="run the MLPerf Tiny runner's accuracy or performance flow on a "
                       "--protocol mlperf build")
    m.add_argument("build", help="build folder (edgec build --protocol mlperf --mlperf-model kws01|vww01|ic01|ad01)")
    m.add_argument("--dataset", required=True, help="folder with <model>/y_labels.csv and its files (the runner's "
                   "layout, inputs in the official encodings)")
    m.add_argument("--mode", choices=["accuracy", "performance"], default="accuracy")
    m.add_argument("--results", help="folder for <model>/<mode>/results.txt and results.json "
                   "(default BUILD/mlperf-results)")
    m.add_argument("--port", help="serial port of a real board (emulated boards are started by edgec)")
    m.add_argument("--window-seconds", type=argtypes.positive_seconds, default=10.0,
                   help="performance: each window runs long enough to last this long on the board (rules: 10)")
    m.add_argument("--limit", type=argtypes.count(1), help="accuracy: only the first N files")
    m.set_defaults(func=commands["mlperf"])

    e = sub.add_parser("export", help="write a quantized model, or a benched build exactly, as a library for your "
                                      "own firmware")
    add_model_args(e)
    next(a for a in e._actions if a.dest == "model").help = (
        "float ONNX model, a fully quantized INT8 .tflite model, or a build folder (edgec build -o DIR): its model/ "
        "byte for byte with the compile flags it was benched with (no --calib, --name, quantization options)")
    e.add_argument("--format", required=True, choices=["c", "platformio", "arduino", "cmake"],
                   help="library layout: plain C files, PlatformIO library, Arduino library, CMake/Zephyr module")
    e.add_argument("-o", "--output", required=True, help="folder to write the library into")
    add_optimize(e)
    e.add_argument("--name", help="C prefix of every symbol and the library's name (default: from the model file)")
    e.add_argument("--lib-version", help="the library's version in its manifests (default: edgec's version)")
    e.add_argument("--maintainer", help="library maintainer, 'Name <email>' (library.properties, library.json)")
    e.add_argument("--url", help="the library's home page (library.properties, library.json)")
    add_quant_options(e)
    add_ram_budget(e)
    add_io_buffers(e)
    e.set_defaults(func=commands["export"])

    t = sub.add_parser("tune", help="time every layer's kernel variants on the board; the fastest bit-exact ones "
                       "go into the tuning log that later builds for the board use")
    add_model_args(t)
    t.add_argument("--data", help=".npz with x to time the layers on (default: the calibration set)")
    t.add_argument("--tuning-log", help="the tuning log to add to (default ~/.cache/edgec/tuning.json)")
    add_quant_options(t)
    t.set_defaults(func=commands["tune"])

    c = sub.add_parser("calibrate", help="calibrate and quantize a model; print where INT8 loses accuracy")
    c.add_argument("model", help="float ONNX model")
    c.add_argument("--calib", required=True, help=".npz with x (N, *input shape without batch)")
    c.add_argument("-o", "--output", help="write the quantization parameters and sensitivity to this JSON file")
    add_quant_options(c)
    c.set_defaults(func=commands["calibrate"])

    r = sub.add_parser("bench", help="run test data on the device and report accuracy and latency")
    r.add_argument("outdir", nargs="+", help="a build folder made by `edgec build` (several: a model x board "
                   "matrix run in parallel, one matrix report)")
    r.add_argument("--data", help=".npz with x (several inputs: x_<input name>) of real values, quantized with each "
                   "input's scale and zero point, and optional labels y (required unless --stream)")
    r.add_argument("--stream", metavar="WAV", help="a --mlperf-model sww01 build: stream this 16 kHz WAV hop by hop "
                   "on the device and the host reference; detections, false positives and negatives")
    r.add_argument("--windows", metavar="JSON", help="with --stream: the wake word's labelled windows (the MLPerf "
                   "runner's sww01 truth file: [{\"wav_file\": ..., \"detection_windows\": [[start_s, stop_s], ...]}])")
    r.add_argument("--seconds", type=float, help="with --stream: only the first S seconds of the WAV")
    r.add_argument("--limit", type=argtypes.count(1), help="use only the first N samples")
    r.add_argument("--port", default="auto", help="serial port of the board (default auto: a real board's port "
                   "found by its USB VID:PID; an emulated board's from the emulator)")
    r.add_argument("--json", help="also write the JSON report to this file ('-': to stdout, for CI)")
    r.add_argument("--profile", action="store_true", help="time every layer on the device (table and chart)")
    r.add_argument("--compare-layers", action="store_true",
                   help="read every layer's output back for one sample and name the first that differs from "
                        "the reference (done automatically when a device output differs)")
    r.add_argument("--reset-state", action="store_true",
                   help="a model with state (LSTM, SVDF, audio front end): reset it before every sample (samples "
                        "independent); by default the samples are one stream, the state carried as TFLite Micro does")
    r.add_argument("--score", metavar="MODULE:FUNCTION",
                   help="your own metric: a function fn(outputs, labels, inputs) -> number or dict, named as "
                        "module:function or path/to/file.py:function")
    r.add_argument("--report", metavar="DIR", help="where to write report.html and bench-report.json "
                   "(default: the build folder)")
    r.add_argument("--no-report", action="store_true", help="write neither report.html nor bench-report.json")
    r.add_argument("--no-flash", action="store_true", help="the board already runs this build: do not flash it first")
    add_probe_options(r)
    add_gate_options(r)
    cli_farm.add_bench_options(r)
    r.set_defaults(func=commands["bench"])

    f = sub.add_parser("flash", help="write a build's firmware into the board (emulated: start it) and check it answers")
    f.add_argument("outdir")
    f.add_argument("--port", default="auto", help="serial port of the board (default auto: found by its USB VID:PID)")
    add_probe_options(f)
    cli_farm.add_flash_options(f)
    f.set_defaults(func=commands["flash"])

    cf = sub.add_parser("config", help="print the settings in effect for a model and where each comes from "
                        "(command line, edgec.toml / pyproject.toml [tool.edgec], default)")
    cf.add_argument("model", nargs="?", help="the model whose folder's settings to show (default: this folder's)")
    cf.add_argument("--board", help=BOARD_HELP)
    add_quant_options(cf)
    add_gate_options(cf)
    cf.set_defaults(func=commands["config"])

    d = sub.add_parser("doctor", help="check this machine: toolchains, QEMU, PlatformIO, serial ports, Chromium")
    d.set_defaults(func=commands["doctor"])
    comp = sub.add_parser("completion", help="print a shell completion script: "
                          "`edgec completion bash > ~/.local/share/bash-completion/completions/edgec`")
    comp.add_argument("shell", choices=["bash", "zsh", "tcsh"])
    comp.set_defaults(func=commands["completion"])

    bo = sub.add_parser("boards", help="list board profiles")
    bo.add_argument("--json", action="store_true")
    bo.set_defaults(func=commands["boards"])

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
    pk.set_defaults(func=commands["packages"])

    i = sub.add_parser("inspect", help="ops, shapes, parameters, MACs and support status of a model")
    i.add_argument("model")
    i.add_argument("--json", action="store_true")
    i.add_argument("--board", help="also the arena, scratch, RAM, flash and stack of the plan `edgec build` would "
                   "choose for this board (no firmware built), and whether the model fits")
    i.add_argument("--optimize", choices=("speed", "size"), default="speed", help="with --board: as edgec build's")
    add_ram_budget(i, "with --board: the plan of edgec build --ram-budget (the stack then is the one the budget "
                      "counts, an estimate). ")
    i.add_argument("--calib", help="the size of a dynamic input axis (without --board); with --board also the "
                   "calibration data (.npz) for a float model (default: a few "
                   "seeded random samples; sizes depend on types and shapes, not on ranges)")
    i.set_defaults(func=commands["inspect"])
    return p
