//! The block-trace Parquet format: fixed column names and metadata keys (format version "1").

use std::collections::BTreeMap;

use crate::error::TraceError;

/// (name, Parquet/Arrow unsigned width in bits). `lpn`, `pages` and `op` are required.
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
pub const REQUIRED: [&str; 3] = ["lpn", "pages", "op"];

pub const KEY_FORMAT: &str = "pcstream.format";
pub const KEY_PAGE_BYTES: &str = "pcstream.page_bytes";
pub const KEY_CAPACITY: &str = "pcstream.capacity_pages";
pub const KEY_SOURCE: &str = "pcstream.source";
pub const KEY_FILES: &str = "pcstream.files";
pub const KEY_FILE_CLASSES: &str = "pcstream.file_classes";
pub const KEY_PCS: &str = "pcstream.pcs";
pub const FORMAT_VERSION: &str = "1";

/// Trace-level metadata (Parquet key-value metadata; values are strings).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceMeta {
    pub format: String,
    pub page_bytes: u32,
    pub capacity_pages: Option<u64>,
    pub source: String,
    pub files: BTreeMap<u32, String>,
    pub file_classes: BTreeMap<u16, String>,
    pub pcs: serde_json::Value,
}

impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            format: FORMAT_VERSION.into(),
            page_bytes: 4096,
            capacity_pages: None,
            source: String::new(),
            files: BTreeMap::new(),
            file_classes: BTreeMap::new(),
            pcs: serde_json::Value::Object(Default::default()),
        }
    }
}

impl TraceMeta {
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut v = vec![
            (KEY_FORMAT.into(), self.format.clone()),
            (KEY_PAGE_BYTES.into(), self.page_bytes.to_string()),
            (KEY_SOURCE.into(), self.source.clone()),
            (
                KEY_FILES.into(),
                serde_json::to_string(&self.files).expect("map serialises"),
            ),
            (
                KEY_FILE_CLASSES.into(),
                serde_json::to_string(&self.file_classes).expect("map serialises"),
            ),
            (KEY_PCS.into(), self.pcs.to_string()),
        ];
        if let Some(c) = self.capacity_pages {
            v.push((KEY_CAPACITY.into(), c.to_string()));
        }
        v
    }

    pub fn from_pairs(
        path: &str,
        pairs: &[(String, Option<String>)],
    ) -> Result<TraceMeta, TraceError> {
        let mut m = TraceMeta::default();
        let bad = |key: &str, why: String| TraceError::BadMeta {
            path: path.into(),
            key: key.into(),
            why,
        };
        for (k, v) in pairs {
            let Some(v) = v else { continue };
            match k.as_str() {
                KEY_FORMAT => {
                    if v != FORMAT_VERSION {
                        return Err(bad(k, format!("format version {v} is newer than this pcstream understands (1); upgrade pcstream")));
                    }
                }
                KEY_PAGE_BYTES => {
                    m.page_bytes = v
                        .parse()
                        .map_err(|_| bad(k, format!("'{v}' is not a number")))?;
                    if m.page_bytes != 4096 {
                        return Err(bad(
                            k,
                            format!(
                                "page size {v} is not supported (4096 only); re-import the trace"
                            ),
                        ));
                    }
                }
                KEY_CAPACITY => {
                    m.capacity_pages = Some(
                        v.parse()
                            .map_err(|_| bad(k, format!("'{v}' is not a number of pages")))?,
                    )
                }
                KEY_SOURCE => m.source = v.clone(),
                KEY_FILES => {
                    m.files = serde_json::from_str(v).map_err(|e| {
                        bad(
                            k,
                            format!("malformed JSON ({e}); expected {{\"id\": \"path\"}}"),
                        )
                    })?
                }
                KEY_FILE_CLASSES => {
                    m.file_classes = serde_json::from_str(v).map_err(|e| {
                        bad(
                            k,
                            format!("malformed JSON ({e}); expected {{\"id\": \"name\"}}"),
                        )
                    })?
                }
                KEY_PCS => {
                    m.pcs = serde_json::from_str(v)
                        .map_err(|e| bad(k, format!("malformed JSON ({e})")))?
                }
                _ => {}
            }
        }
        Ok(m)
    }
}
