//! The footer keys of both trace formats, defined once: block traces carry every key but
//! [`KEY_PATHS`]; file-level traces carry the same keys plus [`KEY_PATHS`]. Every value is a
//! string; the tables are JSON objects keyed by decimal strings (JSON object keys cannot be
//! numbers). docs/FORMATS.md tables them; the Python package takes them from [`FOOTER_KEYS`]
//! through the engine binding, so they are spelled only here.

/// The format version (see `blocktrace::format::FORMAT_VERSION`).
pub const KEY_FORMAT: &str = "pcstream.format";
/// The page size in bytes.
pub const KEY_PAGE_BYTES: &str = "pcstream.page_bytes";
/// The logical pages the trace addresses; absent when unknown.
pub const KEY_CAPACITY: &str = "pcstream.capacity_pages";
/// What made the trace (a command line, a recording).
pub const KEY_SOURCE: &str = "pcstream.source";
/// JSON: file id → path (block traces).
pub const KEY_FILES: &str = "pcstream.files";
/// JSON: file class id → class name.
pub const KEY_FILE_CLASSES: &str = "pcstream.file_classes";
/// JSON: PC signature → frames `{module, module_id, offset, symbol?}`, innermost first.
pub const KEY_PCS: &str = "pcstream.pcs";
/// JSON: path id → absolute path (file-level traces; ids from 1, 0 = none).
pub const KEY_PATHS: &str = "pcstream.paths";
/// How a recorded file-level trace was captured: `shim` (the LD_PRELOAD shim), `bpf` (the BPF
/// capture at the system-call boundary) or `shim+bpf` (both, each for the processes it reaches);
/// absent in traces recorded before the key existed (they are `shim`).
pub const KEY_CAPTURE: &str = "pcstream.capture";
/// Rows at the start of the trace that are the aged state of the device (all writes).
pub const KEY_AGED_ROWS: &str = "pcstream.aged_rows";
/// Pages of those rows.
pub const KEY_AGED_PAGES: &str = "pcstream.aged_pages";

/// Every key by its constant's name, for the Python package (`pcstream.tracemeta.KEY_*`).
pub const FOOTER_KEYS: [(&str, &str); 11] = [
    ("KEY_FORMAT", KEY_FORMAT),
    ("KEY_PAGE_BYTES", KEY_PAGE_BYTES),
    ("KEY_CAPACITY", KEY_CAPACITY),
    ("KEY_SOURCE", KEY_SOURCE),
    ("KEY_FILES", KEY_FILES),
    ("KEY_FILE_CLASSES", KEY_FILE_CLASSES),
    ("KEY_PCS", KEY_PCS),
    ("KEY_PATHS", KEY_PATHS),
    ("KEY_AGED_ROWS", KEY_AGED_ROWS),
    ("KEY_AGED_PAGES", KEY_AGED_PAGES),
    ("KEY_CAPTURE", KEY_CAPTURE),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_listed_once_under_the_pcstream_prefix() {
        let keys: std::collections::BTreeSet<&str> = FOOTER_KEYS.iter().map(|(_, k)| *k).collect();
        assert_eq!(keys.len(), FOOTER_KEYS.len());
        assert!(keys.iter().all(|k| k.starts_with("pcstream.")));
    }
}
