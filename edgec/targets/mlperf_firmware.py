"""What an MLPerf Tiny firmware (`edgec build --protocol mlperf`) is configured with: the benchmark's
official input encoding and result format (edgec.targets.mlperf_encoding), the mode (performance:
m-lap-us timestamps; energy: the EEMBC timestamp pin and the energy monitor's 9,600 baud) and the baud
rate (option, else the board profile's [mlperf] baud, else its serial.baud)."""
from __future__ import annotations

from edgec.targets import audio_frontend as af
from edgec.targets import mlperf_encoding as enc
from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.targets.boards import Board

MODES = ("performance", "energy")
ENERGY_BAUD = 9600      # the EEMBC energy monitor's UART to the DUT
STREAM_MODEL = "sww01"  # MLPerf Tiny's streaming wake word: audio hops in, the front end on the device


def check_mode(board: Board, mode: str, baud: int | None) -> None:
    """The checks that need no model (run before calibrating): mode, baud, a timestamp pin for energy."""
    if mode not in MODES:
        raise EdgecError(f"MLPerf mode '{mode}' is not known: choose performance or energy")
    if baud is not None and not 300 <= baud <= 12_000_000:
        raise EdgecError(f"baud rate {baud} is out of range: give 300 to 12000000 (e.g. 115200)")
    energy = mode == "energy"
    pin = board.mlperf_timestamp_pin
    if energy and board.framework and not pin:
        raise EdgecError(f"board '{board.name}' has no MLPerf timestamp pin: add [mlperf] timestamp_pin = \"D7\" "
                         f"(the GPIO wired to the energy monitor) to {board.path}")
    if energy and not board.framework and not (board.emulated and board.arch == "arm"):
        raise EdgecError(f"board '{board.name}' cannot run MLPerf energy mode (no timestamp pin); use a real "
                         "board with [mlperf] timestamp_pin or an emulated Arm board (its pin is a stub)")


def settings(board: Board, graph: Graph, mlperf_model: str, mode: str = "performance",
             baud: int | None = None) -> dict:
    """The template values of mlperf_main.c.j2 (and the build report's `mlperf` entry)."""
    check_mode(board, mode, baud)
    energy = mode == "energy"
    pin = board.mlperf_timestamp_pin
    encoding = enc.encoding_for(mlperf_model)
    t_in, t_out = graph.tensors[graph.input], graph.tensors[graph.output]
    if t_in.dtype != "int8" or t_out.dtype != "int8":
        raise EdgecError(f"--protocol mlperf needs an int8 model input and output; '{graph.name}' has "
                         f"{t_in.dtype} -> {t_out.dtype}: build it without int16 activations")
    if encoding.results == "score" and t_out.size != t_in.size:
        raise EdgecError(f"MLPerf model '{mlperf_model}' scores the reconstruction of the input, but "
                         f"'{graph.name}' maps {t_in.size} values to {t_out.size}: is this the AD autoencoder?")
    stream = stream_settings(graph) if mlperf_model == STREAM_MODEL else None
    channels = enc.chw_channels(graph.input_onnx_shape) if encoding.dtype in ("int8", "uint8") else 0
    return {
        "mode": mode, "energy": energy, "timestamp_pin": pin or ("emulated stub" if energy else ""),
        "baud": baud or (ENERGY_BAUD if energy else board.mlperf_baud or board.serial_baud),
        "encoding": encoding.dtype, "encoding_code": enc.ENCODING_CODES[encoding.dtype],
        "encoding_scale": "%.9e" % encoding.scale, "encoding_zero_point": encoding.zero_point,
        "results": encoding.results, "results_code": enc.FORMAT_CODES[encoding.results],
        "db_bytes": max(t_in.size * encoding.item_bytes(), 2 * af.HOP if stream else 0), "chw_channels": channels,
        # the runner's streaming path sends commands of 1,028 characters (stream_wav_uart.py); others 80
        "cmd_bytes": 1100 if stream else 80, "stream": stream,
    }


def stream_settings(graph: Graph) -> dict:
    """The streaming wake word's front end for this model: its input must be FRAMES x MELS int8 features."""
    t_in = graph.tensors[graph.input]
    if t_in.size != af.FRAMES * af.MELS or t_in.zero_point != -128:
        raise EdgecError(f"--mlperf-model {STREAM_MODEL} streams {af.FRAMES} frames of {af.MELS} log-mel features into "
                         f"an int8 input with zero point -128; '{graph.name}' takes {t_in.size} values (zero point "
                         f"{t_in.zero_point}): is this the MLPerf Tiny streaming wake-word model?")
    return {"hop_samples": af.HOP, "mels": af.MELS, "frames": af.FRAMES, "rate": af.RATE,
            "input_scale": float(t_in.scale)}
