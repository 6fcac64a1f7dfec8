"""`edgec doctor` (a verdict per component, exit 1 when a required one is missing, serial ports matched to
board profiles), `edgec completion` (shtab scripts bash accepts and completes with), and the tool-scons
version read from the installed PlatformIO."""
from __future__ import annotations

import shutil
import subprocess
from types import SimpleNamespace

import pytest

from edgec import cli, doctor
from edgec.targets import pio


def run(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_doctor_verdicts(capsys, monkeypatch):
    ok = run(capsys, "doctor")
    lines = ok.stdout.splitlines()
    assert ok.returncode == 0 and lines[-1].startswith("edgec doctor: ready"), ok.stdout
    assert all(line.startswith(("[ ok ] ", "[MISS] ", "[info] ")) for line in lines[:-1])
    assert any(line.startswith("[ ok ] QEMU Arm: QEMU emulator version") for line in lines)
    assert any(line.startswith("[ ok ] PlatformIO tool-scons: " + pio.scons_package_version()) for line in lines)

    real_which = shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda n: None if n == "qemu-system-arm" else real_which(n))
    missing = run(capsys, "doctor")
    assert missing.returncode == 1 and "1 required component(s) missing" in missing.stdout
    (line,) = [x for x in missing.stdout.splitlines() if x.startswith("[MISS]")]
    assert "QEMU Arm" in line and "apt-get install qemu-system-arm" in line


def test_doctor_names_the_board_a_serial_port_belongs_to(monkeypatch):
    from serial.tools import list_ports
    ports = [SimpleNamespace(device="/dev/ttyACM0", vid=0x0483, pid=0x374B, description="STM32 STLink"),
             SimpleNamespace(device="/dev/ttyUSB3", vid=0x1A86, pid=0x7523, description="USB serial")]
    monkeypatch.setattr(list_ports, "comports", lambda: ports)
    acm, usb = [c.line() for c in doctor.serial_checks()]
    assert acm == "[info] serial port /dev/ttyACM0: 0483:374B STM32 STLink; matches board profile " \
                  "nucleo-f446re, nucleo-l4r5zi"
    assert "1A86:7523" in usb and "no edgec board profile matches" in usb


def test_completion_scripts(capsys, tmp_path):
    r = run(capsys, "completion", "bash")
    assert r.returncode == 0 and "--min-accuracy" in r.stdout and "doctor" in r.stdout
    script = tmp_path / "edgec.bash"
    script.write_text(r.stdout)
    if shutil.which("bash") is None:
        pytest.fail("bash is missing")
    complete = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=(edgec bench x --min-a); COMP_CWORD=3; "
                               "_shtab_edgec; echo ${COMPREPLY[@]}"], capture_output=True, text=True)
    assert complete.returncode == 0 and "--min-accuracy" in complete.stdout.split(), complete.stderr
    assert "#compdef edgec" in run(capsys, "completion", "zsh").stdout


def test_tool_scons_version_is_what_the_installed_platformio_asks_for():
    import semantic_version
    from platformio.dependencies import get_core_dependencies

    want = get_core_dependencies()["tool-scons"]
    assert semantic_version.SimpleSpec(want).match(semantic_version.Version(pio.scons_package_version()))
