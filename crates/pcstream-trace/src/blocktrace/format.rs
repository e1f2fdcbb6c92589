//! The block-trace Parquet format, version "1": the ten fixed column names with their unsigned
//! widths, and the fixed `pcstream.*` key-value metadata (keys defined in
//! [`crate::parquet::keys`]), parsed into [`TraceMeta`].
//!
//! Metadata values are strings. `pcstream.files`, `pcstream.file_classes` and `pcstream.pcs` hold
//! JSON objects whose keys are decimal strings (JSON object keys cannot be numbers).

use std::collections::BTreeMap;

use crate::error::{one_line, TraceError};

/// (name, unsigned width in bits), in the order the writer emits them.
pub const COLUMNS: [(&str, u8); 10] = [
    ("ts_ns", 64),
    ("op", 8),
    ("lpn", 64),
    ("pages", 32),
    ("pc", 64),
    ("file", 32),
    ("file_class", 16),
    ("meta", 8),
    ("pid", 32),
    ("hint", 8),
];
/// Columns a block trace cannot do without; every other column reads as 0 when absent.
pub const REQUIRED: [&str; 3] = ["lpn", "pages", "op"];

pub use crate::parquet::keys::{
    KEY_AGED_PAGES, KEY_AGED_ROWS, KEY_CAPACITY, KEY_FILES, KEY_FILE_CLASSES, KEY_FORMAT,
    KEY_PAGE_BYTES, KEY_PCS, KEY_SOURCE,
};
/// The only format version this crate reads and writes.
pub const FORMAT_VERSION: &str = "1";
/// The engine's page size, as the `pcstream.page_bytes` value; other sizes are rejected rather
/// than silently rescaled.
pub const PAGE_BYTES: u32 = pcstream_core::units::PAGE_BYTES as u32;
/// The largest address space a trace may span: 2^40 pages (4 PiB). Importers refuse requests
/// beyond it and readers refuse a `pcstream.capacity_pages` or a row past it, so every figure
/// derived from addresses (capacity, bitmaps, page counts) stays far from 64-bit overflow.
pub const MAX_PAGES: u64 = 1 << 40;
/// Largest `hint`: Linux's `RWH_WRITE_LIFE_EXTREME` (0 not set, 1 none, 2 short … 5 extreme).
pub const MAX_HINT: u8 = 5;
/// Largest `meta`: "other metadata" ([`pcstream_core::request::meta`]).
pub const MAX_META: u8 = pcstream_core::request::meta::OTHER;

/// What is wrong with row `r`, after a row at time `prev_ts`, in the fields every row must get
/// right whatever the trace's capacity and tables: time non-decreasing, `meta` and `hint` in
/// their ranges. `None` when nothing is.
pub(crate) fn row_fields_error(
    r: &pcstream_core::request::Request,
    prev_ts: u64,
) -> Option<String> {
    if r.ts_ns < prev_ts {
        Some(format!(
            "ts_ns {} is before the previous row's {prev_ts}; rows must be in time order (sort the trace by ts_ns)",
            r.ts_ns
        ))
    } else if r.meta > MAX_META {
        Some(format!(
            "meta {} is not a metadata class (0 data … {MAX_META} other metadata)",
            r.meta
        ))
    } else if r.hint > MAX_HINT {
        Some(format!(
            "hint {} is not a Linux write-life hint (0 not set … {MAX_HINT} extreme)",
            r.hint
        ))
    } else {
        None
    }
}

/// The footer `pairs`, without the PC table unless `pcs`: for readers of the rows alone.
pub(crate) fn without_pcs(
    mut pairs: Vec<(String, Option<String>)>,
    pcs: bool,
) -> Vec<(String, Option<String>)> {
    if !pcs {
        pairs.retain(|(k, _)| k != KEY_PCS);
    }
    pairs
}

/// The `file_class` values a trace's rows may carry: 0 (unclassified: what every writer gives a
/// row without a class) and the ids `pcstream.file_classes` names; any value when the footer has
/// no such key (a file pcstream did not write names no classes, so none can be checked).
#[derive(Clone, Debug)]
pub(crate) struct NamedClasses(Option<Vec<bool>>);

impl NamedClasses {
    /// From the footer's pairs and the parsed table (`meta.file_classes`).
    pub(crate) fn new(pairs: &[(String, Option<String>)], meta: &TraceMeta) -> NamedClasses {
        let present = pairs
            .iter()
            .any(|(k, v)| k == KEY_FILE_CLASSES && v.is_some());
        NamedClasses(present.then(|| {
            let mut named = vec![false; usize::from(u16::MAX) + 1];
            named[0] = true;
            for &id in meta.file_classes.keys() {
                named[usize::from(id)] = true;
            }
            named
        }))
    }

    /// Whether a row may carry `class`.
    #[inline]
    pub(crate) fn allows(&self, class: u16) -> bool {
        self.0
            .as_ref()
            .is_none_or(|named| named[usize::from(class)])
    }

    /// What is wrong with a row of `class`, naming the classes the table has (`None`: nothing).
    pub(crate) fn error(&self, class: u16, meta: &TraceMeta) -> Option<String> {
        if self.allows(class) {
            return None;
        }
        let ids: Vec<String> = meta.file_classes.keys().map(u16::to_string).collect();
        let named = match ids.len() {
            0 => "it names none".to_string(),
            n if n <= 8 => format!("it names {}", ids.join(", ")),
            n => format!("it names {} and {} more", ids[..8].join(", "), n - 8),
        };
        Some(format!(
            "file_class {class} is not named in {KEY_FILE_CLASSES} ({named}); name the class there or write 0 (unclassified)"
        ))
    }
}

/// Trace-level metadata. Missing optional keys mean "unknown": no capacity (readers then scan for
/// max(lpn + pages)), empty source, empty tables.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceMeta {
    pub format: String,
    pub page_bytes: u32,
    pub capacity_pages: Option<u64>,
    pub source: String,
    /// Dense file id → path.
    pub files: BTreeMap<u32, String>,
    /// File-class id → class name.
    pub file_classes: BTreeMap<u16, String>,
    /// Signature (decimal string) → list of frames `{module, offset, symbol?}`; always an object.
    pub pcs: serde_json::Value,
    /// The aged state: the first `rows` rows, `pages` pages (`map --age`); `None`: none.
    pub aged: Option<AgedRows>,
}

/// The leading rows of an aged trace: what the device holds before the trace starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgedRows {
    pub rows: u64,
    pub pages: u64,
}

impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            format: FORMAT_VERSION.into(),
            page_bytes: PAGE_BYTES,
            capacity_pages: None,
            source: String::new(),
            files: BTreeMap::new(),
            file_classes: BTreeMap::new(),
            pcs: serde_json::Value::Object(Default::default()),
            aged: None,
        }
    }
}

impl TraceMeta {
    /// The key-value pairs to store in the Parquet footer (`capacity_pages` only when known).
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let pcs = if self.pcs.is_object() {
            self.pcs.to_string()
        } else {
            "{}".to_string()
        };
        let mut v = vec![
            (KEY_FORMAT.into(), self.format.clone()),
            (KEY_PAGE_BYTES.into(), self.page_bytes.to_string()),
            (KEY_SOURCE.into(), self.source.clone()),
            (
                KEY_FILES.into(),
                serde_json::to_string(&self.files).expect("a string map serialises"),
            ),
            (
                KEY_FILE_CLASSES.into(),
                serde_json::to_string(&self.file_classes).expect("a string map serialises"),
            ),
            (KEY_PCS.into(), pcs),
        ];
        if let Some(c) = self.capacity_pages {
            v.push((KEY_CAPACITY.into(), c.to_string()));
        }
        if let Some(a) = self.aged {
            v.push((KEY_AGED_ROWS.into(), a.rows.to_string()));
            v.push((KEY_AGED_PAGES.into(), a.pages.to_string()));
        }
        v
    }

    /// Parse the footer's key-value pairs of the file `path` (used in messages only). Keys outside
    /// `pcstream.*` are ignored; a missing `pcstream.format` is taken as "1" (hand-written files).
    pub fn from_pairs(
        path: &str,
        pairs: &[(String, Option<String>)],
    ) -> Result<TraceMeta, TraceError> {
        let mut m = TraceMeta::default();
        for (k, v) in pairs {
            let Some(v) = v else { continue };
            m.set(k, v).map_err(|why| TraceError::BadMeta {
                path: path.into(),
                key: k.clone(),
                why,
            })?;
        }
        Ok(m)
    }

    /// Take the value `v` of the footer key `k` (other keys are ignored); `Err` says why the
    /// value cannot be used and what to do.
    fn set(&mut self, k: &str, v: &str) -> Result<(), String> {
        let json_err = |e: serde_json::Error, expected: &str| {
            format!(
                "malformed JSON ({}); expected {expected}; fix or remove the key",
                one_line(e)
            )
        };
        match k {
            KEY_FORMAT if v.trim() != FORMAT_VERSION => {
                return Err(format!(
                    "format version '{v}' is not understood by this pcstream (it reads version {FORMAT_VERSION}); upgrade pcstream"
                ));
            }
            KEY_PAGE_BYTES => self.page_bytes = page_bytes(v)?,
            KEY_CAPACITY => self.capacity_pages = Some(capacity(v)?),
            KEY_AGED_ROWS | KEY_AGED_PAGES => {
                let n = count(v).ok_or_else(|| {
                    format!("'{v}' is not a count (decimal digits only); fix or remove the key")
                })?;
                let a = self.aged.get_or_insert_with(AgedRows::default);
                if k == KEY_AGED_ROWS {
                    a.rows = n
                } else {
                    a.pages = n
                }
            }
            KEY_SOURCE => self.source = v.to_string(),
            KEY_FILES => {
                self.files = serde_json::from_str(v)
                    .map_err(|e| json_err(e, "an object {\"id\": \"path\"}"))?
            }
            KEY_FILE_CLASSES => {
                self.file_classes = serde_json::from_str(v)
                    .map_err(|e| json_err(e, "an object {\"id\": \"class name\"}"))?
            }
            KEY_PCS => {
                let pcs: serde_json::Value = serde_json::from_str(v)
                    .map_err(|e| json_err(e, "an object {\"signature\": [frames]}"))?;
                if !pcs.is_object() {
                    return Err(
                        "not a JSON object; expected {\"signature\": [frames]}; fix or remove the key"
                            .into(),
                    );
                }
                check_pcs(&pcs)?;
                self.pcs = pcs;
            }
            _ => {}
        }
        Ok(())
    }
}

/// The `pcstream.page_bytes` value `v`: a number, and the engine's page size.
fn page_bytes(v: &str) -> Result<u32, String> {
    let n = count(v)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("'{v}' is not a number of bytes; write e.g. 4096"))?;
    if n != PAGE_BYTES {
        return Err(format!(
            "page size {v} is not supported (only {PAGE_BYTES}); re-import the trace with 4 KiB pages"
        ));
    }
    Ok(n)
}

/// The `pcstream.capacity_pages` value `v`: a number of pages within [`MAX_PAGES`].
fn capacity(v: &str) -> Result<u64, String> {
    let c = count(v).ok_or_else(|| {
        format!("'{v}' is not a number of pages (decimal digits only); fix or remove the key")
    })?;
    if c > MAX_PAGES {
        return Err(format!(
            "{c} pages is beyond the limit of {MAX_PAGES} pages (2^40, 4 PiB); fix or remove the key"
        ));
    }
    Ok(c)
}

/// A count as the writers write it: decimal digits only (no sign, space, point or exponent),
/// within 64 bits. A value that is anything else was not written by pcstream and is refused
/// rather than guessed at.
fn count(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// The `pcstream.pcs` table: each key a signature in decimal, each value a list of frames
/// `{module: string, module_id?: string, offset: integer ≥ 0, symbol?: string}`.
fn check_pcs(pcs: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let fix = "fix or remove the key";
    for (sig, frames) in pcs.as_object().into_iter().flatten() {
        if count(sig).is_none() {
            return Err(format!("signature '{sig}' is not a decimal number; {fix}"));
        }
        let Some(frames) = frames.as_array() else {
            return Err(format!("signature {sig}: not a list of frames; {fix}"));
        };
        for (i, f) in frames.iter().enumerate() {
            let text = |k: &str, required: bool| match f.get(k) {
                None => !required,
                Some(v) => v.is_string(),
            };
            let ok = f.is_object()
                && text("module", true)
                && text("module_id", false)
                && text("symbol", false)
                && f.get("offset").is_some_and(Value::is_u64);
            if !ok {
                return Err(format!(
                    "signature {sig}, frame {i}: expected {{module: string, module_id?: string, offset: integer ≥ 0, symbol?: string}}, found {}; {fix}",
                    crate::error::one_line(f).chars().take(80).collect::<String>()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, Option<String>)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect()
    }

    #[test]
    fn pairs_round_trip() {
        let mut m = TraceMeta {
            capacity_pages: Some(123),
            source: "pcstream gen zipf".into(),
            ..Default::default()
        };
        m.files.insert(7, "a/b.sst".into());
        m.file_classes.insert(2, "sst".into());
        m.pcs = serde_json::json!({"42": [{"module": "x", "offset": 16}]});
        let back: Vec<_> = m
            .to_pairs()
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect();
        assert_eq!(TraceMeta::from_pairs("t", &back).unwrap(), m);
    }

    #[test]
    fn missing_capacity_is_none() {
        let m = TraceMeta::from_pairs("t", &pairs(&[(KEY_FORMAT, "1")])).unwrap();
        assert_eq!(m.capacity_pages, None);
    }

    #[test]
    fn newer_format_asks_to_upgrade() {
        let e = TraceMeta::from_pairs("t.parquet", &pairs(&[(KEY_FORMAT, "2")])).unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("t.parquet: metadata key pcstream.format"),
            "{s}"
        );
        assert!(s.contains("upgrade pcstream"), "{s}");
    }

    #[test]
    fn malformed_json_names_the_key() {
        let e = TraceMeta::from_pairs("t.parquet", &pairs(&[(KEY_FILES, "{1: x")])).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("pcstream.files") && s.contains("malformed JSON"),
            "{s}"
        );
        assert!(!s.contains('\n'));
        let e = TraceMeta::from_pairs("t.parquet", &pairs(&[(KEY_PCS, "[1]")])).unwrap_err();
        assert!(e.to_string().contains("not a JSON object"));
        let e = TraceMeta::from_pairs("t.parquet", &pairs(&[(KEY_CAPACITY, "lots")])).unwrap_err();
        assert!(e.to_string().contains("'lots' is not a number of pages"));
    }
}
