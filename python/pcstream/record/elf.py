"""What ``pcstream record`` reads from ELF files, with :mod:`struct` and no other dependency:
whether an executable is statically linked (no ``PT_INTERP`` program header: the dynamic linker
never runs, so ``LD_PRELOAD`` and the shim do not apply), the libraries it needs (``DT_NEEDED``:
a program that links libjvm runs a Java VM), a file's GNU build-id and
``.gnu_debuglink`` name (to find its separate debug file), and the module id the shim records for a
module (``shim/src/modules.c``: a hash of the build-id, or of the path when there is none).

Every reader returns None for a file that is not a readable ELF file; none raises on bad input.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

PT_LOAD = 1
PT_DYNAMIC = 2
PT_INTERP = 3
PT_NOTE = 4
DT_NULL = 0
DT_NEEDED = 1
DT_STRTAB = 5
SHT_NOTE = 7
NT_GNU_BUILD_ID = 3
PN_XNUM = 0xFFFF
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class _Header:
    is64: bool
    endian: str  # struct byte order: "<" or ">"
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int


def _header(f: BinaryIO) -> _Header | None:
    ident = f.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    is64 = ident[4] == 2
    e = "<" if ident[5] == 1 else ">"
    if is64:
        if len(ident) < 64:
            return None
        phoff, shoff = struct.unpack_from(e + "QQ", ident, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(e + "HHHHH", ident, 0x36)
    else:
        phoff, shoff = struct.unpack_from(e + "II", ident, 0x1C)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(e + "HHHHH", ident, 0x2A)
    return _Header(is64, e, phoff, phentsize, phnum, shoff, shentsize, shnum, shstrndx)


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    if size <= 0 or size > 1 << 24:
        return b""
    f.seek(offset)
    return f.read(size)


def _segments(f: BinaryIO, h: _Header) -> list[tuple[int, int, int]]:
    """(p_type, p_offset, p_filesz) of every program header."""
    return [(t, off, size) for t, off, _va, size in _segments_va(f, h)]


def _segments_va(f: BinaryIO, h: _Header) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of every program header."""
    if not h.phoff or h.phnum == PN_XNUM:
        return []
    need = 56 if h.is64 else 32
    if h.phentsize < need:
        return []
    raw = _read(f, h.phoff, h.phentsize * h.phnum)
    out = []
    for i in range(len(raw) // h.phentsize):
        at = i * h.phentsize
        if h.is64:
            p_type, _flg, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(h.endian + "IIQQQQ", raw, at)
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(h.endian + "IIIII", raw, at)
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def _sections(f: BinaryIO, h: _Header) -> list[tuple[int, int, int, int]]:
    """(sh_name, sh_type, sh_offset, sh_size) of every section header."""
    need = 64 if h.is64 else 40
    if not h.shoff or h.shentsize < need or not h.shnum:
        return []
    raw = _read(f, h.shoff, h.shentsize * h.shnum)
    out = []
    for i in range(len(raw) // h.shentsize):
        at = i * h.shentsize
        if h.is64:
            name, typ, _flags, _addr, offset, size = struct.unpack_from(h.endian + "IIQQQQ", raw, at)
        else:
            name, typ, _flags, _addr, offset, size = struct.unpack_from(h.endian + "IIIIII", raw, at)
        out.append((name, typ, offset, size))
    return out


def _notes(data: bytes, endian: str) -> list[tuple[int, bytes, bytes]]:
    """(type, name, desc) of the notes in a PT_NOTE segment or SHT_NOTE section."""
    out = []
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, typ = struct.unpack_from(endian + "III", data, at)
        name_at = at + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        end = desc_at + ((descsz + 3) & ~3)
        if desc_at + descsz > len(data):
            break
        out.append((typ, data[name_at : name_at + namesz], data[desc_at : desc_at + descsz]))
        at = end
    return out


def is_static(path: str | os.PathLike[str]) -> bool | None:
    """True for an ELF file without a ``PT_INTERP`` program header (statically linked, also
    static-pie), False for a dynamically linked one, None when ``path`` is not a readable ELF file
    (a script, a missing file)."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
            if h is None or not h.phnum or h.phnum == PN_XNUM:
                return None
            segments = _segments(f, h)
    except OSError:
        return None
    if not segments:
        return None
    return not any(p_type == PT_INTERP for p_type, _off, _size in segments)


def needed(path: str | os.PathLike[str]) -> list[str] | None:
    """The libraries an ELF file names in ``DT_NEEDED`` (``libjvm.so``, ``libc.so.6``, ...), in
    order; None when ``path`` is not a readable ELF file or has no dynamic section."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
            if h is None or not h.phnum or h.phnum == PN_XNUM:
                return None
            segments = _segments_va(f, h)
            dynamic = [(off, size) for typ, off, _va, size in segments if typ == PT_DYNAMIC]
            if not dynamic:
                return None
            word = "q" if h.is64 else "i"
            entry = struct.calcsize(h.endian + word + word.upper())
            raw = _read(f, dynamic[0][0], dynamic[0][1])
            tags = [
                struct.unpack_from(h.endian + word + word.upper(), raw, at)
                for at in range(0, len(raw) - entry + 1, entry)
            ]
            tags = tags[: next((i for i, (tag, _v) in enumerate(tags) if tag == DT_NULL), len(tags))]
            strtab = next((v for tag, v in tags if tag == DT_STRTAB), None)
            # DT_STRTAB is an address: the PT_LOAD segment holding it gives its place in the file.
            base = next(
                (
                    off + strtab - va
                    for typ, off, va, size in segments
                    if typ == PT_LOAD and va <= (strtab or -1) < va + size
                ),
                None,
            )
            if base is None:
                return None
            names = []
            for tag, value in tags:
                if tag == DT_NEEDED:
                    f.seek(base + value)
                    names.append(f.read(256).split(b"\0", 1)[0].decode(errors="replace"))
            return names
    except (OSError, struct.error):
        return None


def script_interpreter(path: str | os.PathLike[str]) -> str | None:
    """The interpreter a ``#!`` script names (for ``#!/usr/bin/env NAME`` the NAME), else None."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return words[0]


def build_id(path: str | os.PathLike[str]) -> bytes | None:
    """The GNU build-id of an ELF file (from its note sections, else its PT_NOTE segments): the
    same bytes whether the file is stripped, unstripped or a separate debug file."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
            if h is None:
                return None
            areas = [(off, size) for _n, typ, off, size in _sections(f, h) if typ == SHT_NOTE]
            areas += [(off, size) for typ, off, size in _segments(f, h) if typ == PT_NOTE]
            for offset, size in areas:
                for typ, name, desc in _notes(_read(f, offset, size), h.endian):
                    if typ == NT_GNU_BUILD_ID and name.rstrip(b"\0") == b"GNU" and desc:
                        return desc
    except OSError:
        return None
    return None


def debuglink(path: str | os.PathLike[str]) -> str | None:
    """The file name in a ``.gnu_debuglink`` section (where a stripped file says its debug file
    is, next to it or under a debug directory), else None."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
            if h is None:
                return None
            sections = _sections(f, h)
            if not 0 < h.shstrndx < len(sections):
                return None
            _n, _t, str_off, str_size = sections[h.shstrndx]
            names = _read(f, str_off, str_size)
            for name_at, _typ, offset, size in sections:
                end = names.find(b"\0", name_at)
                if names[name_at:end] == b".gnu_debuglink":
                    data = _read(f, offset, min(size, 1024))
                    link = data.split(b"\0", 1)[0].decode(errors="replace")
                    return os.path.basename(link) or None
    except OSError:
        return None
    return None


def _mix64(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _MASK64
    x ^= x >> 33
    return x


def shim_hash(data: bytes) -> int:
    """``hash_bytes`` of shim/src/util.c: FNV-1a over the bytes, then a 64-bit mix; never 0."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & _MASK64
    return _mix64(h) or 1


def module_id(path: str, build: bytes | None) -> str:
    """The ``module_id`` (16 hex digits) the shim records for the module at ``path`` with
    build-id ``build``: the hash of the build-id, or of the path when there is none."""
    return f"{shim_hash(build if build else path.encode()):016x}"
