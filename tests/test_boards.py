"""Board profiles: the shipped ones load, bad names and broken user files give one-line EdgecErrors."""
import dataclasses

import pytest

from edgec.targets.boards import Board, list_boards, load_board
from edgec.errors import EdgecError


def test_shipped_profiles_load():
    boards = {b.name: b for b in list_boards()}
    assert {"host", "qemu-cortex-m4"} <= set(boards)
    m4 = boards["qemu-cortex-m4"]
    assert m4.emulated and m4.cpu == "cortex-m4" and m4.dsp and m4.fpu == "fpv4-sp-d16"
    assert m4.timing_unit == "emulated instructions"
    assert m4.units_per_tick * m4.tick_hz == pytest.approx(1e9)   # -icount shift=0: 1 insn per virtual ns
    assert m4.emulator_command[0] == "qemu-system-arm" and "-icount" in m4.emulator_command
    assert m4.local_platform_dir is not None and (m4.local_platform_dir / "boards" / f"{m4.pio_board}.json").is_file()
    host = boards["host"]
    assert not host.emulated and host.timing_unit == "ns" and host.ticks_to_units(5) == 5
    assert host.local_platform_dir is not None
    for b in boards.values():
        assert b.ram_bytes > 0 and b.flash_bytes > 0 and b.serial_baud > 0


def test_load_by_name_and_path_agree():
    by_name = load_board("qemu-cortex-m4")
    by_path = load_board(str(by_name.path))
    assert by_name == by_path and isinstance(by_name, Board)
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_name.name = "x"   # frozen


def test_unknown_board_lists_known_ones():
    with pytest.raises(EdgecError) as e:
        load_board("no-such-board")
    msg = str(e.value)
    assert msg.startswith("unknown board 'no-such-board': known boards are ")
    assert "host" in msg and "qemu-cortex-m4" in msg and "edgec boards" in msg


def _user_profile(tmp_path, text):
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return path


GOOD = (load_board("qemu-cortex-m4").path).read_text()


def test_user_profile_variant(tmp_path):
    path = _user_profile(tmp_path, GOOD.replace('name = "qemu-cortex-m4"', 'name = "m4-small"')
                         .replace("ram_bytes = 4194304", "ram_bytes = 131072"))
    b = load_board(str(path))
    assert b.name == "m4-small" and b.ram_bytes == 131072 and b.path == path


@pytest.mark.parametrize("broken, field", [
    (GOOD.replace("ram_bytes = 4194304", 'ram_bytes = "lots"'), "ram_bytes"),
    (GOOD.replace("dsp = true\n", ""), "dsp"),
    (GOOD.replace('unit = "emulated instructions"', "unit = 3"), "timing.unit"),
    (GOOD.replace("[emulator]", "[emulator_typo]"), "emulator_typo"),
    (GOOD.replace("command = [", "comand = ["), "emulator.comand"),
    (GOOD.replace('cpu = "cortex-m4"', 'cpu = "cortex-m5"'), "cpu"),
    (GOOD.replace('fpu = "fpv4-sp-d16"', 'fpu = "fpv5-d16"'), "fpu"),
    (GOOD.replace('method = "systick-icount"', 'method = "stopwatch"'), "timing.method"),
    (GOOD.replace("baud = 115200", "baud = 0"), "serial.baud"),
])
def test_broken_user_profile_names_file_and_field(tmp_path, broken, field):
    path = _user_profile(tmp_path, broken)
    with pytest.raises(EdgecError) as e:
        load_board(str(path))
    assert str(path) in str(e.value) and field in str(e.value) and "\n" not in str(e.value)


def test_invalid_toml_and_missing_file(tmp_path):
    path = _user_profile(tmp_path, "name = [unclosed\n")
    with pytest.raises(EdgecError, match="not valid TOML"):
        load_board(str(path))
    with pytest.raises(EdgecError, match="does not exist"):
        load_board(str(tmp_path / "nope.toml"))


CYCLE_MODEL = """
[[cycle_model]]
name = "flash-art"
flash_wait_states = 3
line_bytes = 16
prefetch = true
icache_bytes = 1024
icache_ways = 4
"""


def test_cycle_model_of_the_real_parts(tmp_path):
    """The memory timings the cycle estimate weighs (edgec/bench/cycles.py): the L4R5ZI's and F446RE's flash
    behind the ART accelerator, the H743's flash with the M7's caches off and on; miss cycles default to the
    wait states."""
    l4 = load_board("nucleo-l4r5zi").cycle_models
    assert [(m.name, m.flash_wait_states, m.line_bytes, m.miss_cycles, m.prefetch) for m in l4] == [
        ("flash-art", 5, 8, 5, True)]
    assert [m.name for m in load_board("nucleo-h743zi2").cycle_models] == ["caches-off", "caches-on"]
    assert load_board("qemu-cortex-m4").cycle_models == ()
    mine = load_board(str(_user_profile(tmp_path, GOOD + CYCLE_MODEL)))
    assert mine.cycle_models[0].miss_cycles == 3 and mine.cycle_models[0].dcache_bytes == 0


@pytest.mark.parametrize("broken, field", [
    (CYCLE_MODEL.replace("line_bytes = 16", "line_bytes = 12"), "line_bytes"),
    (CYCLE_MODEL.replace("icache_ways = 4", "icache_ways = 3"), "line_bytes x ways"),
    (CYCLE_MODEL.replace("prefetch = true", "prefetch = 1"), "cycle_model[0].prefetch"),
    (CYCLE_MODEL.replace("name = ", "nmae = "), "cycle_model[0].nmae"),
])
def test_broken_cycle_model_names_file_and_field(tmp_path, broken, field):
    path = _user_profile(tmp_path, GOOD + broken)
    with pytest.raises(EdgecError) as e:
        load_board(str(path))
    assert str(path) in str(e.value) and field in str(e.value) and "\n" not in str(e.value)
