"""End to end on the local boards: fake model library -> PlatformIO project -> firmware -> running
device (host program or QEMU) -> link: hello, run, timing, error recovery, process cleanup."""
import os
import struct
import time

import pytest

from edgec.device import link as L
from edgec.targets.boards import load_board
from edgec.device.device import open_device
from edgec.errors import EdgecError
from edgec.targets.firmware import build_firmware, write_project
from edgec.settings import Settings

BOARDS = ["host", "qemu-cortex-m4", "qemu-cortex-m3"]
IN_BYTES, OUT_BYTES = 600, 300

FAKE_H = """\
#ifndef FAKE_H
#define FAKE_H
#include <stdint.h>
#define FAKE_ARENA_BYTES 1024
#define FAKE_ARENA_PIECES 1u
#define FAKE_INPUT_BYTES 600
#define FAKE_OUTPUT_BYTES 300
#define FAKE_MODEL_HASH "0123456789abcdef"
extern const float fake_input_scale;
extern const int32_t fake_input_zero_point;
extern const float fake_output_scale;
extern const int32_t fake_output_zero_point;
int8_t *fake_input(void);
int8_t *fake_output(void);
int fake_invoke(void);
#define FAKE_LAYER_COUNT 2u
extern const uint32_t fake_layer_output_offsets[2];
extern const uint32_t fake_layer_output_bytes[2];
int8_t *fake_arena(void);
const int8_t *fake_arena_at(uint32_t offset, uint32_t n);
int fake_invoke_with_hook(void (*after_layer)(uint32_t layer, void *ctx), void *ctx);
#endif
"""
FAKE_C = """\
#include "fake.h"
const float fake_input_scale = 0.5f;
const int32_t fake_input_zero_point = 0;
const float fake_output_scale = 0.5f;
const int32_t fake_output_zero_point = 0;
static int8_t arena[FAKE_ARENA_BYTES] __attribute__((aligned(16)));
int8_t *fake_input(void) { return arena; }
int8_t *fake_output(void) { return arena + FAKE_INPUT_BYTES; }
int8_t *fake_arena(void) { return arena; }
const int8_t *fake_arena_at(uint32_t offset, uint32_t n) { return offset + n <= FAKE_ARENA_BYTES ? arena + offset : 0; }
/* layer 0: 1000 spins (work, so ticks > 0); layer 1: the output */
const uint32_t fake_layer_output_offsets[2] = {FAKE_INPUT_BYTES, FAKE_INPUT_BYTES};
const uint32_t fake_layer_output_bytes[2] = {0, FAKE_OUTPUT_BYTES};
int fake_invoke_with_hook(void (*after_layer)(uint32_t layer, void *ctx), void *ctx)
{
    volatile uint32_t spin = 0;
    for (uint32_t i = 0; i < 1000; i++) spin += i;
    if (after_layer) after_layer(0, ctx);
    for (int i = 0; i < FAKE_OUTPUT_BYTES; i++)
        arena[FAKE_INPUT_BYTES + i] = (int8_t)(arena[i] ^ arena[i + FAKE_OUTPUT_BYTES] ^ 0x55);
    if (after_layer) after_layer(1, ctx);
    return 0;
}
int fake_invoke(void) { return fake_invoke_with_hook(0, 0); }
"""


def expected(x: bytes) -> bytes:
    return bytes(x[i] ^ x[i + OUT_BYTES] ^ 0x55 for i in range(OUT_BYTES))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fake_model")
    (d / "fake.h").write_text(FAKE_H)
    (d / "fake.c").write_text(FAKE_C)
    return d


@pytest.fixture(scope="module", params=BOARDS)
def built(request, model_dir, tmp_path_factory):
    board = load_board(request.param)
    env = Settings.from_environment()
    project = write_project(tmp_path_factory.mktemp(f"proj-{board.name}"), board, model_dir, "fake",
                            core=env.platformio_home)
    return board, build_firmware(project, board, env, log=None)


def test_build_sizes(built):
    board, fw = built
    assert fw.elf.is_file() and fw.elf.parent.name.startswith("proj-")
    assert fw.elf.name == ("firmware" if board.name == "host" else "firmware.elf")
    assert 0 < fw.flash_bytes <= board.flash_bytes and 0 < fw.ram_bytes <= board.ram_bytes
    assert fw.ram_bytes >= 1024     # at least the fake arena


def test_hello_and_run(built):
    board, fw = built
    with open_device(board, fw.elf) as dev:
        info = dev.link.hello()
        stack = info.pop("stack_bytes")
        assert info == dict(board=board.name, model="fake", model_hash="0123456789abcdef",
                            input_bytes=IN_BYTES, output_bytes=OUT_BYTES, tick_hz=board.tick_hz,
                            arena_bytes=1024, layer_count=2)
        assert stack == (0 if board.name == "host" else {"qemu-cortex-m4": 8192, "qemu-cortex-m3": 4096}[board.name])
        ticks = []
        for _ in range(3):
            x = os.urandom(IN_BYTES)
            out, t = dev.link.run(x)
            assert out == expected(x)
            assert t > 0
            ticks.append(t)
        if board.emulated:     # -icount: identical instruction counts on every run
            assert len(set(ticks)) == 1
        # profile: per-layer ticks; stack painting measures something on the emulated boards only
        x = os.urandom(IN_BYTES)
        r = dev.link.run_checked(x, profile=True)
        assert r["output"] == expected(x) and len(r["layer_ticks"]) == 2
        assert sum(r["layer_ticks"]) <= r["ticks"] and r["layer_ticks"][0] > 0
        if board.emulated:
            assert 0 < r["stack"] < stack
        else:
            assert r["stack"] is None
        # capture: the run stops after layer 1, whose output is the model output
        assert dev.link.capture(x, 1) == expected(x)
        assert dev.link.retransmissions == 0
        proc = dev._process.proc
    assert proc.poll() is not None, "the device process must be gone after close()"


def _raw_reply(link, deadline=2.0):
    raw = link._read_frame(time.monotonic() + deadline)
    assert raw is not None, "device sent nothing"
    return L.decode_frame(raw)


def test_device_naks_corruption_and_replays_lost_replies(built):
    board, fw = built
    with open_device(board, fw.elf) as dev:
        link = dev.link
        # a frame with a damaged CRC -> NAK(corrupt), and the device keeps serving
        wire = bytearray(L.encode_frame(L.HELLO, 9))
        wire[1] ^= 0x04
        link.ser.write(b"\x00" + bytes(wire))
        ftype, _, payload = _raw_reply(link)
        assert ftype == L.NAK and payload[0] == 1
        # an unknown command -> NAK(unknown)
        link.ser.write(b"\x00" + L.encode_frame(0x42, 10))
        ftype, seq, payload = _raw_reply(link)
        assert (ftype, seq, payload[0]) == (L.NAK, 10, 2)
        # the same INVOKE twice (the host "lost" the reply): the cached reply comes back, same ticks
        link.write_input(os.urandom(IN_BYTES))
        replies = []
        for _ in range(2):
            link.ser.write(b"\x00" + L.encode_frame(L.INVOKE, 77))
            ftype, seq, payload = _raw_reply(link)
            assert (ftype, seq) == (L.INVOKE | L.REPLY, 77)
            replies.append(struct.unpack("<iQHHi", payload))
        assert replies[0] == replies[1]
        # garbage bytes, then the normal protocol again
        link.ser.write(bytes([0x13, 0x37, 0xFF] * 50) + b"\x00")
        link.sync()
        x = os.urandom(IN_BYTES)
        assert link.run(x)[0] == expected(x)


def test_throughput(built):
    board, fw = built
    n = 256 * 1024 if board.name == "host" else 32 * 1024
    with open_device(board, fw.elf) as dev:
        data = os.urandom(IN_BYTES)
        t0 = time.perf_counter()
        for _ in range(n // IN_BYTES):
            dev.link.write_input(data)
        h2d = (n // IN_BYTES) * IN_BYTES / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(n // OUT_BYTES // 2):
            dev.link.read_output(OUT_BYTES)
        d2h = (n // OUT_BYTES // 2) * OUT_BYTES / (time.perf_counter() - t0)
    print(f"\n[{board.name}] link throughput: host->device {h2d / 1e3:.1f} KB/s, device->host {d2h / 1e3:.1f} KB/s")
    assert h2d > 2e3 and d2h > 2e3


def test_missing_firmware(tmp_path):
    with pytest.raises(EdgecError, match="does not exist"):
        open_device(load_board("qemu-cortex-m4"), tmp_path / "nope.elf")


REAL_BOARD = """\
name = "nucleo-l4r5zi"
description = "ST NUCLEO-L4R5ZI"
cpu = "cortex-m4"
fpu = "fpv4-sp-d16"
dsp = true
clock_hz = 120000000
ram_bytes = 655360
flash_bytes = 2097152
emulated = false
[platformio]
platform = "ststm32@~17.3.0"
board = "nucleo_l4r5zi"
build_flags = ["-DEDGEC_REAL_BOARD"]
framework = "arduino"
[serial]
baud = 115200
port = ""
[timing]
method = "dwt-cyccnt"
unit = "cycles"
tick_hz = 120000000
units_per_tick = 1
"""


def test_real_board_gets_an_ordinary_project(model_dir, tmp_path):
    (tmp_path / "nucleo.toml").write_text(REAL_BOARD)
    board = load_board(str(tmp_path / "nucleo.toml"))
    ini = (write_project(tmp_path / "proj", board, model_dir, "fake", core=Settings.from_environment().platformio_home)
           / "platformio.ini").read_text()
    assert "platform = ststm32@~17.3.0\n" in ini and "board = nucleo_l4r5zi\n" in ini
    assert "framework = arduino\n" in ini and "symlink://" not in ini
    with pytest.raises(EdgecError, match=r"lists no USB VID:PID for its serial port .*give the port \(--port"):
        open_device(board, None)


def test_firmware_that_never_answers_fails_cleanly(tmp_path):
    silent = tmp_path / "silent.sh"    # announces a port nobody serves, then hangs
    pid_file = tmp_path / "pid"
    silent.write_text(f"#!/bin/sh\necho $$ > {pid_file}\necho 'EDGEC_SERIAL socket://127.0.0.1:9'\nexec sleep 30\n")
    silent.chmod(0o755)
    with pytest.raises(EdgecError, match="cannot open serial port"):
        open_device(load_board("host"), silent)
    with pytest.raises(ProcessLookupError):        # killed and reaped
        os.kill(int(pid_file.read_text()), 0)
