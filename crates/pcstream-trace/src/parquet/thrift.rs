//! A strict, bounded walk over Thrift compact-protocol bytes as the Parquet decoder reads them,
//! for the checks made before the decoder sees a footer ([`super::footer`]) or a page header
//! ([`super::pages`]).
//!
//! The decoder reads a field it knows by the field's id, with the type the Parquet format gives
//! that id, whatever type the field header says; it skips a field it does not know by the
//! header's type. A walk that skipped by the header everywhere would read a mistyped field
//! differently from the decoder and lose step with it (fuzzing found such inputs). So the walk
//! is strict: a known field must carry its format type (tables of [`Kind`]), and anything the
//! walk cannot follow exactly as the decoder would is refused as corrupt. Bytes any Parquet
//! writer produces are well typed, so only damaged files are refused.
//!
//! The decoder skips a list of booleans one idle step per claimed element without reading a
//! byte: a header claiming 2^31 of them costs it seconds, and nested in a list, hours. Written,
//! each boolean takes a byte, so the walk gives all the booleans it meets a budget of the bytes
//! they could occupy and refuses a claim beyond it. Every other element takes at least a byte.
//! So the walk, and the decoder on what the walk accepts, are linear in the bytes; nesting is
//! followed at most [`MAX_DEPTH`] levels.

/// Nesting the walk follows before it gives up (Parquet metadata nests a few levels).
pub(super) const MAX_DEPTH: u32 = 32;
/// Largest list the decoder accepts (it reads the count as a Thrift `i32`).
const MAX_LIST: u64 = i32::MAX as u64;
/// The type codes of Apache Thrift's compact protocol, as field and element types.
pub(super) const T_STOP: u8 = 0;
pub(super) const T_TRUE: u8 = 1;
pub(super) const T_FALSE: u8 = 2;
pub(super) const T_BYTE: u8 = 3;
pub(super) const T_I16: u8 = 4;
pub(super) const T_I32: u8 = 5;
pub(super) const T_I64: u8 = 6;
pub(super) const T_DOUBLE: u8 = 7;
pub(super) const T_BINARY: u8 = 8;
pub(super) const T_LIST: u8 = 9;
pub(super) const T_SET: u8 = 10;
pub(super) const T_MAP: u8 = 11;
pub(super) const T_STRUCT: u8 = 12;
pub(super) const T_UUID: u8 = 13;

/// What the format says a known field holds (enums are `i32`, unions are structs).
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    Binary,
    Struct(&'static [(i16, Kind)]),
    List(&'static Kind),
}

/// A struct with no field the decoder knows (empty union variants).
pub(super) const EMPTY: &[(i16, Kind)] = &[];

impl Kind {
    pub(super) fn accepts(self, ty: u8) -> bool {
        match self {
            Kind::Bool => matches!(ty, T_TRUE | T_FALSE),
            Kind::Byte => ty == T_BYTE,
            Kind::I16 => ty == T_I16,
            Kind::I32 => ty == T_I32,
            Kind::I64 => ty == T_I64,
            Kind::Double => ty == T_DOUBLE,
            Kind::Binary => ty == T_BINARY,
            Kind::Struct(_) => ty == T_STRUCT,
            Kind::List(_) => ty == T_LIST,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Byte => "byte",
            Kind::I16 => "i16",
            Kind::I32 => "i32",
            Kind::I64 => "i64",
            Kind::Double => "double",
            Kind::Binary => "binary",
            Kind::Struct(_) => "struct",
            Kind::List(_) => "list",
        }
    }
}

pub(super) enum Bad {
    /// Thrift the walk cannot follow as the decoder reads it.
    Corrupt(String),
    /// The walk needs bytes past the window it was given, which the value may still span.
    Short,
    /// A schema node claims more children than the schema has elements.
    Children {
        element: u64,
        claimed: i64,
        elements: u64,
    },
}

pub(super) fn corrupt<T>(why: impl Into<String>) -> Result<T, Bad> {
    Err(Bad::Corrupt(why.into()))
}

/// A position in `b`, a window on bytes that may run on to `end` (`end >= b.len()`).
pub(super) struct Walk<'a> {
    b: &'a [u8],
    pub(super) at: usize,
    end: usize,
    /// Booleans the bytes can still hold (see the module doc).
    pub(super) bools_left: u64,
}

impl<'a> Walk<'a> {
    /// A walk over `b`, which may run on to `end` bytes, with `bools` booleans to meet at most.
    pub(super) fn new(b: &'a [u8], end: usize, bools: u64) -> Self {
        assert!(end >= b.len(), "a window longer than its bytes");
        Walk {
            b,
            at: 0,
            end,
            bools_left: bools,
        }
    }

    /// Bytes from the position to the end the value may span.
    pub(super) fn remaining(&self) -> u64 {
        (self.end - self.at) as u64
    }

    /// Move past `n` bytes: corrupt beyond `end`, short beyond the window.
    pub(super) fn skip_bytes(&mut self, n: u64) -> Result<(), Bad> {
        if n > self.remaining() {
            return corrupt(format!("a value of {n} bytes runs past the end"));
        }
        if self.at as u64 + n > self.b.len() as u64 {
            return Err(Bad::Short);
        }
        self.at += n as usize;
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, Bad> {
        if self.at >= self.end {
            return corrupt("it ends inside a value");
        }
        let v = *self.b.get(self.at).ok_or(Bad::Short)?;
        self.at += 1;
        Ok(v)
    }

    /// A varint as the decoder reads one: any number of bytes, bits past 64 wrapping.
    pub(super) fn varint(&mut self) -> Result<u64, Bad> {
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

    pub(super) fn zigzag(&mut self) -> Result<i64, Bad> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A field header: (field id, type); `last` is the previous field's id (delta encoding).
    /// Type codes the decoder does not know are refused, as it refuses them.
    pub(super) fn field(&mut self, last: i16) -> Result<(i16, u8), Bad> {
        let h = self.byte()?;
        let ty = h & 0x0f;
        if ty == T_STOP {
            return Ok((0, T_STOP));
        }
        if ty > T_UUID {
            return corrupt(format!("a field has the unknown type code {ty}"));
        }
        let delta = i16::from(h >> 4);
        let id = if delta == 0 {
            self.zigzag()? as i16
        } else {
            match last.checked_add(delta) {
                Some(id) => id,
                None => return corrupt("a field id overflows"),
            }
        };
        Ok((id, ty))
    }

    /// Spend the booleans budget on `n` claimed booleans.
    fn booleans(&mut self, n: u64) -> Result<(), Bad> {
        if n > self.bools_left {
            return corrupt(format!(
                "a list claims {n} booleans, more than the bytes could hold"
            ));
        }
        self.bools_left -= n;
        Ok(())
    }

    /// A list or set header as the decoder reads one: (element count, element type). A count
    /// that cannot fit in the bytes left is refused (each element takes a byte as written).
    pub(super) fn list(&mut self) -> Result<(u64, u8), Bad> {
        let h = self.byte()?;
        if h == 0 {
            // Some writers give an empty list no element type; the decoder accepts that.
            return Ok((0, T_BYTE));
        }
        let et = h & 0x0f;
        if et == T_STOP || et > T_UUID {
            return corrupt(format!("a list has the unknown element type code {et}"));
        }
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > MAX_LIST || n > self.remaining() {
            return corrupt(format!(
                "a list claims {n} elements, more than the bytes left"
            ));
        }
        if matches!(et, T_TRUE | T_FALSE) {
            self.booleans(n)?;
        }
        Ok((n, et))
    }

    /// Skip one value of type `ty` the way the decoder skips a field it does not know.
    pub(super) fn skip(&mut self, ty: u8, depth: u32) -> Result<(), Bad> {
        if depth > MAX_DEPTH {
            return corrupt(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match ty {
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
                for _ in 0..n {
                    self.skip(et, depth + 1)?;
                }
                Ok(())
            }
            T_MAP => {
                let n = self.varint()?;
                if n > MAX_LIST || n > self.remaining() {
                    return corrupt(format!(
                        "a map claims {n} entries, more than the bytes left"
                    ));
                }
                if n > 0 {
                    let kv = self.byte()?;
                    for t in [kv >> 4, kv & 0x0f] {
                        if t == T_STOP || t > T_UUID {
                            return corrupt(format!("a map has the unknown type code {t}"));
                        }
                        if matches!(t, T_TRUE | T_FALSE) {
                            self.booleans(n)?;
                        }
                    }
                    for _ in 0..n {
                        self.skip(kv >> 4, depth + 1)?;
                        self.skip(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            T_STRUCT => self.strict_struct(EMPTY, depth),
            _ => corrupt(format!("a value has the unknown type code {ty}")),
        }
    }

    /// One value of a known field, read as the decoder reads it: by the format's type, which
    /// the header (`ty`) must carry.
    pub(super) fn value(&mut self, kind: Kind, ty: u8, depth: u32) -> Result<(), Bad> {
        if !kind.accepts(ty) {
            return corrupt(format!(
                "a field the format types {} is written as type code {ty}",
                kind.name()
            ));
        }
        self.element(kind, depth)
    }

    /// A value of `kind` whose type is already checked (a field's header or a list's).
    fn element(&mut self, kind: Kind, depth: u32) -> Result<(), Bad> {
        if depth > MAX_DEPTH {
            return corrupt(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match kind {
            Kind::Bool => Ok(()),
            Kind::Byte => self.skip_bytes(1),
            Kind::I16 | Kind::I32 | Kind::I64 => self.varint().map(|_| ()),
            Kind::Double => self.skip_bytes(8),
            Kind::Binary => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            Kind::Struct(fields) => self.strict_struct(fields, depth),
            Kind::List(of) => {
                let (n, et) = self.list()?;
                if n > 0 && !of.accepts(et) {
                    return corrupt(format!(
                        "a list of {} has the element type code {et}",
                        of.name()
                    ));
                }
                for _ in 0..n {
                    self.element(*of, depth + 1)?;
                }
                Ok(())
            }
        }
    }

    /// A struct whose known fields are `fields`; the others are skipped by their headers.
    pub(super) fn strict_struct(&mut self, fields: &[(i16, Kind)], depth: u32) -> Result<(), Bad> {
        let mut last = 0;
        loop {
            let (id, ty) = self.field(last)?;
            if ty == T_STOP {
                return Ok(());
            }
            match known(fields, id) {
                Some(kind) => self.value(kind, ty, depth + 1)?,
                None => self.skip(ty, depth + 1)?,
            }
            last = id;
        }
    }
}

/// The kind the table `fields` gives field `id`.
pub(super) fn known(fields: &[(i16, Kind)], id: i16) -> Option<Kind> {
    fields.iter().find(|(f, _)| *f == id).map(|&(_, k)| k)
}
