use super::*;
use serde_json::json;

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";
const REDIS: &str = "/usr/bin/redis-server";

fn fr(module: &str, offset: u64, symbol: &str) -> serde_json::Value {
    if symbol.is_empty() {
        json!({"module": module, "module_id": "aa", "offset": offset})
    } else {
        json!({"module": module, "module_id": "aa", "offset": offset, "symbol": symbol})
    }
}

fn labels(table: &serde_json::Value, wanted: &[&str]) -> Vec<String> {
    let wanted: Vec<String> = wanted.iter().map(|s| s.to_string()).collect();
    label_table(&table.to_string(), &wanted).unwrap().1
}

/// Four PCs sharing their two innermost and two outermost frames; 11 and 14 differ only by the
/// call site inside one function.
#[test]
fn pcs_sharing_outer_and_inner_frames_get_what_differs() {
    let inner = [fr(LIBC, 0x10f0, "__GI___libc_write"), fr(REDIS, 0x5a10, "")];
    let outer = [fr(REDIS, 0x3000, "aeMain"), fr(REDIS, 0x2000, "main")];
    let middle = [
        (
            "11",
            [
                (0x7010, "rioFileWrite"),
                (0x8010, "rdbSaveRio"),
                (0x9010, "rdbSave"),
            ],
        ),
        (
            "12",
            [
                (0x7010, "rioFileWrite"),
                (0xa010, "rewriteAppendOnlyFileRio"),
                (0xb010, "rewriteAppendOnlyFile"),
            ],
        ),
        (
            "13",
            [
                (0xc010, "flushAppendOnlyFile"),
                (0xd010, "beforeSleep"),
                (0xe010, "aeProcessEvents"),
            ],
        ),
        (
            "14",
            [
                (0x7010, "rioFileWrite"),
                (0x8044, "rdbSaveRio"),
                (0x9010, "rdbSave"),
            ],
        ),
    ];
    let mut table = serde_json::Map::new();
    for (sig, mid) in middle {
        let mut path = inner.to_vec();
        path.extend(mid.iter().map(|&(o, s)| fr(REDIS, o, s)));
        path.extend(outer.iter().cloned());
        table.insert(sig.into(), path.into());
    }
    let got = labels(&table.into(), &["11", "12", "13", "14"]);
    assert_eq!(
        got,
        [
            "rdbSave → rdbSaveRio (redis-server+0x8010)",
            "rewriteAppendOnlyFile → rewriteAppendOnlyFileRio",
            "aeProcessEvents → … → flushAppendOnlyFile",
            "rdbSave → rdbSaveRio (redis-server+0x8044)",
        ]
    );
}

#[test]
fn twins_frameless_and_absent_pcs_still_differ() {
    let path = json!([fr(REDIS, 0x10, "f"), fr(REDIS, 0x20, "main")]);
    let table = json!({"1": path, "2": path, "3": []});
    let got = labels(&table, &["1", "2", "3", "9"]);
    assert_eq!(got, ["main → f (PC 1)", "main → f (PC 2)", "PC 3", "PC 9"]);
    assert_eq!(
        labels(&json!({"7": [fr(REDIS, 0x10, "wal")]}), &["7"]),
        ["wal"]
    );
    assert_eq!(label_table("{}", &[]).unwrap(), (0, vec![]));
}

/// A label is the same whichever PCs are asked for: every PC of the table is labelled. (The time
/// on 20,000 PCs is checked on the whole command: tests/python/test_inputs_by_type.py.)
#[test]
fn every_pc_is_labelled_whichever_are_asked_for() {
    let table: serde_json::Map<String, serde_json::Value> = (0..2_000u64)
        .map(|i| {
            let path = json!([
                fr("/usr/lib/libc.so.6", 0x11a0, "write"),
                fr("/usr/bin/app", 0x4000 + 16 * i, &format!("writer_{i}")),
                fr(
                    "/usr/bin/app",
                    0x2000 + i % 50,
                    &format!("layer_{}", i % 50)
                ),
                fr("/usr/bin/app", 0x1040, "main"),
            ]);
            ((1000 + i).to_string(), path)
        })
        .collect();
    let table = serde_json::Value::from(table);
    let got = labels(&table, &["2999", "1000"]);
    assert_eq!(got, ["layer_49 → writer_1999", "layer_0 → writer_0"]);
    assert_eq!(labels(&table, &["1000"]), ["layer_0 → writer_0"]);
}

#[test]
fn a_table_of_the_wrong_shape_is_an_error() {
    for bad in [
        "[1]",
        "{\"1\": [{\"offset\": 1}]}",
        "{\"1\": [{\"module\": \"m\", \"offset\": -1}]}",
        "{",
    ] {
        let e = label_table(bad, &[]).unwrap_err();
        assert!(e.starts_with("pcstream.pcs is not a table"), "{e}");
    }
}
