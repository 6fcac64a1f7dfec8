"""The device's parsers fed hostile byte streams on this host, under ASan/UBSan: the link's frame parser and
command handlers (runtime_c/harness/edgec_link.c) and the MLPerf Tiny runner's command parser
(runtime_c/harness/edgec_mlperf.c).
The harnesses (tests/fuzz/*_harness.c) also check every reply the device sends. A short deterministic run
here; scripts/fuzz_parsers.sh runs libFuzzer on the same harnesses for as long as you like."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, host_compiler
from parser_streams import link_framed, link_raw, mlperf_stream, pack

FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-g", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all")
INCLUDES = ("-I", str(REPO / "runtime_c" / "harness"), "-I", str(REPO / "boards" / "platforms" / "common"))


def _build(harness: str, runtime: str, out) -> str:
    subprocess.run([host_compiler(), *FLAGS, *INCLUDES, str(REPO / "tests" / "fuzz" / harness), runtime,
                    "-o", str(out)], check=True)
    return str(out)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    root, src = tmp_path_factory.mktemp("parsers"), REPO / "runtime_c" / "harness"
    return {"link": _build("link_harness.c", str(src / "edgec_link.c"), root / "link"),
            "mlperf": _build("mlperf_harness.c", str(src / "edgec_mlperf.c"), root / "mlperf")}


def _feed(exe: str, inputs: list[bytes]) -> None:
    proc = subprocess.run([exe], input=pack(inputs), capture_output=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode(errors="replace")[-3000:]
    assert proc.stdout.decode().strip() == f"{len(inputs)} cases"


def test_link_parser_survives_random_and_protocol_shaped_streams(harness):
    rng = np.random.default_rng(9)
    _feed(harness["link"], [link_framed(rng, int(rng.integers(1, 40))) for _ in range(3000)]
          + [link_raw(rng) for _ in range(1500)])


def test_mlperf_parser_survives_random_command_streams(harness):
    rng = np.random.default_rng(9)
    _feed(harness["mlperf"], [mlperf_stream(rng) for _ in range(3000)]
          + [bytes(rng.integers(0, 256, int(rng.integers(0, 400)), dtype=np.uint8)) for _ in range(500)])


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(st.lists(st.binary(max_size=700), min_size=1, max_size=40))
def test_parsers_survive_hypothesis_streams(harness, inputs):
    for exe in harness.values():
        _feed(exe, inputs)


def test_the_harness_catches_an_off_by_one(tmp_path):
    """Not vacuous: the link with READ's bounds check off by one byte is caught by the protocol-shaped streams."""
    src = (REPO / "runtime_c" / "harness" / "edgec_link.c").read_text()
    check = "if (!m->arena || off > m->arena_bytes || n > m->arena_bytes - off) return 0;"
    assert check in src
    broken = tmp_path / "edgec_link.c"
    broken.write_text(src.replace(check, check.replace("n > m->arena_bytes - off", "n > m->arena_bytes - off + 1")))
    exe = _build("link_harness.c", str(broken), tmp_path / "link")
    rng = np.random.default_rng(9)
    proc = subprocess.run([exe], input=pack([link_framed(rng, 30) for _ in range(3000)]), capture_output=True)
    assert proc.returncode != 0 and b"heap-buffer-overflow" in proc.stderr
