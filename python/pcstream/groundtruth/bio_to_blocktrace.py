"""The real block trace of ``record --block`` from the bio capture (:mod:`.biotracer`), with the
program context of every data page.

Each bio becomes rows as the blkparse importer makes them (a write with a preflush is a cache
flush, then the write; a request is split where it crosses a metadata range of the image's
layout, whose class goes to the ``meta`` column), and a data write is further split where its
pages' writers differ. A data page gets the ``pc`` and ``pid`` of the shim's last write to the
same file page — same inode of the captured file system, same page index — at or before the
time the bio was queued; when the file trace has no write before it, the first one at most
:data:`LATE_NS` after (the shim stamps a write when the call returns, so writeback that starts
inside the call comes first). ``hint`` is the bio's write-life hint; ``file`` a dense id per
inode (``pcstream.files`` names it by the path of its last write), ``pid`` and ``pc`` 0 where no
writer is known (metadata, journal, pages without a file). The aged state, when there is one,
leads the trace as the engine's ``map --age`` writes it (one write per extent at time 0, footer
keys ``pcstream.aged_rows`` and ``pcstream.aged_pages``).

Everything is vectorised over numpy arrays, and the bios are taken in chunks of about
:data:`CHUNK_PAGES` written pages in time order: a chunk's pages are expanded and joined with the
writes of the same file pages, which the shim's writes (one entry per page written, ordered by
file page) give by binary search; only the rows are kept. So the memory follows the chunk, the
rows and the shim's page writes, not every page of every bio. Chunks end between bios and rows
never span bios, so the trace is the one a single pass over all pages would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pcstream import api, tracemeta
from pcstream.errors import Failure
from pcstream.groundtruth import biotracer as bc
from pcstream.units import PAGE_BYTES

LATE_NS = 1_000_000
# Written pages joined at a time: the join takes some 500 bytes a page, so about 32 MB a chunk.
CHUNK_PAGES = 1 << 16
SECTOR = 512
# Block-trace columns (docs/FORMATS.md) and their widths.
SCHEMA = pa.schema(
    [("ts_ns", pa.uint64()), ("op", pa.uint8()), ("lpn", pa.uint64()), ("pages", pa.uint32()),
     ("pc", pa.uint64()), ("file", pa.uint32()), ("file_class", pa.uint16()), ("meta", pa.uint8()),
     ("pid", pa.uint32()), ("hint", pa.uint8())]
)  # fmt: skip
COLUMN_DTYPES = {f.name: np.dtype(f.type.to_pandas_dtype()) for f in SCHEMA}
WRITE, TRIM, READ, FLUSH = 0, 1, 2, 3


@dataclass
class Writes:
    """Page writes, one entry per page written: key ``ino << 32 | page``, time, pc, pid and path
    id of the write (the form :func:`last_writer` takes)."""

    key: np.ndarray
    ts: np.ndarray
    pc: np.ndarray
    pid: np.ndarray
    path: np.ndarray

    @staticmethod
    def empty() -> Writes:
        z = np.zeros(0, dtype=np.uint64)
        return Writes(z, z, z, z.astype(np.uint32), z.astype(np.uint32))


@dataclass
class ShimWrites:
    """The shim's writes to the captured file system: per write (row of the file trace kept, in
    file order) its time, pc and pid; per page written its key ``ino << 32 | page`` and its write
    (``row``), ordered by key — stably, so a page's writes stay in file order. Some 12 bytes a
    page written and 20 a write."""

    key: np.ndarray
    row: np.ndarray
    ts: np.ndarray
    pc: np.ndarray
    pid: np.ndarray

    def last_writer(
        self, qkey: np.ndarray, qts: np.ndarray, late_ns: int = LATE_NS
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`last_writer` of the queries, as the write (row) found: only the writes of the
        queried pages take part, which is the same answer (a page's answer depends on its own
        writes alone, and they keep their order) in memory that follows the queries."""
        uq = np.unique(qkey)
        lo = np.searchsorted(self.key, uq, side="left")
        _, sub = expand(lo, np.searchsorted(self.key, uq, side="right") - lo)
        row = self.row[sub]
        z = np.zeros(0, dtype=np.uint32)
        found, late = last_writer(qkey, qts, Writes(self.key[sub], self.ts[row], z, z, z), late_ns)
        ok = found >= 0
        found[ok] = row[found[ok]]
        return found, late


def expand(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges (first, count): the owner index of every element and the element itself."""
    count = count.astype(np.int64)
    owner = np.repeat(np.arange(len(count)), count)
    start = np.cumsum(count) - count
    step = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(start, count)
    return owner, first.astype(np.int64)[owner] + step


def spans(weight: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Runs ``[s, e)`` of consecutive items, each of about ``limit`` in total ``weight`` (an item
    is never cut: a heavier one is a run of its own); at least one run."""
    cum = np.cumsum(weight)
    total = int(cum[-1]) if len(cum) else 0
    cuts = np.searchsorted(cum, np.arange(limit, total, limit), side="left") + 1
    bounds = np.unique(np.r_[0, cuts, len(weight)])
    return [(int(s), int(e)) for s, e in zip(bounds[:-1], bounds[1:])] or [(0, 0)]


ROW_COLUMNS = {"ts_ns": np.uint64, "pc": np.uint64, "pid": np.uint32, "ino": np.uint64, "path": np.uint32}


def shim_writes(file_trace: Path, fs_dev: int) -> tuple[ShimWrites, dict[int, int], dict[int, str], str]:
    """The writes of ``file_trace`` to files of ``fs_dev`` (st_dev), the path id of each inode's
    last write, the trace's path table and its PC table (the footer value, copied to the block
    trace). Pages are expanded :data:`CHUNK_PAGES` at a time."""
    pf = pq.ParquetFile(file_trace)
    meta = pf.metadata.metadata or {}
    paths = tracemeta.paths(meta)
    pcs = tracemeta.get(meta, tracemeta.KEY_PCS) or "{}"
    per_row: dict[str, list[np.ndarray]] = {c: [np.zeros(0, dtype=d)] for c, d in ROW_COLUMNS.items()}
    keys: list[np.ndarray] = [np.zeros(0, dtype=np.uint64)]
    rows: list[np.ndarray] = [np.zeros(0, dtype=np.uint32)]
    n = 0
    names = ["ts_ns", "pid", "op", "dev", "ino", "offset", "len", "pc", "path"]
    for batch in pf.iter_batches(batch_size=1 << 20, columns=names):
        t = pa.Table.from_batches([batch])
        op = t.column("op")
        if pa.types.is_dictionary(op.type):
            op = op.cast(pa.string())
        # Unsigned scalars: a set_hint row's len holds the call's raw 64-bit argument, beyond int64.
        dev = pc.equal(t.column("dev").cast(pa.uint64()), pa.scalar(fs_dev, pa.uint64()))
        some = pc.greater(t.column("len").cast(pa.uint64()), pa.scalar(0, pa.uint64()))
        t = t.filter(pc.and_(pc.and_(pc.equal(op, "write"), dev), some))
        for c, dtype in ROW_COLUMNS.items():
            per_row[c].append(t.column(c).to_numpy().astype(dtype))
        off = t.column("offset").to_numpy().astype(np.uint64)
        first = off // PAGE_BYTES
        count = (off + t.column("len").to_numpy().astype(np.uint64) - 1) // PAGE_BYTES - first + 1
        for s, e in spans(count, CHUNK_PAGES):
            owner, page = expand(first[s:e], count[s:e])
            owner += s
            keys.append((per_row["ino"][-1][owner] << np.uint64(32)) | page.astype(np.uint64))
            rows.append((n + owner).astype(np.uint32))
        n += t.num_rows
    cols = {c: np.concatenate(per_row.pop(c)) for c in ROW_COLUMNS}
    last_path = last_paths(cols.pop("ino"), cols["ts_ns"], cols.pop("path"))
    key = np.concatenate(keys)
    del keys
    order = np.argsort(key, kind="stable")
    key = key[order]
    row = np.concatenate(rows)[order]
    return ShimWrites(key, row, cols["ts_ns"], cols["pc"], cols["pid"]), last_path, paths, pcs


def last_paths(ino: np.ndarray, ts: np.ndarray, path: np.ndarray) -> dict[int, int]:
    """The path id of each inode's last write (the latest; of those at one time, the last in file
    order), from the writes' inode, time and path in file order."""
    if not len(ino):
        return {}
    order = np.lexsort((ts, ino))
    last = np.r_[ino[order][1:] != ino[order][:-1], True]
    return dict(zip(ino[order][last].tolist(), path[order][last].tolist()))


def last_writer(
    qkey: np.ndarray, qts: np.ndarray, w: Writes, late_ns: int = LATE_NS
) -> tuple[np.ndarray, np.ndarray]:
    """For each query (file page ``qkey`` written back at ``qts``): the index in ``w`` of the
    last write of that page at or before ``qts`` (a write at the same time counts as before),
    else of the first one at most ``late_ns`` after, else -1; and whether it was a late one."""
    nw, nq = len(w.key), len(qkey)
    found = np.full(nq, -1, dtype=np.int64)
    late = np.zeros(nq, dtype=bool)
    if nw == 0 or nq == 0:
        return found, late
    key = np.concatenate([w.key, qkey.astype(np.uint64)])
    ts = np.concatenate([w.ts, qts.astype(np.uint64)])
    kind = np.concatenate([np.zeros(nw, np.uint8), np.ones(nq, np.uint8)])
    order = np.lexsort((kind, ts, key))
    skey, sts = key[order], ts[order]
    is_w = order < nw
    pos = np.arange(len(order))
    before = np.maximum.accumulate(np.where(is_w, pos, -1))
    big = len(order)
    after = np.minimum.accumulate(np.where(is_w, pos, big)[::-1])[::-1]
    qpos = np.flatnonzero(~is_w)
    qidx = order[qpos] - nw
    b = before[qpos]
    ok = (b >= 0) & (skey[np.maximum(b, 0)] == skey[qpos])
    found[qidx[ok]] = order[b[ok]]
    a = after[qpos]
    a_c = np.minimum(a, big - 1)
    ok2 = ~ok & (a < big) & (skey[a_c] == skey[qpos]) & (sts[a_c] - sts[qpos] <= np.uint64(late_ns))
    found[qidx[ok2]] = order[a_c[ok2]]
    late[qidx[ok2]] = True
    return found, late


def meta_class(lpn: np.ndarray, meta_map: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """The metadata class of each page (0 outside every range of the sorted, disjoint map)."""
    if not meta_map:
        return np.zeros(len(lpn), dtype=np.uint8)
    m = np.asarray(meta_map, dtype=np.int64).reshape(-1, 3)
    i = np.searchsorted(m[:, 0], lpn, side="right") - 1
    ic = np.maximum(i, 0)
    inside = (i >= 0) & (lpn < m[ic, 0] + m[ic, 1])
    return np.where(inside, m[ic, 2], 0).astype(np.uint8)


def split_by_meta(
    lpn: np.ndarray, end: np.ndarray, meta_map: Sequence[tuple[int, int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranges [lpn, end) cut at the map's range boundaries: (owner, piece index within the
    owner, piece start, piece end, class)."""
    if meta_map and len(lpn):
        m = np.asarray(meta_map, dtype=np.int64).reshape(-1, 3)
        bnd = np.unique(np.concatenate([m[:, 0], m[:, 0] + m[:, 1]]))
    else:
        bnd = np.zeros(0, dtype=np.int64)
    i0 = np.searchsorted(bnd, lpn, side="right")
    i1 = np.searchsorted(bnd, end, side="left")
    pieces = np.maximum(i1 - i0, 0) + 1
    owner, j = expand(np.zeros(len(lpn), dtype=np.int64), pieces)
    last = len(bnd) - 1
    start = np.where(j == 0, lpn[owner], bnd[np.clip(i0[owner] + j - 1, 0, max(last, 0))] if len(bnd) else 0)
    stop = np.where(
        j == pieces[owner] - 1, end[owner], bnd[np.clip(i0[owner] + j, 0, max(last, 0))] if len(bnd) else 0
    )
    return owner, j, start, stop, meta_class(start, meta_map)


@dataclass
class Bios:
    """The captured bios in time order (``raw_ts`` their capture time, ``hint`` their write-life
    hint; ``sorted_pos``: file index → position in time order) with what each one does: its pages
    ``[lpn, end)``, its kind, its time since the first."""

    raw_ts: np.ndarray
    hint: np.ndarray
    sorted_pos: np.ndarray
    lpn: np.ndarray
    end: np.ndarray
    is_write: np.ndarray
    is_trim: np.ndarray
    is_read: np.ndarray
    is_flush: np.ndarray
    ts: np.ndarray


def build(
    cap: bc.Capture,
    file_trace: Path,
    fs_dev: int,
    capacity_pages: int,
    meta_map: Sequence[tuple[int, int, int]],
    out: Path,
    source: str,
    aged_extents: Sequence[tuple[int, int]] = (),
) -> dict[str, Any]:
    """Write the block trace ``out`` from the capture; returns the import-like counts (rows,
    writes, trims, flushes, reads, write/trim/read pages, capacity_pages) and ``attribution``."""
    b = classify(cap, capacity_pages)
    writes, last_path, paths, pcs = shim_writes(file_trace, fs_dev)
    runs = RunIndex.of(cap, b.sorted_pos)
    acc = Attribution(shim_write_pages=len(writes.key))
    parts: list[dict[str, np.ndarray]] = []
    for s, e in spans(np.where(b.is_write, b.end - b.lpn, 0), CHUNK_PAGES):
        wrows = data_write_rows(b, s, e, runs, meta_map, writes, acc)
        parts.append(in_bio_order([wrows, *trim_read_flush_rows(b, s, e, meta_map)], b))
    del writes, runs
    rows = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    del parts
    files = file_ids(rows, acc.inodes, last_path, paths)
    counts = row_counts(rows)
    aged_lpn, aged_pages = aged_rows(aged_extents)
    n_aged = len(aged_lpn)
    aged = {"lpn": aged_lpn, "pages": aged_pages}
    columns = {
        name: np.concatenate([aged.get(name, np.zeros(n_aged)).astype(dtype), rows.pop(name).astype(dtype)])
        for name, dtype in COLUMN_DTYPES.items()
    }
    del rows
    meta = {
        tracemeta.KEY_CAPACITY: str(capacity_pages),
        tracemeta.KEY_SOURCE: source,
        tracemeta.KEY_FILES: tracemeta.encode_json(files).decode(),
        tracemeta.KEY_PCS: pcs,
    }
    if n_aged:
        meta[tracemeta.KEY_AGED_ROWS] = str(n_aged)
        meta[tracemeta.KEY_AGED_PAGES] = str(int(aged_pages.sum()))
    return {
        "rows": _write(out, columns, meta),
        **counts,
        "capacity_pages": capacity_pages,
        "aged_rows": n_aged,
        "aged_pages": int(aged_pages.sum()),
        "bios": len(b.ts),
        "attribution": acc.as_dict(),
    }


def row_counts(rows: dict[str, np.ndarray]) -> dict[str, int]:
    """Rows and pages of each kind of the trace's rows (the aged state left out)."""
    op, pages = rows["op"], rows["pages"]
    return {
        "writes": int((op == WRITE).sum()),
        "trims": int((op == TRIM).sum()),
        "reads": int((op == READ).sum()),
        "flushes": int((op == FLUSH).sum()),
        "write_pages": int(pages[op == WRITE].sum()),
        "trim_pages": int(pages[op == TRIM].sum()),
        "read_pages": int(pages[op == READ].sum()),
    }


def classify(cap: bc.Capture, capacity_pages: int) -> Bios:
    """The capture's bios in time order and what each does; refuses a bio beyond the image."""
    perm = np.argsort(cap.bios["ts_ns"], kind="stable")
    bios = cap.bios[perm][["op", "flags", "hint", "ts_ns", "sector", "bytes"]]
    op, flags = bios["op"].astype(np.int64), bios["flags"].astype(np.int64)
    nbytes = bios["bytes"].astype(np.int64)
    first_byte = bios["sector"].astype(np.int64) * SECTOR
    lpn = first_byte // PAGE_BYTES
    end = (first_byte + nbytes + PAGE_BYTES - 1) // PAGE_BYTES
    writing = (op == bc.OP_WRITE) | (op == bc.OP_WRITE_ZEROES)
    is_write = writing & (nbytes > 0)
    is_trim = ((op == bc.OP_DISCARD) | (op == bc.OP_SECURE_ERASE)) & (nbytes > 0)
    is_read = (op == bc.OP_READ) & (nbytes > 0)
    is_flush = (op == bc.OP_FLUSH) | (writing & ((flags & bc.F_PREFLUSH) != 0))
    moving = is_write | is_trim | is_read
    if moving.any() and int(end[moving].max()) > capacity_pages:
        bad = int(np.flatnonzero(moving & (end > capacity_pages))[0])
        raise Failure(
            f"a captured bio ends at page {int(end[bad])}, beyond the image's {capacity_pages} pages",
        )
    raw_ts = bios["ts_ns"].astype(np.uint64)
    base = int(raw_ts[0]) if len(raw_ts) else 0
    return Bios(
        raw_ts=raw_ts,
        hint=bios["hint"].astype(np.uint8),
        sorted_pos=np.argsort(perm),
        lpn=lpn,
        end=end,
        is_write=is_write,
        is_trim=is_trim,
        is_read=is_read,
        is_flush=is_flush,
        ts=raw_ts.astype(np.int64) - base,
    )


@dataclass
class Attribution:
    """The ``attribution`` counts, summed over the chunks, and the inodes seen on written pages."""

    shim_write_pages: int
    data_pages: int = 0
    file_pages: int = 0
    attributed_pages: int = 0
    late_pages: int = 0
    hinted_pages: int = 0
    inodes: list[np.ndarray] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "data_pages": self.data_pages,
            "file_pages": self.file_pages,
            "attributed_pages": self.attributed_pages,
            "late_pages": self.late_pages,
            "rate": self.attributed_pages / self.data_pages if self.data_pages else 0.0,
            "shim_write_pages": self.shim_write_pages,
            "hinted_pages": self.hinted_pages,
        }


def data_write_rows(
    b: Bios,
    s: int,
    e: int,
    runs: RunIndex,
    meta_map: Sequence[tuple[int, int, int]],
    writes: ShimWrites,
    acc: Attribution,
) -> dict[str, np.ndarray]:
    """The rows of the data writes among bios ``[s, e)``, page by page given a class, a file
    page and its writer, then cut where one of them changes; their counts go to ``acc``. The
    rows' ``file`` is the inode for now (``fhas``: a data page with a file), see :func:`file_ids`."""
    wb = s + np.flatnonzero(b.is_write[s:e])
    owner, page = expand(b.lpn[wb], b.end[wb] - b.lpn[wb])
    pbio = wb[owner]  # the bio of each page (position in time order)
    del owner
    k = page - b.lpn[pbio]  # the page's place in its bio
    pmeta = meta_class(page, meta_map)
    ino, index, has_file = runs.file_pages(s, e, pbio, k)
    fq = np.flatnonzero(has_file)
    found, late = writes.last_writer((ino[fq] << np.uint64(32)) | index[fq], b.raw_ts[pbio[fq]])
    del index
    got = found >= 0
    data = pmeta == 0
    ppc = np.zeros(len(page), dtype=np.uint64)
    ppid = np.zeros(len(page), dtype=np.uint32)
    ppc[fq[got]] = writes.pc[found[got]]
    ppid[fq[got]] = writes.pid[found[got]]
    acc.inodes.append(np.unique(ino[has_file]))
    fhas = has_file & data
    fino = np.where(fhas, ino, np.uint64(0))
    del ino
    ppc[~data], ppid[~data] = 0, 0
    # rows: consecutive pages of one bio with the same class, writer and file
    brk = np.ones(len(page), dtype=bool)
    if len(page):
        brk[1:] = (
            (pbio[1:] != pbio[:-1]) | (pmeta[1:] != pmeta[:-1]) | (ppc[1:] != ppc[:-1])
            | (ppid[1:] != ppid[:-1]) | (fhas[1:] != fhas[:-1]) | (fino[1:] != fino[:-1])
        )  # fmt: skip
    st = np.flatnonzero(brk)
    rows = _rows(pbio[st], 1 + k[st], WRITE, page[st], np.diff(np.r_[st, len(page)]), ppc[st], 0,
                 pmeta[st], ppid[st])  # fmt: skip
    rows["fino"], rows["fhas"] = fino[st], fhas[st]
    acc.data_pages += int(data.sum())
    acc.file_pages += int(data[fq].sum())
    acc.attributed_pages += int((got & data[fq]).sum())
    acc.late_pages += int((late & got & data[fq]).sum())
    acc.hinted_pages += int((b.hint[pbio] > 0).sum())
    return rows


def trim_read_flush_rows(
    b: Bios, s: int, e: int, meta_map: Sequence[tuple[int, int, int]]
) -> list[dict[str, np.ndarray]]:
    """The rows of the trims and reads among bios ``[s, e)``, cut at the layout's ranges, and of
    their flushes (sub-row 0: before the write of their bio)."""
    other = s + np.flatnonzero(b.is_trim[s:e] | b.is_read[s:e])
    own, j, st, en, cls = split_by_meta(b.lpn[other], b.end[other], meta_map)
    ob = other[own]
    fb = s + np.flatnonzero(b.is_flush[s:e])
    return [
        _rows(ob, 1 + j, np.where(b.is_trim[ob], TRIM, READ), st, en - st, 0, 0, cls, 0),
        _rows(fb, 0, FLUSH, 0, 0, 0, 0, 0, 0),
    ]


def in_bio_order(parts: list[dict[str, np.ndarray]], b: Bios) -> dict[str, np.ndarray]:
    """The rows of ``parts`` by bio, then sub-row, with the time, hint and file class of their
    bio; ``fino`` and ``fhas`` (no file: 0 and False) kept for :func:`file_ids`."""
    cols = {c: np.concatenate([p.get(c, _no_file(c, len(p["bio"]))) for p in parts]) for c in parts[0]}
    order = np.lexsort((cols["sub"], cols["bio"]))
    rows = {c: v[order] for c, v in cols.items() if c not in ("sub",)}
    rows["ts_ns"] = b.ts[rows["bio"]].astype(np.uint64)
    rows["hint"] = b.hint[rows["bio"]]
    rows["file_class"] = np.zeros(len(order), dtype=np.uint16)
    del rows["bio"]
    return rows


def _no_file(column: str, n: int) -> np.ndarray:
    """The ``fino``/``fhas`` of ``n`` rows without a file."""
    return np.zeros(n, dtype=bool if column == "fhas" else np.uint64)


def _rows(
    bio: Any, sub: Any, op: Any, lpn: Any, pages: Any, pc: Any, file: Any, meta: Any, pid: Any
) -> dict[str, np.ndarray]:
    """Columns of some rows (scalars broadcast to the length of ``bio``) in their trace widths."""
    n = len(bio)
    cols = {"bio": bio, "sub": sub, "op": op, "lpn": lpn, "pages": pages, "pc": pc, "file": file,
            "meta": meta, "pid": pid}  # fmt: skip
    dtypes = {"bio": np.int64, "sub": np.int64, **COLUMN_DTYPES}
    return {c: np.broadcast_to(np.asarray(v), (n,)).astype(dtypes[c]) for c, v in cols.items()}


@dataclass
class RunIndex:
    """The runs of the captured file system (journal and metadata buffers belong to the block
    device) ordered by the time position of their bio (``pos``), for the pages of a run of bios."""

    pos: np.ndarray
    bio_page: np.ndarray
    pages: np.ndarray
    ino: np.ndarray
    index: np.ndarray

    @staticmethod
    def of(cap: bc.Capture, sorted_pos: np.ndarray) -> RunIndex:
        keep = np.flatnonzero(cap.runs["sdev"] == np.uint32(cap.dev))
        pos = sorted_pos[cap.runs["bio"][keep].astype(np.int64)]
        order = np.argsort(pos, kind="stable")  # a bio's runs stay in file order
        keep = keep[order]
        runs = cap.runs
        return RunIndex(
            pos[order],
            runs["bio_page"][keep].astype(np.int64),
            runs["pages"][keep].astype(np.int64),
            runs["ino"][keep],
            runs["index"][keep].astype(np.int64),
        )

    def file_pages(
        self, s: int, e: int, pbio: np.ndarray, k: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the written pages of bios ``[s, e)`` (bio ``pbio`` in time order, ``k``-th page of
        it): the inode and page index of the file page the capture saw there, and whether it saw
        one (the first run that covers it)."""
        r0, r1 = np.searchsorted(self.pos, [s, e])
        rown, rk = expand(self.bio_page[r0:r1], self.pages[r0:r1])
        rown += r0
        rkey = (self.pos[rown] << 32) | rk
        order = np.argsort(rkey, kind="stable")
        rkey = rkey[order]
        q = (pbio << 32) | k
        if not len(rkey):
            z = np.zeros(len(q), dtype=np.uint64)
            return z, z, np.zeros(len(q), dtype=bool)
        at = np.minimum(np.searchsorted(rkey, q), len(rkey) - 1)
        has = rkey[at] == q
        r = rown[order[at]]
        ino = np.where(has, self.ino[r], 0).astype(np.uint64)
        index = np.where(has, self.index[r] + k - self.bio_page[r], 0).astype(np.uint64)
        return ino, index, has


def file_ids(
    rows: dict[str, np.ndarray], inodes: list[np.ndarray], last_path: dict[int, int], paths: dict[int, str]
) -> dict[str, str]:
    """Each row's ``file``: a dense id per inode of the written pages (0 for rows without one),
    set from its ``fino``; and the ``pcstream.files`` table: each id named by the path of the
    inode's last write in the file trace."""
    inos = np.unique(np.concatenate([np.zeros(0, dtype=np.uint64), *inodes]))
    fhas, fino = rows.pop("fhas"), rows.pop("fino")
    fid = (np.searchsorted(inos, fino) + 1).astype(np.uint32)
    rows["file"] = np.where(fhas, fid, np.uint32(0))
    return {str(i + 1): paths.get(last_path.get(n, 0), f"(inode {n})") for i, n in enumerate(inos.tolist())}


def aged_rows(extents: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(lpn, pages) rows of an aged state: one write per extent, cut at 2^32 - 1 pages."""
    lpn, pages = [], []
    cap = (1 << 32) - 1
    for start, count in extents:
        while count > 0:
            n = min(count, cap)
            lpn.append(start)
            pages.append(n)
            start, count = start + n, count - n
    return np.asarray(lpn, dtype=np.uint64), np.asarray(pages, dtype=np.uint32)


def prepend_aged(trace: Path, extents: Sequence[tuple[int, int]]) -> None:
    """Put an aged state at the head of the block trace ``trace`` (rewritten in place, atomically):
    for a trace imported from tracefs, which the importer writes without one."""
    table = pq.read_table(trace)
    # The footer's key-value pairs: the embedded Arrow schema leaves out the large tables.
    meta = tracemeta.footer(trace)
    lpn, pages = aged_rows(extents)
    head = {"lpn": lpn, "pages": pages}
    columns = {
        name: np.concatenate([head.get(name, np.zeros(len(lpn))).astype(dtype), table[name].to_numpy()])
        for name, dtype in COLUMN_DTYPES.items()
    }
    meta[tracemeta.KEY_AGED_ROWS] = str(len(lpn))
    meta[tracemeta.KEY_AGED_PAGES] = str(int(pages.sum()))
    _write(trace, columns, meta)


def _write(out: Path, columns: dict[str, np.ndarray], meta: dict[str, str]) -> int:
    """Write the block trace ``out`` through the engine's writer (atomically, the footer's format
    keys its own), the PC table whole; returns its rows."""
    # Each column dropped once it is bytes: the rows are never held twice over.
    data = {name: np.ascontiguousarray(columns.pop(name), dtype=dtype.newbyteorder("<")).tobytes()
            for name, dtype in COLUMN_DTYPES.items()}  # fmt: skip
    return api.write_block_trace(str(out), data, meta, keep_unused_pcs=True)
