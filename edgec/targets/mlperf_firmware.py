"""What an MLPerf Tiny firmware (`edgec build --protocol mlperf`) is configured with: the benchmark's
official input encoding and result format (edgec.targets.mlperf_encoding), the mode (performance:
m-lap-us timestamps; energy: the EEMBC timestamp pin and the energy monitor's 9,600 baud) and the baud
rate (option, else the board profile's [mlperf] baud, else its serial.baud)."""
from __future__ import annotations

from edgec.targets import mlperf_encoding as enc
from edgec.errors import EdgecError
from edgec.ir import Graph
from edgec.targets.boards import Board

MODES = ("performance", "energy")
ENERGY_BAUD = 9600      # the EEMBC energy monitor's UART to the DUT


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
    channels = enc.chw_channels(graph.input_onnx_shape) if encoding.dtype in ("int8", "uint8") else 0
    return {
        "mode": mode, "energy": energy, "timestamp_pin": pin or ("emulated stub" if energy else ""),
        "baud": baud or (ENERGY_BAUD if energy else board.mlperf_baud or board.serial_baud),
        "encoding": encoding.dtype, "encoding_code": enc.ENCODING_CODES[encoding.dtype],
        "encoding_scale": "%.9e" % encoding.scale, "encoding_zero_point": encoding.zero_point,
        "results": encoding.results, "results_code": enc.FORMAT_CODES[encoding.results],
        "db_bytes": t_in.size * encoding.item_bytes(), "chw_channels": channels,
    }
