"""One ELF reader (pyelftools) for what edgec measures in a built firmware and its objects: sections with their
load addresses, sized functions, the symbols in static RAM, the names an object defines, the flags gcc
recorded, and a host program's Berkeley sizes. Works for any target (Arm, RISC-V, the host) without its
binutils; an unreadable file is one EdgecError line.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from edgec.errors import EdgecError

COMMAND_LINE_SECTION = ".GCC.command.line"     # gcc -frecord-gcc-switches


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    vma: int          # where it lives when the program runs
    lma: int          # where its bytes are stored in the image (the .data image in flash: lma != vma)
    alloc: bool       # takes memory on the target
    load: bool        # has bytes in the image (not NOBITS: .bss, the stack)
    write: bool
    code: bool


@contextlib.contextmanager
def _open(path: Path) -> Iterator[ELFFile]:
    try:
        with open(path, "rb") as f:
            yield ELFFile(f)
    except (OSError, ELFError) as exc:
        raise EdgecError(f"{path}: cannot read it as an ELF file ({exc}); build again") from None


def sections(path: Path) -> list[Section]:
    """Every named section; lma from the program header that holds it (objdump -h's LMA)."""
    with _open(path) as elf:
        segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        out = []
        for sec in elf.iter_sections():
            if not sec.name:
                continue
            flags, vma, size = sec["sh_flags"], sec["sh_addr"], sec["sh_size"]
            load = bool(flags & SH_FLAGS.SHF_ALLOC) and sec["sh_type"] != "SHT_NOBITS"
            lma = vma
            for seg in segments:
                if seg["p_vaddr"] <= vma and vma + size <= seg["p_vaddr"] + seg["p_memsz"] and \
                        (not load or sec["sh_offset"] >= seg["p_offset"]):
                    lma = vma - seg["p_vaddr"] + seg["p_paddr"]
                    break
            out.append(Section(sec.name, size, vma, lma, bool(flags & SH_FLAGS.SHF_ALLOC), load,
                               bool(flags & SH_FLAGS.SHF_WRITE), bool(flags & SH_FLAGS.SHF_EXECINSTR)))
        return out


def _symbols(elf: ELFFile):
    table = elf.get_section_by_name(".symtab")
    return list(table.iter_symbols()) if table is not None else []


def functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, address, bytes) of every defined function with a size."""
    with _open(path) as elf:
        return [(s.name, s["st_value"], s["st_size"]) for s in _symbols(elf)
                if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF" and s["st_size"]]


def code_address(path: Path, name: str) -> int | None:
    """The address of a symbol in a code section (Thumb bit cleared), None when there is none."""
    with _open(path) as elf:
        secs = list(elf.iter_sections())
        for s in _symbols(elf):
            ndx = s["st_shndx"]
            if s.name == name and isinstance(ndx, int) and secs[ndx]["sh_flags"] & SH_FLAGS.SHF_EXECINSTR \
                    and s["st_info"]["type"] not in ("STT_SECTION", "STT_FILE"):
                return s["st_value"] & ~1
    return None


def ram_symbols(path: Path) -> dict[str, int]:
    """{symbol: bytes} of the data objects the program keeps in writable allocated sections (.data, .bss and
    the like: static RAM), or common symbols."""
    with _open(path) as elf:
        secs = list(elf.iter_sections())
        found = {}
        for s in _symbols(elf):
            if not s.name or not s["st_size"] or s["st_info"]["type"] in ("STT_FUNC", "STT_SECTION", "STT_FILE"):
                continue
            ndx = s["st_shndx"]
            if ndx == "SHN_COMMON" or (isinstance(ndx, int) and secs[ndx]["sh_flags"] & SH_FLAGS.SHF_ALLOC
                                      and secs[ndx]["sh_flags"] & SH_FLAGS.SHF_WRITE):
                found[s.name] = s["st_size"]
        return found


def defined_names(path: Path) -> set[str]:
    """Names an object file defines: functions, constants and variables, static ones included."""
    with _open(path) as elf:
        return {s.name for s in _symbols(elf) if s.name and not s.name.startswith("$")    # Arm mapping symbols
                and s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] not in ("STT_SECTION", "STT_FILE")}


def recorded_switches(path: Path) -> bytes:
    """The raw .GCC.command.line section of an object (b"" when gcc recorded none)."""
    with _open(path) as elf:
        section = elf.get_section_by_name(COMMAND_LINE_SECTION)
        return section.data() if section is not None else b""


def berkeley_sizes(path: Path) -> tuple[int, int, int]:
    """(text, data, bss) as `size -B` counts them: allocated code or read-only sections, writable ones with
    bytes, the rest."""
    text = data = bss = 0
    for s in sections(path):
        if not s.alloc:
            continue
        if s.code or not s.write:
            text += s.size
        elif s.load:
            data += s.size
        else:
            bss += s.size
    return text, data, bss
