//! Replacing one footer value of a trace in place (`record` names the frames of the PC table
//! after the run): every row group is copied as it is, under the same columns, and every other
//! footer pair is kept in its order; the file is replaced atomically.

use std::path::Path;

use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;

use super::{builder, footer_pairs, open_input, AtomicWriter};
use crate::error::{one_line, TraceError};

/// Set footer key `key` of the trace at `path` to `value` (added at the end if absent). The
/// embedded Arrow schema is written anew with the footer, so readers that look there (pyarrow,
/// pandas) see the new value too.
pub fn set_footer_value(path: &Path, key: &str, value: &str) -> Result<(), TraceError> {
    let label = path.display().to_string();
    let file = open_input(path)?;
    let b = builder(&label, file)?;
    let mut pairs: Vec<(String, String)> = footer_pairs(b.metadata())
        .into_iter()
        // The writer writes the Arrow schema itself, from the pairs below.
        .filter(|(k, _)| k != ::parquet::arrow::ARROW_SCHEMA_META_KEY)
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    match pairs.iter_mut().find(|(k, _)| k == key) {
        Some(pair) => pair.1 = value.to_string(),
        None => pairs.push((key.to_string(), value.to_string())),
    }
    let groups = b.metadata().num_row_groups();
    // Columns without the old metadata: `finish` embeds the schema with the new pairs.
    let schema = std::sync::Arc::new(
        b.schema()
            .as_ref()
            .clone()
            .with_metadata(std::collections::HashMap::new()),
    );
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("zstd level 3 exists"),
        ))
        // Each input row group becomes one output row group, whatever its size.
        .set_max_row_group_row_count(None)
        .build();
    let bad = |e: &dyn std::fmt::Display| TraceError::NotParquet {
        path: label.clone(),
        why: one_line(e),
    };
    let mut out = AtomicWriter::create(path, schema, props)?;
    for g in 0..groups {
        let reader = builder(&label, open_input(path)?)?
            .with_row_groups(vec![g])
            .build()
            .map_err(|e| bad(&e))?;
        for batch in reader {
            out.write(&batch.map_err(|e| bad(&e))?)?;
        }
        out.end_row_group()?;
    }
    out.finish(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocktrace::{BlockTraceReader, BlockTraceWriter, TraceMeta};
    use crate::parquet::keys::KEY_PCS;
    use pcstream_core::request::Request;

    #[test]
    fn a_footer_value_is_replaced_and_the_rows_and_other_pairs_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let meta = TraceMeta {
            capacity_pages: Some(64),
            source: "test".into(),
            ..TraceMeta::default()
        };
        // Row groups of 3 rows: the copy must keep all four of them.
        let mut w = BlockTraceWriter::create(&path, &meta, 3).unwrap();
        for i in 0..10u64 {
            w.push(&Request {
                lpn: i,
                pages: 1,
                ts_ns: i,
                ..Request::default()
            })
            .unwrap();
        }
        w.finish().unwrap();
        set_footer_value(&path, KEY_PCS, "{\"7\":[]}").unwrap();

        let mut r = BlockTraceReader::open(&path).unwrap();
        assert_eq!(r.meta().capacity_pages, Some(64));
        assert_eq!(r.meta().source, "test");
        assert_eq!(r.meta().pcs, serde_json::json!({"7": []}));
        let (mut lpns, mut buf) = (Vec::new(), Vec::new());
        while r.next_batch(&mut buf).unwrap() {
            lpns.extend(buf.iter().map(|q| q.lpn));
        }
        assert_eq!(lpns, (0..10).collect::<Vec<_>>());
        let groups = builder("t", open_input(&path).unwrap())
            .unwrap()
            .metadata()
            .num_row_groups();
        assert_eq!(groups, 4);
        assert_eq!(
            dir.path().read_dir().unwrap().count(),
            1,
            "no temporary file left beside the trace"
        );
    }

    #[test]
    fn a_missing_trace_is_an_error_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.parquet");
        assert!(set_footer_value(&path, KEY_PCS, "{}").is_err());
        assert_eq!(dir.path().read_dir().unwrap().count(), 0);
    }
}
