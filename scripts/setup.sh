#!/usr/bin/env bash
# Installs everything edgec needs on a fresh Debian/Ubuntu machine: the Arm and RISC-V toolchains, QEMU, CMake and host
# compilers from apt, and a Python virtual environment (.venv) with edgec and its dependencies.
# PlatformIO is provisioned offline by edgec itself on first use (in ~/.cache/edgec/platformio).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
[ -e /usr/lib/arm-none-eabi/newlib ] || [ -d /usr/lib/arm-none-eabi/lib ] || need+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)
# the 32-bit RISC-V board (qemu-riscv32): emulator, toolchain and libc
command -v qemu-system-riscv32 >/dev/null || need+=(qemu-system-misc)
command -v riscv64-unknown-elf-gcc >/dev/null || need+=(gcc-riscv64-unknown-elf)
[ -e /usr/lib/picolibc/riscv64-unknown-elf ] || need+=(picolibc-riscv64-unknown-elf)
# flashing real boards and loading through any GDB server (edgec flash --probe openocd / stlink / gdb)
command -v openocd >/dev/null || need+=(openocd)
command -v st-flash >/dev/null || need+=(stlink-tools)
command -v gdb-multiarch >/dev/null || need+=(gdb-multiarch)
command -v cmake >/dev/null || need+=(cmake)
# the exported Zephyr module's build with ../shared/zephyr (tests/test_export_zephyr.py)
command -v ninja >/dev/null || need+=(ninja-build)
command -v dtc >/dev/null || need+=(device-tree-compiler)
# a labgrid exporter serves serial ports over RFC2217 with ser2net (edgec bench --labgrid; tests/test_farm.py)
command -v ser2net >/dev/null || [ -x /usr/sbin/ser2net ] || need+=(ser2net)
# spoken words for the streaming wake-word tests (tests/test_stream.py)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v gcc >/dev/null || need+=(gcc)
command -v clang >/dev/null || need+=(clang)
python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
# headless Chromium: the test that renders report.html and checks its plots (scripts/screenshot_report.py)
command -v chromium >/dev/null || need+=(chromium)
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() {
  echo "setup: installing $* with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
# clang's libFuzzer runtime, for scripts/fuzz_parsers.sh (the package is versioned like clang itself,
# so this is checked once clang is there)
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; return (int)n * 0; }' \
    | clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  apt_install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "WARNING: Location" || true
.venv/bin/python -m pip install -q -e '.[test,flash,farm]' 2>&1 | grep -v "WARNING: Location" || true
.venv/bin/edgec --version
# the cycle-estimate QEMU plugin (edgec/bench/cycles.py; boards/platforms/edgec-qemu/plugins/edgec_cycles.c)
.venv/bin/python -m edgec.bench.cycles
