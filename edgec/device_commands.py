"""edgec's API commands that talk to a board (edgec/api.py exports them): write a build's firmware into it
(flash_step, flash) and run data through it (bench, stream_bench, the MLPerf Tiny runner's mlperf)."""
from __future__ import annotations

from pathlib import Path

from edgec.array_data import accepts_arrays
from edgec.errors import EdgecError
from edgec.pipeline import Log
from edgec.pipeline import quiet as _quiet
from edgec.settings import Settings
from edgec.targets.build_folder import check_hello, load_build


def flash_step(outdir: str | Path, probe: str | None = None, port: str | None = None, gdb: str | None = None,
               drive: str | Path | None = None, log: Log = _quiet, settings: Settings | None = None):
    """Write a build's firmware into its board before talking to it (edgec/device/flash.py).
    Returns (the flash record: a dict filled once the firmware is written, gdb_load for open_device or None).
    An emulated board with no probe asked for starts its emulator with the firmware (nothing to write);
    with --probe gdb and no --gdb, the emulator is started halted and the firmware loaded through its stub."""
    from edgec.device import flash as flashing

    _, board, firmware = load_build(outdir)
    probe = probe or board.flash.probe
    pio_core = (settings or Settings.from_environment()).platformio_home
    record: dict = {}
    if probe == "emulator" and board.flash.probe == "emulator":
        return record, None

    def write(address: str | None = None) -> None:
        result = flashing.flash_firmware(board, firmware, firmware.parent, probe, port=port, gdb=address or gdb,
                                         drive=Path(drive) if drive else None, log=log, pio_core=pio_core)
        record.update(result.to_json())

    if board.flash.probe == "emulator" and probe == "gdb" and gdb is None and port in (None, "auto"):
        return record, write            # the emulator started halted, loaded through its own GDB stub
    if board.flash.probe == "emulator" and port in (None, "auto"):
        raise EdgecError(f"board '{board.name}' is emulated: with --probe {probe} give the serial port of the "
                         "emulator you started (--port socket://HOST:PORT), or leave out --gdb to let edgec start it")
    write()
    return record, None


def flash(outdir: str | Path, port: str | None = None, log: Log = _quiet, probe: str | None = None,
          gdb: str | None = None, drive: str | Path | None = None, settings: Settings | None = None) -> dict:
    """Write the build's firmware into its board (the profile's probe, or `probe`), then check it answers with
    the right model; the answer carries `flashed` (tool, bytes, verified, message) when something was written."""
    from edgec.device.device import open_device

    report, board, firmware = load_build(outdir)
    record, gdb_load = flash_step(outdir, probe, port, gdb, drive, log, settings)
    if report.get("protocol") == "mlperf":
        from edgec.device.mlperf import open_mlperf
        if gdb_load is not None:
            raise EdgecError("an MLPerf Tiny firmware is loaded through a GDB server you start (--gdb HOST:PORT "
                             "--port ...)")
        with open_mlperf(board, firmware, port, (report.get("mlperf") or {}).get("baud")) as dut:
            info = {"protocol": "mlperf", "board": board.name, "name": dut.client.name(), **dut.client.profile()}
        log(f"{board.name}: MLPerf Tiny firmware answers as {info.get('name')}, model {info.get('model')}")
        return {**info, "flashed": record} if record else info
    with open_device(board, firmware, port, gdb_load=gdb_load) as dev:
        hello = dev.link.hello()
        check_hello(hello, report, outdir)
    log(f"{board.name}: firmware answers as model {hello.get('model')} ({hello.get('model_hash')})")
    return {**hello, "flashed": record} if record else hello


@accepts_arrays("data_path")
def bench(outdir: str | Path, data_path: str | Path, limit: int | None = None, port: str | None = None,
          log: Log = _quiet, profile: bool = False, compare_layers: bool = False, score: str | None = None,
          report_dir: str | Path | None = None, flash: bool = True, probe: str | None = None,
          gdb: str | None = None, drive: str | Path | None = None, dataset_in_flash: bool = False,
          units: int = 1, max_chunk: int | None = None, settings: Settings | None = None, gates=(),
          reset_state: bool = False) -> dict:
    """Run the test data on the device: accuracy or error, agreement with the INT8 reference, latency,
    memory and link statistics; with profile, time per layer; with compare_layers (and automatically
    when a device output differs from the reference) the first layer whose output differs.
    The firmware is written into the board first (see flash_step) unless flash is False.
    With report_dir, also write bench-report.json and report.html there (edgec/bench/runner.py, edgec/bench/report.py).
    dataset_in_flash: the inputs are compiled into firmware images (max_chunk per image, default as many as fit)
    run on `units` devices in parallel, each image flashed/started per chunk (edgec/bench/dataset_flash.py).
    settings: the environment's (edgec/settings.py), read here when not given. gates: edgec/bench/gates.py's
    parsed --min-accuracy ... --max-ram, evaluated into result["gates"] (and the report). reset_state: a model
    with state (an LSTM, an SVDF, a signal front end) starts every sample from its reset state instead of carrying
    it from the sample before (the default: the samples are one stream, as TFLite Micro carries it).
    """
    from edgec.bench import runner as bench_stage
    from edgec.bench import report as report_stage

    if report_dir is not None:
        report_stage.check_report_dir(Path(report_dir))     # before the bench, not after it
    settings = settings or Settings.from_environment()
    build_id = _folder_id(outdir)
    flash = flash and not dataset_in_flash          # dataset images are written chunk by chunk
    record, gdb_load = flash_step(outdir, probe, port, gdb, drive, log, settings) if flash else ({}, None)
    from edgec.bench import chained
    if chained.is_chained(outdir):      # a front end and a classifier: raw clips in (edgec/bench/chained.py)
        if dataset_in_flash or compare_layers or score:
            raise EdgecError(f"{outdir} chains a front end and a classifier: bench it over the link, without "
                             "--dataset-in-flash, --compare-layers or --score")
        result = chained.run(outdir, data_path, limit, port, profile, log, gdb_load, settings=settings)
    else:
        result = bench_stage.run(outdir, data_path, limit=limit, port=port, profile=profile,
                                 compare_layers=compare_layers, score=score, log=log, gdb_load=gdb_load,
                                 dataset_in_flash=dataset_in_flash, units=units, max_chunk=max_chunk,
                                 settings=settings, reset_state=reset_state)
    result["flashed"] = record or None
    if gates:       # the CI gates' results go into the report (and the JSON) as the CLI prints them
        from edgec.bench import gates as bench_gates
        result["gates"] = [{"gate": o.gate.name, "limit": o.gate.text, "measured": o.measured, "passed": o.passed,
                            "line": o.line} for o in bench_gates.evaluate(gates, result)]
    if report_dir is not None and _folder_id(outdir) != build_id:
        # rebuilt meanwhile (edgec build replaces the folder as a whole): this report belongs to the old build
        log(f"warning: {outdir} was rebuilt during the bench; no report written (bench the new build again)")
        result["report_files"] = []
    elif report_dir is not None:
        result["report_files"] = [str(p) for p in report_stage.write(result, Path(outdir), Path(report_dir))]
    return result


def _folder_id(folder) -> tuple[int, int] | None:
    try:
        st = Path(folder).stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def stream_bench(outdir: str | Path, wav: str | Path, windows: str | Path | None = None, port: str | None = None,
                 seconds: float | None = None, log: Log = _quiet) -> dict:
    """Stream a long 16 kHz WAV through a `--mlperf-model sww01` build hop by hop, on its board and on the host
    reference: detections, false positives and negatives against the labelled windows (the MLPerf runner's
    sww01 truth JSON), bit-exactness, per-hop cost (edgec/bench/stream.py)."""
    from edgec.bench import stream

    return stream.run(outdir, wav, windows, port, seconds, log=log)


def mlperf(outdir: str | Path, dataset: str | Path, mode: str = "accuracy", results_dir: str | Path | None = None,
           port: str | None = None, window_seconds: float = 10.0, limit: int | None = None, log: Log = _quiet) -> dict:
    """The MLPerf Tiny runner's accuracy or performance flow on a --protocol mlperf build, results in the
    runner's results.txt format (edgec/bench/mlperf_run.py)."""
    from edgec.bench import mlperf_run

    return mlperf_run.run(outdir, dataset, mode, results_dir, port, window_seconds, limit=limit, log=log)
