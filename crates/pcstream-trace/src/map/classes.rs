//! File-name classes: a small fixed table of class ids (the `file_class` column and the
//! `pcstream.file_classes` footer) and the rules that give a path its class, by name pattern and
//! extension. Ids are fixed so traces mapped at different times agree; 0 means "no file".

/// (id, name) of every class, in id order.
pub const CLASSES: [(u16, &str); 10] = [
    (1, "sst"),
    (2, "log"),
    (3, "MANIFEST"),
    (4, "o"),
    (5, "tmp"),
    (6, "db"),
    (7, "wal"),
    (8, "journal"),
    (9, "other"),
    (10, "rocksdb-meta"),
];

pub const SST: u16 = 1;
pub const LOG: u16 = 2;
pub const MANIFEST: u16 = 3;
pub const OBJECT: u16 = 4;
pub const TMP: u16 = 5;
pub const DB: u16 = 6;
pub const WAL: u16 = 7;
pub const JOURNAL: u16 = 8;
pub const OTHER: u16 = 9;
pub const ROCKSDB_META: u16 = 10;

/// Class of the file at `path` (its last component decides, then its directory for WAL
/// directories such as PostgreSQL's `pg_wal`).
pub fn classify(path: &str) -> u16 {
    let (dir, name) = match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    };
    let ext = name.rfind('.').map(|i| &name[i + 1..]).unwrap_or("");
    if name.starts_with("MANIFEST") {
        return MANIFEST;
    }
    if matches!(name, "CURRENT" | "IDENTITY" | "LOCK") || name.starts_with("OPTIONS-") {
        return ROCKSDB_META;
    }
    if name.ends_with("-wal") || ext == "wal" || dir.ends_with("/pg_wal") || dir == "pg_wal" {
        return WAL;
    }
    if name.ends_with("-journal") || ext == "journal" {
        return JOURNAL;
    }
    if name.ends_with('~') || name.contains(".tmp") || matches!(ext, "tmp" | "dbtmp" | "swp") {
        return TMP;
    }
    match ext {
        "sst" | "ldb" => SST,
        "log" => LOG,
        "o" | "a" | "so" => OBJECT,
        "db" | "sqlite" | "sqlite3" => DB,
        _ => OTHER,
    }
}

/// The `pcstream.file_classes` table.
pub fn class_table() -> std::collections::BTreeMap<u16, String> {
    CLASSES.iter().map(|(i, n)| (*i, n.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(classify("/db/000012.sst"), SST);
        assert_eq!(classify("/db/000003.log"), LOG);
        assert_eq!(classify("/db/MANIFEST-000005"), MANIFEST);
        assert_eq!(classify("/db/CURRENT"), ROCKSDB_META);
        assert_eq!(classify("/db/000004.dbtmp"), TMP);
        assert_eq!(classify("/w/tpcc.db"), DB);
        assert_eq!(classify("/w/tpcc.db-journal"), JOURNAL);
        assert_eq!(classify("/w/tpcc.db-wal"), WAL);
        assert_eq!(classify("/pg/pg_wal/000000010000000000000001"), WAL);
        assert_eq!(classify("/src/fs/ext4/inode.o"), OBJECT);
        assert_eq!(classify("/src/.inode.o.cmd"), OTHER);
        assert_eq!(classify("/src/fs/ext4/.tmp_inode.o"), TMP);
        assert_eq!(class_table().len(), CLASSES.len());
    }
}
