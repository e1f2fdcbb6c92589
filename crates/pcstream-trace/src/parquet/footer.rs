//! A strict walk over a Parquet footer before the decoder reads it ([`super::thrift`] says how
//! the walk follows the decoder and why it is strict and linear).
//!
//! Besides what the walk refuses everywhere (mistyped fields, lists longer than the footer,
//! booleans beyond its bytes), the footer's schema gets one check of its own: the decoder
//! reserves room for a schema node's children from the node's `num_children` field as written,
//! so a corrupt footer claiming 2^31 children makes it ask for 16 GiB at once (found by
//! fuzzing; the allocation aborts the process where memory is limited). A node cannot have more
//! children than the schema has elements, so [`check_footer`] refuses a count beyond that.

use ::parquet::file::reader::ChunkReader;
use bytes::Bytes;

use super::thrift::{corrupt, known, Bad, Kind, Walk, EMPTY, T_LIST, T_STOP, T_STRUCT};

/// `FileMetaData.schema` and `.row_groups` (parquet.thrift ids): the decoder builds the schema
/// from the first `schema` field and skips later ones; it refuses row groups before a schema.
const FIELD_SCHEMA: i16 = 2;
const FIELD_ROW_GROUPS: i16 = 4;
/// `SchemaElement.num_children`.
const FIELD_NUM_CHILDREN: i16 = 5;

/// The structs the decoder reads by id, as parquet.thrift gives them (enums are `i32`, unions
/// structs; the encryption fields are unknown to this build's decoder, which skips them).
const DECIMAL: &[(i16, Kind)] = &[(1, Kind::I32), (2, Kind::I32)];
const TIME_UNIT: &[(i16, Kind)] = &[
    (1, Kind::Struct(EMPTY)),
    (2, Kind::Struct(EMPTY)),
    (3, Kind::Struct(EMPTY)),
];
const TIMESTAMP: &[(i16, Kind)] = &[(1, Kind::Bool), (2, Kind::Struct(TIME_UNIT))];
const INT: &[(i16, Kind)] = &[(1, Kind::Byte), (2, Kind::Bool)];
const VARIANT: &[(i16, Kind)] = &[(1, Kind::Byte)];
const GEOMETRY: &[(i16, Kind)] = &[(1, Kind::Binary)];
const GEOGRAPHY: &[(i16, Kind)] = &[(1, Kind::Binary), (2, Kind::I32)];
const LOGICAL_TYPE: &[(i16, Kind)] = &[
    (1, Kind::Struct(EMPTY)),
    (2, Kind::Struct(EMPTY)),
    (3, Kind::Struct(EMPTY)),
    (4, Kind::Struct(EMPTY)),
    (5, Kind::Struct(DECIMAL)),
    (6, Kind::Struct(EMPTY)),
    (7, Kind::Struct(TIMESTAMP)),
    (8, Kind::Struct(TIMESTAMP)),
    (10, Kind::Struct(INT)),
    (11, Kind::Struct(EMPTY)),
    (12, Kind::Struct(EMPTY)),
    (13, Kind::Struct(EMPTY)),
    (14, Kind::Struct(EMPTY)),
    (15, Kind::Struct(EMPTY)),
    (16, Kind::Struct(VARIANT)),
    (17, Kind::Struct(GEOMETRY)),
    (18, Kind::Struct(GEOGRAPHY)),
    (19, Kind::Struct(EMPTY)),
];
const SCHEMA_ELEMENT: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (2, Kind::I32),
    (3, Kind::I32),
    (4, Kind::Binary),
    (FIELD_NUM_CHILDREN, Kind::I32),
    (6, Kind::I32),
    (7, Kind::I32),
    (8, Kind::I32),
    (9, Kind::I32),
    (10, Kind::Struct(LOGICAL_TYPE)),
];
const KEY_VALUE: &[(i16, Kind)] = &[(1, Kind::Binary), (2, Kind::Binary)];
const COLUMN_ORDER: &[(i16, Kind)] = &[
    (1, Kind::Struct(EMPTY)),
    (2, Kind::Struct(EMPTY)),
    (3, Kind::Struct(EMPTY)),
];
/// `Statistics`, in column metadata and (as parquet.thrift reuses it) in data-page headers.
pub(super) const STATISTICS: &[(i16, Kind)] = &[
    (1, Kind::Binary),
    (2, Kind::Binary),
    (3, Kind::I64),
    (4, Kind::I64),
    (5, Kind::Binary),
    (6, Kind::Binary),
    (7, Kind::Bool),
    (8, Kind::Bool),
    (9, Kind::I64),
];
const PAGE_ENCODING_STATS: &[(i16, Kind)] = &[(1, Kind::I32), (2, Kind::I32), (3, Kind::I32)];
const SIZE_STATISTICS: &[(i16, Kind)] = &[
    (1, Kind::I64),
    (2, Kind::List(&Kind::I64)),
    (3, Kind::List(&Kind::I64)),
];
const BOUNDING_BOX: &[(i16, Kind)] = &[
    (1, Kind::Double),
    (2, Kind::Double),
    (3, Kind::Double),
    (4, Kind::Double),
    (5, Kind::Double),
    (6, Kind::Double),
    (7, Kind::Double),
    (8, Kind::Double),
];
const GEOSPATIAL_STATISTICS: &[(i16, Kind)] =
    &[(1, Kind::Struct(BOUNDING_BOX)), (2, Kind::List(&Kind::I32))];
const COLUMN_METADATA: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (2, Kind::List(&Kind::I32)),
    (3, Kind::List(&Kind::Binary)),
    (4, Kind::I32),
    (5, Kind::I64),
    (6, Kind::I64),
    (7, Kind::I64),
    (8, Kind::List(&Kind::Struct(KEY_VALUE))),
    (9, Kind::I64),
    (10, Kind::I64),
    (11, Kind::I64),
    (12, Kind::Struct(STATISTICS)),
    (13, Kind::List(&Kind::Struct(PAGE_ENCODING_STATS))),
    (14, Kind::I64),
    (15, Kind::I32),
    (16, Kind::Struct(SIZE_STATISTICS)),
    (17, Kind::Struct(GEOSPATIAL_STATISTICS)),
];
const COLUMN_CHUNK: &[(i16, Kind)] = &[
    (1, Kind::Binary),
    (2, Kind::I64),
    (3, Kind::Struct(COLUMN_METADATA)),
    (4, Kind::I64),
    (5, Kind::I32),
    (6, Kind::I64),
    (7, Kind::I32),
];
const SORTING_COLUMN: &[(i16, Kind)] = &[(1, Kind::I32), (2, Kind::Bool), (3, Kind::Bool)];
const ROW_GROUP: &[(i16, Kind)] = &[
    (1, Kind::List(&Kind::Struct(COLUMN_CHUNK))),
    (2, Kind::I64),
    (3, Kind::I64),
    (4, Kind::List(&Kind::Struct(SORTING_COLUMN))),
    (5, Kind::I64),
    (6, Kind::I64),
    (7, Kind::I16),
];
/// `FileMetaData` but its schema (walked on its own, for the child counts).
const FILE_METADATA: &[(i16, Kind)] = &[
    (1, Kind::I32),
    (3, Kind::I64),
    (FIELD_ROW_GROUPS, Kind::List(&Kind::Struct(ROW_GROUP))),
    (5, Kind::List(&Kind::Struct(KEY_VALUE))),
    (6, Kind::Binary),
    (7, Kind::List(&Kind::Struct(COLUMN_ORDER))),
];

/// The 4 bytes a Parquet file starts and ends with.
const MAGIC: [u8; 4] = *b"PAR1";

/// The footer of `src`, when it has the Parquet tail (`len` + `PAR1`); `None` otherwise (the
/// decoder then says what is wrong).
fn footer_bytes<T: ChunkReader>(src: &T) -> Option<Bytes> {
    let len = src.len();
    if len < 12 {
        return None;
    }
    let tail = src.get_bytes(len - 8, 8).ok()?;
    if tail[4..] != MAGIC {
        return None;
    }
    let n = u32::from_le_bytes(tail[..4].try_into().ok()?) as u64;
    if n + 8 > len {
        return None;
    }
    src.get_bytes(len - 8 - n, n as usize).ok()
}

/// Refuse a footer whose schema gives a node more children than the schema has elements, or
/// whose Thrift is not what the decoder would read as written (the message names the element
/// or the byte). A file without the Parquet tail is left to the decoder.
pub(crate) fn check_footer<T: ChunkReader>(src: &T) -> Result<(), String> {
    let Some(footer) = footer_bytes(src) else {
        return Ok(());
    };
    let mut w = Walk::new(&footer, footer.len(), footer.len() as u64);
    match w.file_metadata() {
        // The decoder reads only the closing magic; a damaged opening one is damage all the same.
        Ok(()) if src.get_bytes(0, 4).ok().as_deref() != Some(&MAGIC[..]) => {
            Err("the file does not start with the Parquet magic PAR1 (damaged or not Parquet)".into())
        }
        Ok(()) => Ok(()),
        Err(Bad::Children {
            element,
            claimed,
            elements,
        }) => Err(format!(
            "the footer's schema element {element} claims {claimed} children, more than the {elements} elements of the schema"
        )),
        Err(Bad::Corrupt(why)) => Err(format!(
            "the footer is corrupt at byte {} of {}: {why}",
            w.at,
            footer.len()
        )),
        Err(Bad::Short) => unreachable!("the walk's window is the whole footer"),
    }
}

impl Walk<'_> {
    /// `FileMetaData`, its first schema walked for the child counts.
    fn file_metadata(&mut self) -> Result<(), Bad> {
        let (mut last, mut have_schema) = (0, false);
        loop {
            let (id, ty) = self.field(last)?;
            if ty == T_STOP {
                return Ok(());
            }
            match id {
                FIELD_SCHEMA if !have_schema => {
                    if ty != T_LIST {
                        return corrupt(format!("the schema is written as type code {ty}"));
                    }
                    self.schema()?;
                    have_schema = true;
                }
                // The decoder refuses row groups before a schema, in its own words.
                FIELD_ROW_GROUPS if !have_schema => return Ok(()),
                _ => match known(FILE_METADATA, id) {
                    Some(kind) => self.value(kind, ty, 1)?,
                    None => self.skip(ty, 1)?,
                },
            }
            last = id;
        }
    }

    fn schema(&mut self) -> Result<(), Bad> {
        let (elements, et) = self.list()?;
        if elements > 0 && et != T_STRUCT {
            return corrupt(format!("the schema list has the element type code {et}"));
        }
        for element in 0..elements {
            let mut last = 0;
            loop {
                let (id, ty) = self.field(last)?;
                if ty == T_STOP {
                    break;
                }
                match known(SCHEMA_ELEMENT, id) {
                    Some(kind) if id == FIELD_NUM_CHILDREN => {
                        if !kind.accepts(ty) {
                            return corrupt(format!(
                                "schema element {element} has its child count as type code {ty}"
                            ));
                        }
                        let claimed = self.zigzag()? as i32;
                        if claimed < 0 || claimed as u64 >= elements {
                            return Err(Bad::Children {
                                element,
                                claimed: claimed.into(),
                                elements,
                            });
                        }
                    }
                    Some(kind) => self.value(kind, ty, 2)?,
                    None => self.skip(ty, 2)?,
                }
                last = id;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::thrift::{T_BINARY, T_I32, T_TRUE};
    use super::*;

    /// A footer in compact Thrift: FileMetaData { 2: schema = [root with `children`, one leaf] }.
    fn parquet_with_root_children(children: i64) -> Bytes {
        fn varint(mut v: u64, out: &mut Vec<u8>) {
            while v >= 0x80 {
                out.push((v as u8 & 0x7f) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let zz = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        let mut f = vec![(2 << 4) | T_LIST, (2 << 4) | T_STRUCT];
        // root: 4: name "r", 5: num_children
        f.extend([(4 << 4) | T_BINARY, 1, b'r', (1 << 4) | T_I32]);
        varint(zz(children), &mut f);
        f.push(T_STOP);
        // leaf: 1: type = 2 (INT64), 3: repetition 0, 4: name "x"
        f.extend([
            (1 << 4) | T_I32,
            4,
            (2 << 4) | T_I32,
            0,
            (1 << 4) | T_BINARY,
            1,
            b'x',
        ]);
        f.push(T_STOP);
        f.push(T_STOP);
        let mut file = b"PAR1".to_vec();
        file.extend(&f);
        file.extend((f.len() as u32).to_le_bytes());
        file.extend(b"PAR1");
        Bytes::from(file)
    }

    #[test]
    fn a_child_count_beyond_the_schema_is_refused() {
        assert!(check_footer(&parquet_with_root_children(1)).is_ok());
        let e = check_footer(&parquet_with_root_children(i32::MAX.into())).unwrap_err();
        assert!(
            e.contains("claims 2147483647 children") && e.contains("2 elements"),
            "{e}"
        );
        assert!(check_footer(&parquet_with_root_children(-1)).is_err());
    }

    /// `footer` (compact Thrift) between a Parquet head and tail.
    fn parquet_with_footer(footer: &[u8]) -> Bytes {
        let mut file = b"PAR1".to_vec();
        file.extend(footer);
        file.extend((footer.len() as u32).to_le_bytes());
        file.extend(b"PAR1");
        Bytes::from(file)
    }

    #[test]
    fn a_list_of_booleans_longer_than_the_footer_is_refused() {
        // FileMetaData { 10 (unknown): list<bool> of 2^31 - 1 elements }: the decoder would
        // skip it in 2^31 idle steps; written, it would take as many bytes.
        let f = [
            (10 << 4) | T_LIST,
            0xf0 | T_TRUE,
            0xff,
            0xff,
            0xff,
            0xff,
            0x07,
            T_STOP,
        ];
        let e = check_footer(&parquet_with_footer(&f)).unwrap_err();
        assert!(e.contains("claims 2147483647 elements"), "{e}");
        // The same list with its elements written is followed.
        let f = [(10 << 4) | T_LIST, (2 << 4) | T_TRUE, 1, 0, T_STOP];
        assert!(check_footer(&parquet_with_footer(&f)).is_ok());
    }

    #[test]
    fn a_known_field_written_with_another_type_is_refused() {
        // Schema element 0 with its name (binary) written as an i32: the decoder would read a
        // length and bytes where the header says a varint, so the walk would lose step.
        let f = [
            (2 << 4) | T_LIST,
            (1 << 4) | T_STRUCT,
            (4 << 4) | T_I32,
            2,
            T_STOP,
            T_STOP,
        ];
        let e = check_footer(&parquet_with_footer(&f)).unwrap_err();
        assert!(e.contains("types binary is written as type code 5"), "{e}");
        // The child count written as a binary.
        let f = [
            (2 << 4) | T_LIST,
            (1 << 4) | T_STRUCT,
            (5 << 4) | T_BINARY,
            2,
            0,
            0,
            T_STOP,
            T_STOP,
        ];
        let e = check_footer(&parquet_with_footer(&f)).unwrap_err();
        assert!(e.contains("child count as type code 8"), "{e}");
        // An unknown field is skipped by its header, as the decoder skips it.
        let f = [
            (2 << 4) | T_LIST,
            (1 << 4) | T_STRUCT,
            (0xb << 4) | T_BINARY,
            2,
            0,
            0,
            T_STOP,
            T_STOP,
        ];
        assert!(check_footer(&parquet_with_footer(&f)).is_ok());
    }

    #[test]
    fn a_footer_cut_inside_the_schema_is_refused_with_its_offset() {
        let full = parquet_with_root_children(1);
        let footer = &full[4..full.len() - 8];
        let e = check_footer(&parquet_with_footer(&footer[..6])).unwrap_err();
        assert!(
            e.contains("at byte 6 of 6") && e.contains("ends inside"),
            "{e}"
        );
    }

    /// Footers as the Parquet writer makes them, with every logical type a schema can carry
    /// here, pass the walk (a strict walk must refuse only damaged footers).
    #[test]
    fn footers_the_writer_makes_pass() {
        use arrow_array::types::Int32Type;
        use arrow_array::RecordBatch;
        use arrow_array::{
            ArrayRef, BooleanArray, Date32Array, Decimal128Array, Int8Array, ListArray,
            StringArray, Time64MicrosecondArray, TimestampNanosecondArray, UInt16Array,
        };
        use std::sync::Arc;
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("s", Arc::new(StringArray::from(vec!["a"]))),
            ("d", Arc::new(Date32Array::from(vec![1]))),
            (
                "t",
                Arc::new(TimestampNanosecondArray::from(vec![1]).with_timezone("UTC")),
            ),
            ("tm", Arc::new(Time64MicrosecondArray::from(vec![1]))),
            ("i8", Arc::new(Int8Array::from(vec![1]))),
            ("u16", Arc::new(UInt16Array::from(vec![1]))),
            ("b", Arc::new(BooleanArray::from(vec![true]))),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from(vec![1])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
            ),
            (
                "l",
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1)]),
                ])),
            ),
        ];
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
            "k".to_string(),
            "v".to_string(),
        ));
        w.write(&batch).unwrap();
        w.close().unwrap();
        check_footer(&Bytes::from(out)).unwrap();
    }

    /// Every committed fuzz input: the schema crash inputs and the damaged opening magic are
    /// refused, the valid traces pass (the other crash inputs are past the schema, where the
    /// decoder bounds its lists itself; the other refused inputs have sound footers).
    #[test]
    fn the_fuzz_corpus_crashes_are_refused_and_its_traces_pass() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
        let mut seen = 0;
        for kind in ["block_trace", "file_trace"] {
            for entry in std::fs::read_dir(corpus.join(kind)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let got = check_footer(&Bytes::from(std::fs::read(&path).unwrap()));
                if name.starts_with("crash-schema-") {
                    assert!(got.is_err(), "{name} passes");
                } else if name == "refused-head-magic.parquet" {
                    assert!(got.unwrap_err().contains("magic PAR1"), "{name}");
                } else if !["crash", "hang", "refused"]
                    .iter()
                    .any(|p| name.starts_with(p))
                {
                    assert!(got.is_ok(), "{name}: {got:?}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen} corpus files");
    }

    /// The footer on which the decoder's boolean-list skip spun (found by fuzzing) is refused.
    #[test]
    fn the_boolean_list_footer_found_by_fuzzing_is_refused() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/file_trace/hang-bool-list-skip-footer.parquet");
        let e = check_footer(&Bytes::from(std::fs::read(path).unwrap())).unwrap_err();
        assert!(e.starts_with("the footer is corrupt at byte"), "{e}");
    }

    #[test]
    fn files_without_the_parquet_tail_are_left_to_the_decoder() {
        assert!(check_footer(&Bytes::from_static(b"not parquet at all")).is_ok());
        assert!(check_footer(&Bytes::from_static(b"")).is_ok());
    }
}
