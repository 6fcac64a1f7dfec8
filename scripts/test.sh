#!/usr/bin/env bash
# The test suite (unit tests of every stage, bit-exactness of the generated C, end-to-end runs on the
# host board and the emulated Cortex-M4).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q "$@"
