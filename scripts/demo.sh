#!/usr/bin/env bash
# The main job: build an example model for the emulated Cortex-M4, flash it and benchmark it over serial.
set -euo pipefail
cd "$(dirname "$0")/.."
board="${1:-qemu-cortex-m4}"
.venv/bin/edgec build examples/digits_cnn/model.onnx --calib examples/digits_cnn/calib.npz \
    --board "$board" -o "build/digits_cnn-$board"
.venv/bin/edgec bench "build/digits_cnn-$board" --data examples/digits_cnn/test.npz \
    --json "build/digits_cnn-$board/bench-report.json"
