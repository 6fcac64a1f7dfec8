"""A firmware ELF as flashing tools need it: its loadable bytes at their load (flash) addresses, the vector
table's address, a raw binary image and a UF2 file (the RP2040's drag-and-drop format).  32-bit
little-endian ELF only (every Arm and RISC-V microcontroller edgec builds for)."""
from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from edgec.errors import EdgecError

PT_LOAD = 1
SHT_NOBITS = 8
SHF_ALLOC = 2
VECTOR_SECTIONS = (".isr_vector", ".vectors", ".vector_table", ".isr_vectors")
UF2_FAMILIES = {"rp2040": 0xE48BFF56}
_UF2_PAYLOAD = 256


@dataclass(frozen=True)
class Segment:
    address: int      # load (physical) address: where the bytes go in flash
    data: bytes


@dataclass(frozen=True)
class Image:
    segments: tuple[Segment, ...]     # loadable bytes, by load address
    sections: dict[str, tuple[int, int]]   # allocated section -> (run address, size)
    entry: int

    @property
    def size(self) -> int:
        """Bytes a flashing tool writes: the allocated sections with contents (what GDB's `load` writes;
        the segments may add alignment padding between them)."""
        if self.sections:
            return sum(size for _, size in self.sections.values())
        return sum(len(s.data) for s in self.segments)

    def vector_table(self) -> int:
        """Address of the Cortex-M vector table (initial SP, then the reset handler)."""
        for name in VECTOR_SECTIONS:
            if name in self.sections:
                return self.sections[name][0]
        if not self.segments:
            raise EdgecError("the firmware has nothing to load")
        return min(s.address for s in self.segments)

    def binary(self) -> tuple[int, bytes]:
        """(base address, bytes): one raw image from the lowest load address, gaps filled with 0xFF."""
        if not self.segments:
            raise EdgecError("the firmware has nothing to load")
        base = min(s.address for s in self.segments)
        end = max(s.address + len(s.data) for s in self.segments)
        if end - base > 64 << 20:
            raise EdgecError(f"the firmware's load addresses span {end - base:,} B (0x{base:08x}-0x{end:08x}); "
                             "a raw image would not be one flash region")
        out = bytearray(b"\xff" * (end - base))
        for s in self.segments:
            out[s.address - base:s.address - base + len(s.data)] = s.data
        return base, bytes(out)


def read_elf(path: Path) -> Image:
    """Parse a 32-bit little-endian ELF's program and section headers."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise EdgecError(f"cannot read firmware {path}: {e.strerror or e}") from None
    if raw[:4] != b"\x7fELF" or raw[4] != 1 or raw[5] != 1:
        raise EdgecError(f"{path} is not a 32-bit little-endian ELF firmware")
    (entry, phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum,
     shstrndx) = struct.unpack_from("<IIIIHHHHHH", raw, 24)
    segments = []
    for i in range(phnum):
        p_type, p_offset, _vaddr, p_paddr, p_filesz, _memsz, _f, _a = struct.unpack_from(
            "<IIIIIIII", raw, phoff + i * phentsize)
        if p_type == PT_LOAD and p_filesz:
            segments.append(Segment(p_paddr, raw[p_offset:p_offset + p_filesz]))
    sections = {}
    if shnum and shstrndx < shnum:
        headers = [struct.unpack_from("<IIIIIIIIII", raw, shoff + i * shentsize) for i in range(shnum)]
        strtab_off = headers[shstrndx][4]
        for name_off, sh_type, flags, addr, _off, size, *_ in headers:
            if flags & SHF_ALLOC and sh_type != SHT_NOBITS and size:
                end = raw.index(b"\0", strtab_off + name_off)
                sections[raw[strtab_off + name_off:end].decode()] = (addr, size)
    return Image(tuple(sorted(segments, key=lambda s: s.address)), sections, entry)


def write_binary(image: Image, dest: Path) -> int:
    """Write the raw image; returns its base address."""
    base, data = image.binary()
    dest.write_bytes(data)
    return base


def write_uf2(image: Image, dest: Path, family: str = "rp2040") -> int:
    """Write a UF2 file (256-byte payloads, family ID flag); returns the number of blocks."""
    blocks = []
    for seg in image.segments:
        for off in range(0, len(seg.data), _UF2_PAYLOAD):
            blocks.append((seg.address + off, seg.data[off:off + _UF2_PAYLOAD]))
    out = bytearray()
    for i, (addr, chunk) in enumerate(blocks):
        header = struct.pack("<IIIIIIII", 0x0A324655, 0x9E5D5157, 0x00002000, addr, len(chunk), i, len(blocks),
                             UF2_FAMILIES[family])
        out += header + chunk.ljust(476, b"\0") + struct.pack("<I", 0x0AB16F30)
    dest.write_bytes(bytes(out))
    return len(blocks)


SHT_SYMTAB = 2


def _section_headers(raw: bytes) -> list[tuple]:
    """(name offset, type, flags, address, file offset, size, link) of every section of a 32- or 64-bit
    little-endian ELF."""
    wide = raw[4] == 2
    shoff, = struct.unpack_from("<Q" if wide else "<I", raw, 40 if wide else 32)
    shentsize, shnum = struct.unpack_from("<HH", raw, 58 if wide else 46)
    fmt = "<IIQQQQI" if wide else "<IIIIIII"
    return [struct.unpack_from(fmt, raw, shoff + i * shentsize) for i in range(shnum)]


def symbol_range(path: Path, symbol: str) -> tuple[int, int]:
    """(file offset, size) of a defined data symbol's bytes in an ELF (32- or 64-bit, little-endian): where
    a tool writes new contents for a constant without rebuilding (the dataset-in-flash blob)."""
    raw = Path(path).read_bytes()
    if raw[:4] != b"\x7fELF" or raw[5] != 1:
        raise EdgecError(f"{path} is not a little-endian ELF")
    wide = raw[4] == 2
    headers = _section_headers(raw)
    want = symbol.encode()
    for _name, sh_type, _flags, _addr, off, size, link in headers:
        if sh_type != SHT_SYMTAB:
            continue
        strtab = headers[link][4]
        entsize = 24 if wide else 16
        for at in range(off, off + size, entsize):
            if wide:
                name, _info, _other, shndx, value, sym_size = struct.unpack_from("<IBBHQQ", raw, at)
            else:
                name, value, sym_size, _info, _other, shndx = struct.unpack_from("<IIIBBH", raw, at)
            if raw[strtab + name:raw.index(b"\0", strtab + name)] != want or not 0 < shndx < len(headers):
                continue
            _n, sec_type, _f, sec_addr, sec_off, sec_size, _l = headers[shndx]
            if sec_type == SHT_NOBITS or not sec_addr <= value <= value + sym_size <= sec_addr + sec_size:
                break
            return sec_off + value - sec_addr, sym_size
    raise EdgecError(f"{path} has no initialized symbol {symbol}; rebuild the firmware")


def patch_symbol(path: Path, symbol: str, data: bytes, dest: Path) -> None:
    """Copy the ELF `path` to `dest` with the first len(data) bytes of `symbol` replaced by `data`."""
    offset, size = symbol_range(path, symbol)
    if len(data) > size:
        raise EdgecError(f"{len(data):,} bytes do not fit {symbol} ({size:,} bytes) in {path}")
    raw = bytearray(Path(path).read_bytes())
    raw[offset:offset + len(data)] = data
    dest.write_bytes(bytes(raw))
    shutil.copymode(path, dest)           # a host board's program stays executable
