//! A strict walk over every page header of a Parquet file before the decoder reads its rows
//! ([`super::thrift`] says how the walk follows the decoder, and why).
//!
//! The decoder reads a column chunk's pages one header at a time, each header followed by its
//! page's bytes, until the chunk's length is used up; it skips an unknown header field by the
//! field's type, a list of booleans in one idle step per claimed element (a fuzzed data-page
//! header claiming 2^31 of them cost it seconds; nested, it could cost hours). [`check_pages`]
//! walks the same headers with the booleans of a chunk's headers limited to the chunk's bytes,
//! reading a small window per header (grown only for a long header), so it costs a few hundred
//! bytes of reading per page whatever the file's size.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use ::parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use ::parquet::file::reader::ChunkReader;
use bytes::Bytes;

use super::footer::STATISTICS;
use super::thrift::{corrupt, known, Bad, Kind, Walk, EMPTY, T_I32, T_STOP};

/// `PageHeader.compressed_page_size` (parquet.thrift id): the bytes of the page after its header.
const FIELD_COMPRESSED_SIZE: i16 = 3;
/// `PageHeader.crc`: the CRC32 of those bytes, as a signed i32.
pub(super) const FIELD_CRC: i16 = 4;
/// Bytes read for a header at first; a header longer than that is read again with a larger
/// window (headers carry a few numbers and, at most, a page's min/max statistics).
const FIRST_WINDOW: u64 = 256;

/// The page headers' structs as parquet.thrift gives them (enums are `i32`; their statistics
/// are the footer's `Statistics` struct).
const DATA_PAGE_HEADER: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (2, Kind::I32),
    (3, Kind::I32),
    (4, Kind::I32),
    (5, Kind::Struct(STATISTICS)),
];
const DICTIONARY_PAGE_HEADER: &[(i16, Kind)] = &[(1, Kind::I32), (2, Kind::I32), (3, Kind::Bool)];
const DATA_PAGE_HEADER_V2: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (2, Kind::I32),
    (3, Kind::I32),
    (4, Kind::I32),
    (5, Kind::I32),
    (6, Kind::I32),
    (7, Kind::Bool),
    (8, Kind::Struct(STATISTICS)),
];
const PAGE_HEADER: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (2, Kind::I32),
    (FIELD_COMPRESSED_SIZE, Kind::I32),
    (4, Kind::I32),
    (5, Kind::Struct(DATA_PAGE_HEADER)),
    (6, Kind::Struct(EMPTY)),
    (7, Kind::Struct(DICTIONARY_PAGE_HEADER)),
    (8, Kind::Struct(DATA_PAGE_HEADER_V2)),
];

/// Where the walk reads headers from: a positioned read, one system call per header on a file
/// (the decoder's `ChunkReader` duplicates and seeks the file for each read).
pub(crate) trait ReadAt: ChunkReader {
    /// `n` bytes at `at`, or `None` when they cannot be read (the decoder then says why).
    fn read_at(&self, at: u64, n: usize) -> Option<Bytes>;
}

impl ReadAt for File {
    fn read_at(&self, at: u64, n: usize) -> Option<Bytes> {
        let mut buf = vec![0; n];
        self.read_exact_at(&mut buf, at).ok()?;
        Some(Bytes::from(buf))
    }
}

impl ReadAt for Bytes {
    fn read_at(&self, at: u64, n: usize) -> Option<Bytes> {
        let at = usize::try_from(at).ok()?;
        (at.checked_add(n)? <= self.len()).then(|| self.slice(at..at + n))
    }
}

/// Refuse a file one of whose page headers is not what the decoder would read as written (the
/// message names the row group, the column and the byte). A chunk whose place in the file the
/// decoder could not read (beyond the file) is left to the decoder, which says so.
pub(crate) fn check_pages<T: ReadAt>(src: &T, meta: &ParquetMetaData) -> Result<(), String> {
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            check_chunk(src, col).map_err(|why| {
                format!(
                    "row group {g}, column {}: {why}",
                    col.column_path().string()
                )
            })?;
        }
    }
    Ok(())
}

/// The byte range of a column chunk; negative offsets or sizes are corrupt.
fn chunk_range(col: &ColumnChunkMetaData) -> Result<(u64, u64), String> {
    let start = col
        .dictionary_page_offset()
        .unwrap_or(col.data_page_offset());
    let len = col.compressed_size();
    match (u64::try_from(start), u64::try_from(len)) {
        (Ok(s), Ok(l)) => Ok((s, l)),
        _ => Err(format!(
            "the footer places the column chunk at byte {start} with {len} bytes"
        )),
    }
}

fn check_chunk<T: ReadAt>(src: &T, col: &ColumnChunkMetaData) -> Result<(), String> {
    let (start, len) = chunk_range(col)?;
    let Some(end) = start.checked_add(len).filter(|&e| e <= src.len()) else {
        return Ok(());
    };
    let (mut at, mut bools) = (start, len);
    while at < end {
        let left = end - at;
        let mut window = FIRST_WINDOW.min(left);
        loop {
            let Some(bytes) = src.read_at(at, window as usize) else {
                return Ok(());
            };
            let mut w = Walk::new(&bytes, left as usize, bools);
            match w.page_header() {
                Ok(head) => {
                    bools = w.bools_left;
                    let body = at + w.at as u64;
                    if let Some(stored) = head.crc {
                        // Unreadable bytes are left to the decoder, which says so.
                        let Some(page) = src.read_at(body, head.data as usize) else {
                            return Ok(());
                        };
                        verify_crc(&page, stored, at)?;
                    }
                    at = body + head.data;
                    break;
                }
                Err(Bad::Short) if window < left => window = (window * 4).min(left),
                Err(Bad::Corrupt(why)) => {
                    return Err(format!("the page header at byte {at} is corrupt: {why}"))
                }
                Err(Bad::Short | Bad::Children { .. }) => {
                    unreachable!("a window of the whole chunk, no schema in a page header")
                }
            }
        }
    }
    Ok(())
}

/// One page header as the walk read it: its top-level fields, and what the page after it holds.
pub(super) struct PageHead {
    /// (field id, type code, the value's bytes in the walked window), in file order; a
    /// boolean's value is in its type code and has no bytes.
    pub(super) fields: Vec<(i16, u8, Range<usize>)>,
    /// The page's bytes after the header.
    pub(super) data: u64,
    /// The page's CRC32 as written (`PageHeader.crc`), if any.
    pub(super) crc: Option<i32>,
}

impl Walk<'_> {
    /// A `PageHeader`, with the fields kept so that [`super::checksum`] can write it again.
    pub(super) fn page_header(&mut self) -> Result<PageHead, Bad> {
        let (mut last, mut data, mut crc) = (0, None, None);
        let mut fields = Vec::new();
        loop {
            let (id, ty) = self.field(last)?;
            if ty == T_STOP {
                break;
            }
            let from = self.at;
            match known(PAGE_HEADER, id) {
                Some(_) if id == FIELD_COMPRESSED_SIZE || id == FIELD_CRC => {
                    if ty != T_I32 {
                        let what = if id == FIELD_CRC {
                            "checksum"
                        } else {
                            "page size"
                        };
                        return corrupt(format!("the {what} is written as type code {ty}"));
                    }
                    let v = Some(self.zigzag()? as i32);
                    if id == FIELD_CRC {
                        crc = v;
                    } else {
                        data = v;
                    }
                }
                Some(kind) => self.value(kind, ty, 1)?,
                None => self.skip(ty, 1)?,
            }
            fields.push((id, ty, from..self.at));
            last = id;
        }
        match data.map(u64::try_from) {
            // The page's bytes are not read here: only that they fit in the chunk.
            Some(Ok(n)) if n <= self.remaining() => Ok(PageHead {
                fields,
                data: n,
                crc,
            }),
            Some(Ok(n)) => corrupt(format!("its page of {n} bytes runs past the column chunk")),
            Some(Err(_)) => corrupt("the page size is negative"),
            None => corrupt("the header gives no page size"),
        }
    }
}

/// Refuse page `bytes` (at byte `at`) whose CRC32 is not the `stored` one.
pub(super) fn verify_crc(bytes: &[u8], stored: i32, at: u64) -> Result<(), String> {
    let computed = crc32fast::hash(bytes);
    if computed == stored as u32 {
        return Ok(());
    }
    Err(format!(
        "the page at byte {at} fails its CRC32 checksum (stored {:08x}, computed {computed:08x}): the file is damaged; copy or write it again",
        stored as u32
    ))
}

#[cfg(test)]
mod tests {
    use super::super::thrift::{T_I32, T_LIST, T_TRUE};
    use super::*;
    use parquet::file::metadata::ParquetMetaDataReader;

    /// A small Parquet file of one Int64 column, as the writer makes it.
    fn written() -> Bytes {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch};
        use std::sync::Arc;
        let col: ArrayRef = Arc::new(Int64Array::from((0..1000).collect::<Vec<i64>>()));
        let batch = RecordBatch::try_from_iter([("x", col)]).unwrap();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(out)
    }

    fn check(file: &Bytes) -> Result<(), String> {
        let meta = ParquetMetaDataReader::new().parse_and_finish(file).unwrap();
        check_pages(file, &meta)
    }

    #[test]
    fn pages_the_writer_makes_pass() {
        check(&written()).unwrap();
    }

    /// Column chunk metadata for one INT64 column `x` placed at `start` with `len` bytes.
    fn meta(start: i64, len: i64) -> ParquetMetaData {
        use parquet::file::metadata::{FileMetaData, RowGroupMetaData};
        use parquet::schema::{parser::parse_message_type, types::SchemaDescriptor};
        use std::sync::Arc;
        let schema = Arc::new(SchemaDescriptor::new(Arc::new(
            parse_message_type("message m { required int64 x; }").unwrap(),
        )));
        let col = ColumnChunkMetaData::builder(schema.column(0))
            .set_data_page_offset(start)
            .set_total_compressed_size(len)
            .build()
            .unwrap();
        let rg = RowGroupMetaData::builder(schema.clone())
            .set_num_rows(1)
            .set_column_metadata(vec![col])
            .build()
            .unwrap();
        ParquetMetaData::new(FileMetaData::new(1, 1, None, None, schema, None), vec![rg])
    }

    /// A file of two data pages of 4 bytes at byte 4, the first header led by `field` (an
    /// absolute id, so the next field's id delta is unchanged).
    fn pages_with(field: &[u8]) -> (Bytes, ParquetMetaData) {
        // PageHeader { 1: type 0, 2: 4 bytes, 3: 4 bytes, 5: DataPageHeader { 1: 1 value,
        // 2-4: encodings 0 } }, then the page's 4 bytes.
        let header = [
            0x15, 0, 0x15, 8, 0x15, 8, 0x2c, 0x15, 2, 0x15, 0, 0x15, 0, 0x15, 0, 0, 0,
        ];
        let mut v = b"PAR1".to_vec();
        v.extend(field);
        v.extend(header);
        v.extend([1, 2, 3, 4]);
        v.extend(header);
        v.extend([1, 2, 3, 4]);
        let len = v.len() as i64 - 4;
        v.extend(b"tail");
        (Bytes::from(v), meta(4, len))
    }

    #[test]
    fn pages_as_written_pass_and_a_short_chunk_is_refused() {
        let (file, m) = pages_with(&[]);
        check_pages(&file, &m).unwrap();
        // The chunk ends inside the second page's bytes.
        let e = check_pages(&file, &meta(4, 40)).unwrap_err();
        assert!(
            e.contains("page of 4 bytes runs past the column chunk"),
            "{e}"
        );
    }

    #[test]
    fn a_header_list_of_booleans_beyond_the_chunk_is_refused() {
        // Field 0 (unknown): a list claiming 2^31 - 1 booleans.
        let (bad, m) = pages_with(&[T_LIST, 0, 0xf0 | T_TRUE, 0xff, 0xff, 0xff, 0xff, 0x07]);
        let e = check_pages(&bad, &m).unwrap_err();
        assert!(
            e.contains("row group 0, column x: the page header at byte 4"),
            "{e}"
        );
        assert!(e.contains("more than the bytes left"), "{e}");
        // 20 booleans claimed: within what the chunk's bytes could hold.
        let (ok, m) = pages_with(&[T_LIST, 0, 0xf0 | T_TRUE, 20]);
        check_pages(&ok, &m).unwrap();
        // The same unknown field holding three i32s is skipped, as the decoder skips it.
        let (ok, m) = pages_with(&[T_LIST, 0, (3 << 4) | T_I32, 2, 4, 6]);
        check_pages(&ok, &m).unwrap();
    }

    #[test]
    fn a_mistyped_page_size_is_refused() {
        // Field 3 (compressed_page_size) as a binary: the decoder would read a varint there.
        let (bad, m) = pages_with(&[0x08, 6, 0, 0]);
        let e = check_pages(&bad, &m).unwrap_err();
        assert!(e.contains("page size is written as type code 8"), "{e}");
    }

    #[test]
    fn the_data_page_header_found_by_fuzzing_is_refused() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/file_trace/hang-bool-list-skip.parquet");
        let file = Bytes::from(std::fs::read(path).unwrap());
        let e = check(&file).unwrap_err();
        assert!(e.contains("the page header at byte"), "{e}");
    }
}
