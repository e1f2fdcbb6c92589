//! Repository hygiene: the core stays pure (no Python, no Parquet, no I/O crates) and carries no
//! placeholders.

use std::path::Path;
use std::process::Command;

#[test]
fn core_depends_on_no_binding_or_io_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "pcstream-core",
            "--edges",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    for banned in ["pyo3", "parquet", "arrow-", "tokio"] {
        assert!(
            !tree.contains(banned),
            "pcstream-core depends on {banned}:\n{tree}"
        );
    }
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_placeholders_in_the_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    sources(root, &mut files);
    assert!(files.len() > 20);
    let banned = [
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("dbg", "!("),
    ];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for b in banned {
            assert!(!text.contains(b), "{} contains {b}", f.display());
        }
    }
}
