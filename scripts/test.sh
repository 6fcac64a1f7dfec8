#!/usr/bin/env bash
# The test suite (unit tests of every stage, bit-exactness of the generated C, end-to-end runs on the
# host board and the emulated Cortex-M4).
# CI=true (exported by .ci/run and by CI services) is passed through to pytest: tests that need material from
# outside the repository (../shared/models/mlperf_tiny) or tools the setup installs then fail, naming what is
# missing, instead of skipping (tests/conftest.py: require, pytest_sessionstart).
set -euo pipefail
cd "$(dirname "$0")/.."
export CI="${CI:-}"
# One pytest worker per core (pytest-xdist), a test file's tests on one worker (its module fixtures, e.g. a
# firmware build, are made once), the files in the order tests/conftest.py gives them (the heaviest first, from
# tests/durations.json; --no-loadscope-reorder keeps xdist from reordering them by their number of tests);
# `scripts/test.sh -n 0` runs serially.  The long randomized sweeps (marker
# `sweep`, e.g. 1,000 single-operator cases against TFLite Micro) run with `scripts/test.sh -m sweep`.
# NumPy's BLAS on one thread per worker: two workers on two cores already fill the machine, and OpenBLAS's own
# threads then only wait for each other (a KWT-1 float run took 1.0 s with its default threads, 0.14 s with one,
# on a loaded machine; h48-kwt).
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
exec .venv/bin/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -m "not sweep" "$@"
