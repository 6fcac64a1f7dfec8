"""Runs the MLCommons Tiny runner (../shared/mlperf-runner, unchanged) against a device at a pyserial URL:
only its device discovery (DeviceManager.scan, which looks for USB serial devices) is replaced by that URL,
as its PROVENANCE.md describes; the runner opens ports with serial.Serial(port, baud), which takes device
paths only, so serial.Serial is pointed at pyserial's serial_for_url (URLs too), with TCP_NODELAY on the
socket: the runner writes a command and its '%' separately, and Nagle's algorithm would hold the '%' for
the emulator's delayed ACK (40 ms a command; a USB serial port has no such delay).  Run in a scratch folder (the runner writes sessions/ there):

    python mlperf_runner_driver.py RUNNER_DIR URL BAUD OUT_DIR MODE TESTS.yaml DATASET_DIR [MODE TESTS.yaml DATASET_DIR]

Each MODE (a = accuracy, p = performance) is one run of the runner's run_test + summarize_result, as its
main.py does them (one process for several, to pay the runner's imports once); OUT_DIR gets
result-MODE.json (what main.py dumps to results.json) and results-MODE.txt (its results.txt).
"""
import json
import os
import sys

runner_dir, url, baud, out_dir = sys.argv[1:5]
runs = [sys.argv[i:i + 3] for i in range(5, len(sys.argv), 3)]
sys.path.insert(0, runner_dir)
os.environ.setdefault("MPLBACKEND", "Agg")
import socket  # noqa: E402

import serial  # noqa: E402
from serial.urlhandler import protocol_socket  # noqa: E402

_open_socket = protocol_socket.Serial.open


def open_without_nagle(self):
    _open_socket(self)
    self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


protocol_socket.Serial.open = open_without_nagle   # every (re)open: the runner closes and reopens the port
serial.Serial = serial.serial_for_url
import main  # noqa: E402  (the runner's main.py)


def scan(self):
    """The runner's DeviceManager.scan, with the DUT at a URL instead of a USB vid/pid."""
    for d in self._device_defs:
        if d["type"] == "dut":
            self.__dict__["dut"] = dict(d, port=url)
    for d in self.values():
        self._instantiate(d)


main.DeviceManager.scan = scan
for mode, tests_yaml, dataset in runs:
    devices = [{"name": "edgec", "type": "dut", "baud": int(baud)}]
    result, power = main.run_test(devices_config=devices, dut_config=dict(devices[0]),
                                  test_script=main.parse_test_script(tests_yaml), dataset_path=dataset, mode=mode)
    result = result if isinstance(result, list) else [result]
    try:
        main.summarize_result(result, power, mode=mode, results_file=os.path.join(out_dir, f"results-{mode}.txt"))
    finally:
        with open(os.path.join(out_dir, f"result-{mode}.json"), "w") as f:
            json.dump(result, f)
