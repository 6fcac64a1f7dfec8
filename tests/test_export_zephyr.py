"""An exported model as an external Zephyr module, built with Zephyr 3.5.0 (../shared/zephyr, offline: CMake,
Ninja, dtc, arm-none-eabi-gcc) into the export's own example application and run on QEMU (qemu_cortex_m3:
lm3s6965evb; mps3_an547: Cortex-M55): the output identical to edgec's reference. The model is named `adc`, as
Zephyr's ADC driver: the image must enable CONFIG_EDGEC_ADC and not CONFIG_ADC."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, require
from edgec import api

BUNDLE = REPO.parent / "shared" / "zephyr" / "zephyr-3.5-qemu-offline.tar.xz"
MACHINES = {"qemu_cortex_m3": "lm3s6965evb", "mps3_an547": "mps3-an547"}
EDGEC_BOARD = {"qemu_cortex_m3": "qemu-cortex-m3", "mps3_an547": "qemu-cortex-m55"}
PRJ = "CONFIG_EDGEC_ADC=y\nCONFIG_PRINTK=y\nCONFIG_STDOUT_CONSOLE=y\nCONFIG_MAIN_STACK_SIZE=4096\n"
APP_CMAKE = """cmake_minimum_required(VERSION 3.20.0)
find_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})
project(edgec_zephyr_app)
target_sources(app PRIVATE src/main.c)
"""


@pytest.fixture(scope="module")
def zephyr(tmp_path_factory):
    """The bundle unpacked and the environment its zephyr-env.sh sets."""
    require(BUNDLE.is_file(), "the offline Zephyr bundle", f"{BUNDLE} (see ../shared/zephyr/README.md)")
    for tool in ("cmake", "ninja", "dtc", "arm-none-eabi-gcc", "qemu-system-arm"):
        require(shutil.which(tool) is not None, tool, "apt-get install cmake ninja-build device-tree-compiler")
    root = tmp_path_factory.mktemp("zephyr")
    with tarfile.open(BUNDLE) as tar:
        tar.extractall(root, filter="tar")
    bundle = root / "zephyr-3.5-qemu-offline"
    gcc = Path(shutil.which("arm-none-eabi-gcc")).resolve()
    env = dict(os.environ, ZEPHYR_BASE=str(bundle / "zephyr"), ZEPHYR_TOOLCHAIN_VARIANT="gnuarmemb",
               GNUARMEMB_TOOLCHAIN_PATH=str(gcc.parent.parent),
               ZEPHYR_MODULES=f"{bundle}/modules/hal/cmsis;{bundle}/modules/hal/nordic",
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    return env


def _run_until(cmd: list[str], log: Path, marker: str, limit_s: float = 60) -> str:
    """QEMU never exits after main returns: run it until the UART log holds `marker` (or QEMU ends, or the
    limit passes), then stop the one process started here."""
    log.write_text("")
    proc = subprocess.Popen(cmd + ["-serial", f"file:{log}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + limit_s
        while marker not in log.read_text(errors="replace") and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    return log.read_text(errors="replace")


# qemu_cortex_m3 with the sweeps: the two-module test below builds the same `adc` module for it (warning-free, the
# Kconfig checked) and runs it bit-exact; the export's example main.c is the same file for every board
@pytest.mark.parametrize("board", [pytest.param(b, marks=pytest.mark.sweep) if b == "qemu_cortex_m3" else b
                                   for b in sorted(MACHINES)])
def test_exported_model_as_a_zephyr_module_runs_bit_exact(zephyr, board, tmp_path):
    lib = tmp_path / "adc"
    api.export(EXAMPLES / "cancer_conv1d" / "model.onnx", EXAMPLES / "cancer_conv1d" / "calib.npz",
               EDGEC_BOARD[board], "cmake", lib, name="adc", sensitivity_samples=0)
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    shutil.copy(lib / "examples" / "main.c", app / "src" / "main.c")
    shutil.copy(lib / "examples" / "adc_example_data.h", app / "src")
    (app / "CMakeLists.txt").write_text(APP_CMAKE)
    (app / "prj.conf").write_text(PRJ)
    build = tmp_path / "build"
    steps = (["cmake", "-GNinja", "-S", str(app), "-B", str(build), f"-DBOARD={board}", "-DBUILD_VERSION=v3.5.0",
              f"-DEXTRA_ZEPHYR_MODULES={lib}", f"-DPython3_EXECUTABLE={sys.executable}",
              f"-DUSER_CACHE_DIR={tmp_path / 'zcache'}"], ["ninja", "-C", str(build)])
    for cmd in steps:
        proc = subprocess.run(cmd, env=zephyr, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert "warning:" not in proc.stdout + proc.stderr or cmd[0] == "cmake", (proc.stdout + proc.stderr)[-3000:]
    config = (build / "zephyr" / ".config").read_text().splitlines()
    assert "CONFIG_EDGEC_ADC=y" in config and "CONFIG_ADC=y" not in config
    out = _run_until(["qemu-system-arm", "-M", MACHINES[board], "-display", "none", "-monitor", "none", "-net", "none",
                      "-no-reboot", "-kernel", str(build / "zephyr" / "zephyr.elf")], tmp_path / "uart.log",
                     "the reference")
    assert "adc: top output" in out and "identical to the reference" in out, out[-2000:]


TWO_MODELS_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "adc.h"
#include "gpio.h"
#include "adc_example_data.h"
#include "gpio_example_data.h"
int main(void)
{
    int ok;
    memcpy(adc_input(), adc_example_input, ADC_INPUT_BYTES);
    memcpy(gpio_input(), gpio_example_input, GPIO_INPUT_BYTES);
    ok = adc_init() == 0 && gpio_init() == 0 && adc_invoke() == 0 && gpio_invoke() == 0
         && !memcmp(adc_output(), adc_example_expected, ADC_OUTPUT_BYTES)
         && !memcmp(gpio_output(), gpio_example_expected, GPIO_OUTPUT_BYTES);
    printf("two models: %s\n", ok ? "both identical to the reference" : "DIFFERENT");
    return 0;
}
"""


def test_two_modules_shipping_different_runtime_files_link_one_runtime(zephyr, tmp_path):
    """Two exported models whose libraries ship different runtime files (each only what its model calls), as two
    external modules of one application on qemu_cortex_m3: the one edgec_runtime library gets the union, each
    file once, and both outputs are the reference's."""
    libs = {"adc": "cancer_conv1d", "gpio": "digits_cnn"}
    shipped = {}
    for name, example in libs.items():
        m = api.export(EXAMPLES / example / "model.onnx", EXAMPLES / example / "calib.npz", "qemu-cortex-m3",
                       "cmake", tmp_path / name, name=name, sensitivity_samples=0)
        shipped[name] = {f for f in m["runtime_files"] if f.endswith(".c")}
    assert shipped["adc"] != shipped["gpio"] and shipped["adc"] & shipped["gpio"]
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "main.c").write_text(TWO_MODELS_MAIN)
    for name in libs:
        shutil.copy(tmp_path / name / "examples" / f"{name}_example_data.h", app / "src")
    (app / "CMakeLists.txt").write_text(APP_CMAKE)
    (app / "prj.conf").write_text(PRJ + "CONFIG_EDGEC_GPIO=y\n")
    build = tmp_path / "build"
    steps = (["cmake", "-GNinja", "-S", str(app), "-B", str(build), "-DBOARD=qemu_cortex_m3",
              "-DBUILD_VERSION=v3.5.0", f"-DEXTRA_ZEPHYR_MODULES={tmp_path / 'adc'};{tmp_path / 'gpio'}",
              f"-DPython3_EXECUTABLE={sys.executable}", f"-DUSER_CACHE_DIR={tmp_path / 'zcache'}"],
             ["ninja", "-C", str(build)])
    for cmd in steps:
        proc = subprocess.run(cmd, env=zephyr, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert "warning:" not in proc.stdout + proc.stderr or cmd[0] == "cmake", (proc.stdout + proc.stderr)[-3000:]
    config = (build / "zephyr" / ".config").read_text().splitlines()
    assert {"CONFIG_EDGEC_ADC=y", "CONFIG_EDGEC_GPIO=y"} <= set(config) and "CONFIG_ADC=y" not in config
    objects = [p.name for p in build.rglob("*.obj") if p.name.startswith("edgec_") and "edgec_runtime" in str(p)]
    assert sorted(objects) == sorted(f"{Path(f).name}.obj" for f in shipped["adc"] | shipped["gpio"])
    out = _run_until(["qemu-system-arm", "-M", MACHINES["qemu_cortex_m3"], "-display", "none", "-monitor", "none",
                      "-net", "none", "-no-reboot", "-kernel", str(build / "zephyr" / "zephyr.elf")],
                     tmp_path / "uart.log", "two models:")
    assert "two models: both identical to the reference" in out, out[-2000:]
