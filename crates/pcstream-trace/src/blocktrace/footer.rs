//! A bounded look at a Parquet footer's schema before the decoder builds it.
//!
//! The Parquet decoder reserves room for a schema node's children from the node's
//! `num_children` field as written: a corrupt footer claiming 2^31 children makes it ask for
//! 16 GiB at once (found by fuzzing; the allocation aborts the process where memory is limited).
//! A node cannot have more children than the schema has elements, so [`check_schema`] walks the
//! footer's Thrift (compact protocol) far enough to read every element's `num_children` and
//! refuses a count beyond that. The walk reads each byte at most once and recurses at most
//! [`MAX_DEPTH`] levels, so it is linear in the footer whatever the footer claims.

use bytes::Bytes;
use parquet::file::reader::ChunkReader;

/// Nesting the walk follows before it gives up (Parquet footers nest a few levels).
const MAX_DEPTH: u32 = 32;
/// `FileMetaData.version`, `.schema` and `SchemaElement.num_children` (parquet.thrift ids).
const FIELD_VERSION: i16 = 1;
const FIELD_SCHEMA: i16 = 2;
const FIELD_NUM_CHILDREN: i16 = 5;
/// `SchemaElement.name`.
const FIELD_NAME: i16 = 4;
/// The type codes of Apache Thrift's compact protocol, as field and element types.
const T_STOP: u8 = 0;
const T_TRUE: u8 = 1;
const T_FALSE: u8 = 2;
const T_BYTE: u8 = 3;
const T_I16: u8 = 4;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_DOUBLE: u8 = 7;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_SET: u8 = 10;
const T_MAP: u8 = 11;
const T_STRUCT: u8 = 12;
const T_UUID: u8 = 13;

/// The footer of `src`, when it has the Parquet tail (`len` + `PAR1`); `None` otherwise (the
/// decoder then says what is wrong).
fn footer_bytes<T: ChunkReader>(src: &T) -> Option<Bytes> {
    let len = src.len();
    if len < 12 {
        return None;
    }
    let tail = src.get_bytes(len - 8, 8).ok()?;
    if &tail[4..] != b"PAR1" {
        return None;
    }
    let n = u32::from_le_bytes(tail[..4].try_into().ok()?) as u64;
    if n + 8 > len {
        return None;
    }
    src.get_bytes(len - 8 - n, n as usize).ok()
}

/// Refuse a footer whose schema gives a node more children than the schema has elements
/// (the message names the element). Anything else is left to the decoder.
pub(crate) fn check_schema<T: ChunkReader>(src: &T) -> Result<(), String> {
    let Some(footer) = footer_bytes(src) else {
        return Ok(());
    };
    let mut w = Walk { b: &footer, at: 0 };
    match w.file_metadata() {
        Err(Bad::Children { element, claimed, elements }) => Err(format!(
            "the footer's schema element {element} claims {claimed} children, more than the {elements} elements of the schema"
        )),
        // Malformed Thrift: the decoder reports it in its own words.
        _ => Ok(()),
    }
}

enum Bad {
    /// The footer ends or nests deeper than the walk follows, or has an unknown type code.
    Malformed,
    Children {
        element: u64,
        claimed: i64,
        elements: u64,
    },
}

struct Walk<'a> {
    b: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn byte(&mut self) -> Result<u8, Bad> {
        let v = *self.b.get(self.at).ok_or(Bad::Malformed)?;
        self.at += 1;
        Ok(v)
    }

    /// A varint as the decoder reads one: any number of bytes, bits past 64 wrapping.
    fn varint(&mut self) -> Result<u64, Bad> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift = shift.wrapping_add(7);
        }
    }

    fn zigzag(&mut self) -> Result<i64, Bad> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), Bad> {
        let end = (self.at as u64).checked_add(n).ok_or(Bad::Malformed)?;
        if end > self.b.len() as u64 {
            return Err(Bad::Malformed);
        }
        self.at = end as usize;
        Ok(())
    }

    /// A field header: (field id, type); `last` is the previous field's id (delta encoding).
    fn field(&mut self, last: i16) -> Result<(i16, u8), Bad> {
        let h = self.byte()?;
        let ty = h & 0x0f;
        if ty == T_STOP {
            return Ok((0, T_STOP));
        }
        let delta = (h >> 4) as i16;
        let id = if delta == 0 {
            self.zigzag()? as i16
        } else {
            last.wrapping_add(delta)
        };
        Ok((id, ty))
    }

    /// A list or set header: (element count, element type).
    fn list(&mut self) -> Result<(u64, u8), Bad> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => n as u64,
        };
        Ok((n, h & 0x0f))
    }

    /// Skip `n` list elements of type `et`. Booleans take no bytes the way the decoder skips
    /// them, so a list of them is passed over at once; every other element takes at least one
    /// byte, so the loop ends with the footer however large a count it reads.
    fn list_of(&mut self, n: u64, et: u8, depth: u32) -> Result<(), Bad> {
        if matches!(et, T_TRUE | T_FALSE) {
            return Ok(());
        }
        for _ in 0..n {
            self.skip(et, depth + 1)?;
        }
        Ok(())
    }

    /// Skip one value of type `ty` as the decoder does (a field the decoder does not know).
    fn skip(&mut self, ty: u8, depth: u32) -> Result<(), Bad> {
        if depth > MAX_DEPTH {
            return Err(Bad::Malformed);
        }
        match ty {
            // The decoder's skip reads nothing for a boolean, in a list too (see `list_of`).
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.skip_bytes(1),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.skip_bytes(8),
            T_UUID => self.skip_bytes(16),
            T_BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            T_LIST | T_SET => {
                let (n, et) = self.list()?;
                self.list_of(n, et, depth)
            }
            T_MAP => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    if (kv >> 4, kv & 0x0f) == (T_TRUE, T_TRUE) {
                        return Ok(());
                    }
                    for _ in 0..n {
                        self.skip(kv >> 4, depth + 1)?;
                        self.skip(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            T_STRUCT => {
                let mut last = 0;
                loop {
                    let (id, fty) = self.field(last)?;
                    if fty == T_STOP {
                        return Ok(());
                    }
                    self.skip(fty, depth + 1)?;
                    last = id;
                }
            }
            _ => Err(Bad::Malformed),
        }
    }

    /// `FileMetaData` up to and including its schema list.
    fn file_metadata(&mut self) -> Result<(), Bad> {
        let mut last = 0;
        loop {
            let (id, ty) = self.field(last)?;
            if ty == T_STOP {
                return Ok(());
            }
            match id {
                FIELD_SCHEMA => return self.schema(),
                FIELD_VERSION => {
                    self.varint()?;
                }
                _ => self.skip(ty, 1)?,
            }
            last = id;
        }
    }

    fn schema(&mut self) -> Result<(), Bad> {
        let (elements, et) = self.list()?;
        if et != T_STRUCT {
            return Err(Bad::Malformed);
        }
        for element in 0..elements {
            let mut last = 0;
            loop {
                let (id, ty) = self.field(last)?;
                if ty == T_STOP {
                    break;
                }
                // The decoder reads a known field by its id, whatever type its header says.
                match id {
                    FIELD_NUM_CHILDREN => {
                        let claimed = self.zigzag()? as i32;
                        if claimed < 0 || claimed as u64 >= elements {
                            return Err(Bad::Children {
                                element,
                                claimed: claimed.into(),
                                elements,
                            });
                        }
                    }
                    1..=3 | 6..=9 => {
                        self.varint()?;
                    }
                    FIELD_NAME => {
                        let n = self.varint()?;
                        self.skip_bytes(n)?;
                    }
                    _ => self.skip(ty, 2)?,
                }
                last = id;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        assert!(check_schema(&parquet_with_root_children(1)).is_ok());
        let e = check_schema(&parquet_with_root_children(i32::MAX.into())).unwrap_err();
        assert!(
            e.contains("claims 2147483647 children") && e.contains("2 elements"),
            "{e}"
        );
        assert!(check_schema(&parquet_with_root_children(-1)).is_err());
    }

    #[test]
    fn a_huge_list_of_booleans_ends_with_the_footer() {
        // FileMetaData { 1: list<bool> of 2^31 elements } and nothing after: malformed, fast.
        let mut f = vec![
            (1 << 4) | T_LIST,
            0xf0 | T_TRUE,
            0x80,
            0x80,
            0x80,
            0x80,
            0x08,
        ];
        f.push(T_STOP);
        let mut file = b"PAR1".to_vec();
        file.extend(&f);
        file.extend((f.len() as u32).to_le_bytes());
        file.extend(b"PAR1");
        assert!(check_schema(&Bytes::from(file)).is_ok());
    }

    #[test]
    fn files_without_the_parquet_tail_are_left_to_the_decoder() {
        assert!(check_schema(&Bytes::from_static(b"not parquet at all")).is_ok());
        assert!(check_schema(&Bytes::from_static(b"")).is_ok());
    }
}
