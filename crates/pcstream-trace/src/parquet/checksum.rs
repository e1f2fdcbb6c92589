//! CRC32 page checksums in every trace we write. The Parquet format puts a page's CRC32 (of its
//! bytes as stored, after the header) in `PageHeader.crc`; the `parquet` crate's writer leaves
//! it out. [`add_checksums`] copies a finished file with the field added to every page header:
//! each header grows by a few bytes, so every later offset moves, and the footer (column chunk
//! offsets and sizes, row group offsets) and the offset index (page locations) are written
//! again to match. Readers verify the checksums ([`super::pages`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use ::parquet::file::metadata::page_index::PageIndexProvider;
use ::parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
    ParquetMetaDataWriter, RowGroupMetaData,
};
use ::parquet::file::page_index::column_index::ColumnIndexMetaData;
use ::parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use ::parquet::file::writer::TrackedWrite;

use super::pages::{PageHead, FIELD_CRC};
use super::thrift::{Bad, Walk, T_I32, T_STOP};
use crate::error::one_line;

/// Bytes buffered between the copy and the output file.
const WRITE_BUFFER: usize = 1 << 20;

/// Where each page of a column chunk went: (old offset, new offset, header growth in bytes).
type Moves = Vec<(u64, u64, u64)>;

/// The offset index written again with the pages' new places; the column index is unchanged.
#[derive(Debug)]
struct Moved {
    old: Option<Arc<dyn PageIndexProvider>>,
    offsets: Vec<Vec<Option<OffsetIndexMetaData>>>,
}

impl PageIndexProvider for Moved {
    fn has_offset_indexes(&self) -> bool {
        self.offsets.iter().flatten().any(Option::is_some)
    }
    fn has_column_indexes(&self) -> bool {
        self.old.as_ref().is_some_and(|p| p.has_column_indexes())
    }
    fn column_index(&self, g: usize, c: usize) -> Option<&ColumnIndexMetaData> {
        self.old.as_ref()?.column_index(g, c)
    }
    fn offset_index(&self, g: usize, c: usize) -> Option<&OffsetIndexMetaData> {
        self.offsets.get(g)?.get(c)?.as_ref()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Copy the Parquet file `src` to `dst` with a CRC32 in every page header (see the module
/// documentation). `Err` says what failed, on one line. Public for the benchmark of its cost.
pub fn add_checksums(src: &Path, dst: &Path) -> Result<(), String> {
    let file = File::open(src).map_err(one_line)?;
    let meta = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .parse_and_finish(&file)
        .map_err(one_line)?;
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, File::create(dst).map_err(one_line)?);
    let mut w = TrackedWrite::new(&mut out);
    w.write_all(b"PAR1").map_err(one_line)?;
    let mut copy = Copy {
        file: &file,
        at: 4,
        moves: Vec::new(),
    };
    let mut groups = Vec::new();
    let mut offsets = Vec::new();
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let (group, index) = copy
            .row_group(&meta, g, rg, &mut w)
            .map_err(|why| format!("row group {g}: {why}"))?;
        groups.push(group);
        offsets.push(index);
    }
    let tail = data_end(&meta, footer_start(&file)?);
    copy.gap(tail, &mut w)?;
    let moved = Moved {
        old: meta.page_index().cloned(),
        offsets,
    };
    let meta = meta
        .into_builder()
        .set_row_groups(groups)
        .set_page_index(Some(Arc::new(moved)))
        .build();
    ParquetMetaDataWriter::new_with_tracked(w, &meta)
        .with_preserve_page_index_locations(false)
        .finish()
        .map_err(one_line)?;
    out.flush().map_err(one_line)
}

/// Where the footer of `file` starts: its length is in the 4 bytes before the closing magic.
fn footer_start(file: &File) -> Result<u64, String> {
    let len = file.metadata().map_err(one_line)?.len();
    let mut tail = [0; 8];
    file.read_exact_at(&mut tail, len.saturating_sub(8))
        .map_err(one_line)?;
    let footer = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes"));
    Ok(len.saturating_sub(8 + u64::from(footer)))
}

/// Where the row groups' bytes end in `meta`'s file: the page indexes, or the footer (at
/// `footer`), follow them.
fn data_end(meta: &ParquetMetaData, footer: u64) -> u64 {
    let indexes = meta
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .flat_map(|c| {
            [c.column_index_offset(), c.offset_index_offset()]
                .into_iter()
                .flatten()
        });
    indexes
        .filter_map(|o| u64::try_from(o).ok())
        .fold(footer, u64::min)
}

/// The copy in progress: the input and how far it has been copied.
struct Copy<'a> {
    file: &'a File,
    at: u64,
    moves: Moves,
}

impl Copy<'_> {
    /// Copy the input's bytes from where the copy is to `to` unchanged.
    fn gap<W: Write>(&mut self, to: u64, w: &mut TrackedWrite<W>) -> Result<(), String> {
        if to < self.at {
            return Err(format!(
                "the column chunks overlap or are out of order at byte {to}"
            ));
        }
        let bytes = self.read(self.at, to - self.at)?;
        w.write_all(&bytes).map_err(one_line)?;
        self.at = to;
        Ok(())
    }

    fn read(&self, at: u64, n: u64) -> Result<Vec<u8>, String> {
        let mut buf = vec![0; usize::try_from(n).map_err(one_line)?];
        self.file.read_exact_at(&mut buf, at).map_err(one_line)?;
        Ok(buf)
    }

    /// Copy row group `g` of `meta`; its metadata and offset index with the new places.
    fn row_group<W: Write>(
        &mut self,
        meta: &ParquetMetaData,
        g: usize,
        rg: &RowGroupMetaData,
        w: &mut TrackedWrite<W>,
    ) -> Result<(RowGroupMetaData, Vec<Option<OffsetIndexMetaData>>), String> {
        let (mut cols, mut index, mut grown) = (Vec::new(), Vec::new(), 0);
        let mut first = None;
        for (c, col) in rg.columns().iter().enumerate() {
            let start = u64::try_from(
                col.dictionary_page_offset()
                    .unwrap_or(col.data_page_offset()),
            )
            .map_err(one_line)?;
            let len = u64::try_from(col.compressed_size()).map_err(one_line)?;
            self.gap(start, w)?;
            let new_start = w.bytes_written() as u64;
            first.get_or_insert(new_start);
            let chunk = self.read(start, len)?;
            self.moves = write_chunk(&chunk, start, new_start, w)
                .map_err(|why| format!("column {}: {why}", col.column_path().string()))?;
            self.at = start + len;
            let growth = w.bytes_written() as u64 - new_start - len;
            grown += growth;
            cols.push(self.moved_column(col, growth)?);
            let old = meta.page_index().and_then(|p| p.offset_index(g, c));
            index.push(old.map(|o| self.moved_index(o)));
        }
        let mut b = rg
            .clone()
            .into_builder()
            .set_column_metadata(cols)
            .set_total_byte_size(rg.total_byte_size() + grown as i64);
        if let Some(f) = first {
            b = b.set_file_offset(f as i64);
        }
        Ok((b.build().map_err(one_line)?, index))
    }

    /// The new offset of the page that was at `old`.
    fn new_place(&self, old: i64) -> Result<i64, String> {
        self.moves
            .iter()
            .find(|m| m.0 as i64 == old)
            .map(|m| m.1 as i64)
            .ok_or_else(|| format!("no page starts at byte {old}"))
    }

    fn moved_column(
        &self,
        col: &ColumnChunkMetaData,
        growth: u64,
    ) -> Result<ColumnChunkMetaData, String> {
        let growth = growth as i64;
        let dict = match col.dictionary_page_offset() {
            Some(o) => Some(self.new_place(o)?),
            None => None,
        };
        // This crate writes no bloom filters; one left at its old place would be wrong.
        col.clone()
            .into_builder()
            .set_dictionary_page_offset(dict)
            .set_data_page_offset(self.new_place(col.data_page_offset())?)
            .set_total_compressed_size(col.compressed_size() + growth)
            .set_total_uncompressed_size(col.uncompressed_size() + growth)
            .set_bloom_filter_offset(None)
            .set_bloom_filter_length(None)
            .build()
            .map_err(one_line)
    }

    fn moved_index(&self, o: &OffsetIndexMetaData) -> OffsetIndexMetaData {
        let page_locations = o
            .page_locations()
            .iter()
            .map(|p| {
                let m = self.moves.iter().find(|m| m.0 as i64 == p.offset);
                PageLocation {
                    offset: m.map_or(p.offset, |m| m.1 as i64),
                    compressed_page_size: p.compressed_page_size + m.map_or(0, |m| m.2 as i32),
                    first_row_index: p.first_row_index,
                }
            })
            .collect();
        OffsetIndexMetaData {
            page_locations,
            unencoded_byte_array_data_bytes: o.unencoded_byte_array_data_bytes.clone(),
        }
    }
}

/// Write the pages of `chunk` (from byte `old` of the input) with checksums at byte `new` of
/// the output; where each page went.
fn write_chunk<W: Write>(
    chunk: &[u8],
    old: u64,
    new: u64,
    w: &mut TrackedWrite<W>,
) -> Result<Moves, String> {
    let (mut at, mut moves, mut header) = (0usize, Vec::new(), Vec::new());
    let mut bools = chunk.len() as u64;
    while at < chunk.len() {
        let rest = &chunk[at..];
        let mut walk = Walk::new(rest, rest.len(), bools);
        let head = walk.page_header().map_err(|e| match e {
            Bad::Corrupt(why) => format!(
                "the page header at byte {} is corrupt: {why}",
                old + at as u64
            ),
            Bad::Short | Bad::Children { .. } => "a page header ends early".to_string(),
        })?;
        bools = walk.bools_left;
        let body = &rest[walk.at..walk.at + head.data as usize];
        header.clear();
        encode_header(&mut header, rest, &head, crc32fast::hash(body) as i32);
        let place = w.bytes_written() as u64;
        moves.push((old + at as u64, place, (header.len() - walk.at) as u64));
        w.write_all(&header).map_err(one_line)?;
        w.write_all(body).map_err(one_line)?;
        at += walk.at + body.len();
    }
    debug_assert!(moves.first().is_none_or(|m| m.1 == new));
    Ok(moves)
}

/// `head` (walked over `bytes`) in Thrift's compact protocol with `crc` as its field 4, the
/// other fields' values copied as they were.
fn encode_header(out: &mut Vec<u8>, bytes: &[u8], head: &PageHead, crc: i32) {
    let mut last = 0;
    let put_crc = |out: &mut Vec<u8>, last: &mut i16| {
        field_header(out, *last, FIELD_CRC, T_I32);
        varint(out, ((crc << 1) ^ (crc >> 31)) as u32 as u64);
        *last = FIELD_CRC;
    };
    let mut done = false;
    for (id, ty, value) in &head.fields {
        if *id == FIELD_CRC {
            continue;
        }
        if !done && *id > FIELD_CRC {
            put_crc(out, &mut last);
            done = true;
        }
        field_header(out, last, *id, *ty);
        out.extend_from_slice(&bytes[value.clone()]);
        last = *id;
    }
    if !done {
        put_crc(out, &mut last);
    }
    out.push(T_STOP);
}

/// A compact-protocol field header: the id as a delta from `last` when it fits in 4 bits.
fn field_header(out: &mut Vec<u8>, last: i16, id: i16, ty: u8) {
    match id.checked_sub(last) {
        Some(d @ 1..=15) => out.push(((d as u8) << 4) | ty),
        _ => {
            out.push(ty);
            varint(out, ((id << 1) ^ (id >> 15)) as u16 as u64);
        }
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_gets_its_checksum_as_field_4() {
        // PageHeader { 1: 0, 2: 4, 3: 4, 5: DataPageHeader { 1: 1, 2-4: 0 } }.
        let header = [
            0x15, 0, 0x15, 8, 0x15, 8, 0x2c, 0x15, 2, 0x15, 0, 0x15, 0, 0x15, 0, 0, 0,
        ];
        // The page's 4 bytes follow the header.
        let mut walk = Walk::new(&header, header.len() + 4, 16);
        let head = walk.page_header().ok().unwrap();
        assert_eq!((head.data, head.crc), (4, None));
        let mut out = Vec::new();
        encode_header(&mut out, &header, &head, -2);
        // Field 4 (delta 1, i32) holding zigzag(-2) = 3; field 5 now a delta of 1.
        let mut want = vec![0x15, 0, 0x15, 8, 0x15, 8, 0x15, 3, 0x1c];
        want.extend(&header[7..]);
        assert_eq!(out, want);
        let mut walk = Walk::new(&out, out.len() + 4, 16);
        let again = walk.page_header().ok().unwrap();
        assert_eq!((again.data, again.crc, walk.at), (4, Some(-2), out.len()));
        // Written again, the checksum is replaced, not repeated.
        let mut twice = Vec::new();
        encode_header(&mut twice, &out, &again, -2);
        assert_eq!(twice, out);
    }

    /// A file of two row groups, an integer and a dictionary-encoded string column, small
    /// pages, the offset index on: written, then copied with checksums.
    fn summed(dir: &Path) -> (std::path::PathBuf, arrow_array::RecordBatch) {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use parquet::file::properties::WriterProperties;
        let n = 5000;
        let ints: ArrayRef = Arc::new(Int64Array::from((0..n).map(|i| i * 7).collect::<Vec<_>>()));
        let names: ArrayRef = Arc::new(StringArray::from(
            (0..n).map(|i| format!("op{}", i % 5)).collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_from_iter([("x", ints), ("op", names)]).unwrap();
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(300)
            .set_write_batch_size(100)
            .set_max_row_group_row_count(Some(3000))
            .build();
        let (plain, out) = (dir.join("plain.parquet"), dir.join("summed.parquet"));
        let f = File::create(&plain).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        add_checksums(&plain, &out).unwrap();
        (out, batch)
    }

    #[test]
    fn every_page_gets_a_checksum_and_the_offsets_follow() {
        use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
        let dir = tempfile::tempdir().unwrap();
        let (out, batch) = summed(dir.path());
        let bytes = bytes::Bytes::from(std::fs::read(&out).unwrap());
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes)
            .unwrap();
        assert_eq!(meta.num_row_groups(), 2);
        let mut pages = 0;
        for (g, rg) in meta.row_groups().iter().enumerate() {
            for (c, col) in rg.columns().iter().enumerate() {
                let start = col
                    .dictionary_page_offset()
                    .unwrap_or(col.data_page_offset()) as usize;
                let end = start + col.compressed_size() as usize;
                let mut at = start;
                let mut starts = Vec::new();
                while at < end {
                    let mut walk = Walk::new(&bytes[at..end], end - at, 1 << 20);
                    let head = walk.page_header().ok().unwrap();
                    let body = &bytes[at + walk.at..at + walk.at + head.data as usize];
                    assert_eq!(head.crc, Some(crc32fast::hash(body) as i32));
                    starts.push((at as i64, (walk.at + body.len()) as i32));
                    at += walk.at + body.len();
                    pages += 1;
                }
                assert_eq!(at, end);
                // The offset index names the data pages (the dictionary page, if any, first).
                let index = meta.page_index().unwrap().offset_index(g, c).unwrap();
                let located: Vec<_> = index
                    .page_locations()
                    .iter()
                    .map(|p| (p.offset, p.compressed_page_size))
                    .collect();
                assert_eq!(located, starts[starts.len() - located.len()..]);
            }
        }
        assert!(pages > 20, "{pages} pages");
        let opts = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let r = ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, opts)
            .unwrap()
            .with_batch_size(10_000)
            .build()
            .unwrap();
        let read: Vec<_> = r.map(|b| b.unwrap()).collect();
        // One batch spans both row groups.
        assert_eq!(read, vec![batch]);
    }

    #[test]
    fn a_file_of_no_rows_is_copied_too() {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch};
        let dir = tempfile::tempdir().unwrap();
        let (plain, out) = (dir.path().join("p.parquet"), dir.path().join("s.parquet"));
        let col: ArrayRef = Arc::new(Int64Array::from(Vec::<i64>::new()));
        let batch = RecordBatch::try_from_iter([("x", col)]).unwrap();
        let w = parquet::arrow::ArrowWriter::try_new(
            File::create(&plain).unwrap(),
            batch.schema(),
            None,
        );
        w.unwrap().close().unwrap();
        add_checksums(&plain, &out).unwrap();
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(std::fs::read(&out).unwrap()))
            .unwrap();
        assert_eq!(
            (meta.num_row_groups(), meta.file_metadata().num_rows()),
            (0, 0)
        );
    }
}
