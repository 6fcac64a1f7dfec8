"""`edgec build --code-in-ram`: the model's kernels executed from a zero-wait-state code RAM.

On a part that runs from flash with wait states behind a small instruction cache (the NUCLEO-L4R5ZI: 5 wait
states, the ART's 1 KB cache), the speed kernels' hot loops do not fit the cache and are re-read from flash on
every pass (docs/performance.md, "Weights in SRAM"). The STM32L4R5 maps its SRAM2 also at 0x10000000, in the
Code region, where the core fetches instructions on its I-code bus at zero wait states, apart from the data it
reads on the system bus. A board profile that lists such a memory (`[[memory]] kind = "code-ram"`, with `alias`
where the same memory appears among the data RAM) lets a build put the text of every runtime file of the model
library there (the kernels: runtime_c/*.c and runtime_c/fast/*.c, their EDGEC_HOT loops and assembly alike;
the model's own file, the harness and the framework stay in flash):

- a second linker script (`linker_script`, INSERTed after .data like the arena pieces' one,
  edgec/plan/regions.py) places that text in section `.edgec_code_ram`, run at the region's address and loaded
  in flash after the .data image, and asserts that it fits the region (`FIT_MESSAGE`, turned into one line by
  `check_link`);
- `edgec_code_ram.c` (`copy_source`) copies it at startup, from a constructor (run by the C runtime's init
  array before main, on edgec's own BSP and on STM32duino alike);
- where the region has an alias inside the board's data RAM, the firmware's RAM is limited to below it
  (`ram_limit`: PlatformIO's board_upload.maximum_ram_size, which STM32duino's linker script takes as the RAM
  region's length and its stack top `_estack`, so the heap, the stack and the stack painter stay off it).

The kernels' sources are not changed: the placement is by object file, so the instructions they run are the
same and the builds without it are byte for byte the same.

It is the default where it pays (`decide`, branch h49-coderam): a build for a board whose profile lists a code RAM
and whose memory timing has flash wait states ([[cycle_model]] flash_wait_states > 0: the NUCLEO-L4R5ZI) puts the
kernels there when the code estimate fits the region and the firmware's RAM fits below its alias, and else stays in
flash with one line saying why; `--code-in-ram` / `--no-code-in-ram` force it. Only the firmware project changes
(its linker script and startup copy): the model library, and so `edgec export`, is the same either way.
"""
from __future__ import annotations

from pathlib import Path

from edgec.codegen.cmodel import FAR_SECTION
from edgec.errors import EdgecError
from edgec.templating import environment
from edgec.targets.boards import Board, Region

SECTION = ".edgec_code_ram"
SCRIPT = "edgec_code_ram.ld"          # in the PlatformIO project, added with -T
FAR_SCRIPT = "edgec_far_weights.ld"   # the weights above the code RAM's alias (a script of its own: ld 2.40
#                                       crashed with both output sections in one INSERT script)
COPY_FILE = "edgec_code_ram.c"        # in the project's src/
FIT_MESSAGE = "edgec --code-in-ram: the kernels' code does not fit the code RAM region"


def copy_source(far: bool = False) -> str:
    """edgec_code_ram.c: the startup copy of the code (far: and of the weights in the RAM above the alias)."""
    return environment().get_template("code_ram.c.j2").render(section=SECTION, script=SCRIPT, far=far)


def pays(board: Board) -> bool:
    """Does running the kernels from the board's code RAM pay: it lists one and its flash has wait states?"""
    return board.region("code-ram") is not None and any(m.flash_wait_states > 0 for m in board.cycle_models)


def decide(board: Board, wanted: bool | None, name: str, code_bytes: int, ram_bytes: int) -> tuple[bool, str]:
    """(code in the code RAM?, the one line saying why not where the default falls back to flash, else "").
    wanted True / False: forced (--code-in-ram / --no-code-in-ram; True on a board without one is refused);
    None: the default, on where `pays` and both the code estimate (code_bytes, the fit estimate's: the model's
    own code included, so on the safe side) and the firmware's RAM (ram_bytes) fit."""
    if wanted is not None:
        if wanted:
            region(board)
        return wanted, ""
    if not pays(board):
        return False, ""
    r, limit = region(board), ram_limit(board)
    if code_bytes > r.size:
        return False, (f"code RAM: {name}'s kernels (about {code_bytes:,} B of code) do not fit {board.name}'s "
                       f"{r.name} ({r.size:,} B): they run from flash (--code-in-ram forces it)")
    if limit is not None and ram_bytes > limit:
        return False, (f"code RAM: {name} needs {ram_bytes:,} B of RAM, more than the {limit:,} B below {r.name}'s "
                       f"alias 0x{r.alias:08x}: the kernels run from flash")
    return True, ""


def region(board: Board) -> Region:
    """The board's code RAM, or a one-line refusal."""
    r = board.region("code-ram")
    if r is None:
        raise EdgecError(f"--code-in-ram: board {board.name} lists no code RAM ([[memory]] kind = \"code-ram\" in "
                         f"{board.path.name or 'its profile'}): build without --code-in-ram")
    return r


def ram_limit(board: Board) -> int | None:
    """The bytes of data RAM the firmware may use with its code RAM in use: up to the code RAM's alias when
    the alias lies inside the first RAM region (the L4R5: SRAM1, 192 KB), else None (no limit)."""
    code, ram = region(board), board.region("ram")
    if not code.alias or ram is None or not ram.origin <= code.alias < ram.origin + ram.size:
        return None
    return code.alias - ram.origin


def check_ram(board: Board, name: str, ram_bytes: int) -> None:
    """Refuse in one line a build whose RAM (the fit estimate's, with the weights when they are in RAM) does not
    fit the data RAM left below the code RAM's alias."""
    limit = ram_limit(board)
    if limit is not None and ram_bytes > limit:
        r = region(board)
        raise EdgecError(f"--code-in-ram: {name} needs {ram_bytes:,} B of RAM, but with its code RAM {r.name} in use "
                         f"{board.name}'s firmware has the {limit:,} B below 0x{r.alias:08x}: build without "
                         "--code-in-ram (or without --weights-in-ram)")


def placed_bytes(program: Path) -> int:
    """Bytes of the firmware's code RAM section (0 when it has none)."""
    from edgec.targets import elf
    return sum(s.size for s in elf.sections(program) if s.name == SECTION)


def far_ram(board: Board) -> tuple[int, int] | None:
    """(origin, bytes) of the data RAM above the code RAM's alias (the L4R5: SRAM3, 384 KB), where a build with
    --weights-in-ram puts the largest weights (edgec/codegen/cmodel.py far_weights); None when there is none."""
    if ram_limit(board) is None:
        return None
    code, ram = region(board), board.region("ram")
    start, end = code.alias + code.size, ram.origin + ram.size
    return (start, end - start) if end > start else None


def far_capacity(board: Board, wanted: bool) -> int:
    """The bytes of weights a --weights-in-ram --code-in-ram build may put above the alias (0: none)."""
    far = far_ram(board) if wanted else None
    return far[1] if far else 0


def has_far_weights(model_c: Path) -> bool:
    """Does the generated model file put weights in FAR_SECTION?"""
    return f'section("{FAR_SECTION}")' in Path(model_c).read_text()


def far_script(board: Board) -> str:
    """The GNU ld script placing FAR_SECTION in the RAM above the alias, loaded in flash after the code."""
    origin, size = far_ram(board)
    return "\n".join([
        "/* edgec --code-in-ram --weights-in-ram: the weights that do not fit below the code RAM's alias. */",
        "MEMORY", "{", f"  EDGEC_FAR_RAM (rw) : ORIGIN = 0x{origin:08x}, LENGTH = {size}", "}",
        "SECTIONS", "{",
        f"  {FAR_SECTION} : AT (LOADADDR({SECTION}) + SIZEOF({SECTION}))",
        "  {", "    . = ALIGN(8);", "    __edgec_far_start = .;", f"    KEEP(*({FAR_SECTION}))", "    . = ALIGN(4);",
        "    __edgec_far_end = .;", "  } > EDGEC_FAR_RAM", f"  __edgec_far_load = LOADADDR({FAR_SECTION});",
        f"  ASSERT(LOADADDR({FAR_SECTION}) + SIZEOF({FAR_SECTION}) <= ORIGIN(FLASH) + LENGTH(FLASH), "
        "\"edgec --code-in-ram: the flash image does not fit FLASH\")", "}",
        "INSERT AFTER .bss;", ""])


def runtime_objects(model_dir: Path, model_name: str) -> list[str]:
    """The object file names of the model library's runtime sources (every .c but the model's own file), as
    PlatformIO names them: NAME.o on edgec's own platforms, NAME.c.o on STM32duino's builder."""
    names = sorted(f.stem for f in Path(model_dir).rglob("*.c") if f.stem != model_name)
    return [f"{n}{ext}" for n in names for ext in (".o", ".c.o")]


def linker_script(board: Board, objects: list[str]) -> str:
    """The GNU ld script placing the objects' text in the code RAM, loaded after .data's image in flash."""
    r = region(board)
    return "\n".join([
        "/* edgec --code-in-ram: the model's kernels run from the board's code RAM (edgec/targets/code_ram.py). */",
        "MEMORY",
        "{",
        f"  EDGEC_CODE_RAM (rx) : ORIGIN = 0x{r.origin:08x}, LENGTH = {r.size}",
        "}",
        "SECTIONS",
        "{",
        f"  {SECTION} : AT (LOADADDR(.data) + SIZEOF(.data))",
        "  {",
        "    . = ALIGN(4);",
        "    __edgec_code_ram_start = .;",
        *[f"    */{o}(.text .text.*)" for o in objects],
        "    . = ALIGN(4);",
        "    __edgec_code_ram_end = .;",
        "  } > EDGEC_CODE_RAM",
        f"  __edgec_code_ram_load = LOADADDR({SECTION});",
        f"  ASSERT(SIZEOF({SECTION}) <= {r.size}, \"{FIT_MESSAGE} ({r.name}, {r.size} bytes)\")",
        f"  ASSERT(LOADADDR({SECTION}) + SIZEOF({SECTION}) <= ORIGIN(FLASH) + LENGTH(FLASH), "
        "\"edgec --code-in-ram: the flash image does not fit FLASH\")",
        # a code RAM inside the flash's address range (the emulator's stand-in window): the image ends below it
        "  ASSERT(ORIGIN(EDGEC_CODE_RAM) >= ORIGIN(FLASH) + LENGTH(FLASH) || ORIGIN(EDGEC_CODE_RAM) < ORIGIN(FLASH)"
        f" || LOADADDR({SECTION}) + SIZEOF({SECTION}) <= ORIGIN(EDGEC_CODE_RAM), "
        "\"edgec --code-in-ram: the flash image reaches the code RAM window\")",
        "}",
        "INSERT AFTER .data;",
        ""])


def check_link(output: str, board: Board) -> None:
    """A failed link whose log says the kernels did not fit the code RAM: one line saying so."""
    if FIT_MESSAGE in output or "region `EDGEC_CODE_RAM' overflowed" in output:
        r = region(board)
        raise EdgecError(f"--code-in-ram: the model's kernels do not fit {board.name}'s code RAM {r.name} "
                         f"({r.size:,} B): build with --no-code-in-ram")
