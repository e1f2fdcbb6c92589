//! File-system model throughput: file events per second through the in-memory model
//! (`FsModel::apply`) for a synthetic mix over many files — creates, appends, overwrites,
//! fdatasync/fsync, closes and unlinks — and, for reference, through `map_file_trace` with
//! Parquet decoding and encoding included; and through the model, fio's random writes into a
//! fallocated file (every write splits an unwritten extent: the extent map's cost per write).
//! `PCSTREAM_BENCH_EVENTS` sets the mix size (default 1 M events; the fallocated file gets a
//! fifth of it).

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcstream_core::request::Request;
use pcstream_trace::filetrace::{write_events, FileEvent, FileOp};
use pcstream_trace::map::{FsModel, MapOptions};
use pcstream_trace::map_file_trace;

/// A seeded mix: 2000 file names, each written by one of 16 processes; 55 % appends of
/// 1–16 KiB, 20 % 4 KiB overwrites, 8 % fdatasync, 2 % fsync, 15 % close + unlink (the name is
/// created again later as a new inode); 20 µs between events on average.
fn mix(n: usize) -> (Vec<FileEvent>, BTreeMap<u32, String>) {
    const FILES: u32 = 2000;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut files = Files {
        size: vec![0; FILES as usize + 1],
        gen: vec![0; FILES as usize + 1],
        open: vec![false; FILES as usize + 1],
    };
    let mut evs = Vec::with_capacity(n + 1);
    let mut t = 0u64;
    while evs.len() < n {
        t += next() % 40_000;
        let f = 1 + (next() % FILES as u64) as u32;
        let base = FileEvent {
            ts_ns: t,
            pid: 1000 + f % 16,
            tid: 1000 + f % 16,
            fd: 3 + f as i32,
            dev: 1,
            ino: f as u64 + 10_000 * files.gen[f as usize],
            path: f,
            pc: 1 + next() % 64,
            ..Default::default()
        };
        files.step(f as usize, base, &mut next, &mut evs);
    }
    evs.truncate(n);
    let paths = (1..=FILES)
        .map(|i| (i, format!("/bench/dir{}/f{i:05}.sst", i % 8)))
        .collect();
    (evs, paths)
}

/// Per file name of the mix: its size, its generation (a new inode after each unlink) and
/// whether it is open.
struct Files {
    size: Vec<u64>,
    gen: Vec<u64>,
    open: Vec<bool>,
}

impl Files {
    /// The event(s) of one step on file `f`: its open if closed, else one of the mix's
    /// operations (`base` carries the time, process and PC).
    fn step(
        &mut self,
        f: usize,
        base: FileEvent,
        next: &mut impl FnMut() -> u64,
        evs: &mut Vec<FileEvent>,
    ) {
        if !self.open[f] {
            self.open[f] = true;
            evs.push(FileEvent {
                op: FileOp::Open,
                flags: 0o101,
                ..base
            });
            return;
        }
        match next() % 100 {
            0..=54 => {
                let len = 1024 + next() % 15_360;
                evs.push(FileEvent {
                    op: FileOp::Write,
                    offset: self.size[f],
                    len,
                    ..base
                });
                self.size[f] += len;
            }
            55..=74 => evs.push(FileEvent {
                op: FileOp::Write,
                offset: (next() % (self.size[f] / 4096 + 1)) * 4096,
                len: 4096,
                ..base
            }),
            75..=82 => evs.push(FileEvent {
                op: FileOp::Fdatasync,
                ..base
            }),
            83..=84 => evs.push(FileEvent {
                op: FileOp::Fsync,
                ..base
            }),
            _ => {
                evs.push(FileEvent {
                    op: FileOp::Close,
                    ..base
                });
                evs.push(FileEvent {
                    op: FileOp::Unlink,
                    fd: -1,
                    ..base
                });
                self.open[f] = false;
                self.size[f] = 0;
                self.gen[f] += 1;
            }
        }
    }
}

/// fio's `randwrite` on a laid-out file: one 1000 MiB file fallocated, then `n` 4 KiB writes at
/// random blocks, an fdatasync every 256 writes, 40 µs apart on average.
fn fallocated_random(n: usize) -> (Vec<FileEvent>, BTreeMap<u32, String>) {
    const BLOCKS: u64 = (1000 << 20) / 4096;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let base = FileEvent {
        pid: 10,
        tid: 10,
        fd: 3,
        dev: 1,
        ino: 100,
        path: 1,
        ..Default::default()
    };
    let mut evs = vec![
        FileEvent {
            op: FileOp::Open,
            flags: 0o101,
            ..base
        },
        FileEvent {
            op: FileOp::Fallocate,
            len: BLOCKS * 4096,
            ..base
        },
    ];
    let mut t = 0;
    while evs.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t += x % 80_000;
        evs.push(FileEvent {
            ts_ns: t,
            op: FileOp::Write,
            offset: (x >> 20) % BLOCKS * 4096,
            len: 4096,
            pc: 1 + x % 4,
            ..base
        });
        if evs.len().is_multiple_of(257) {
            evs.push(FileEvent {
                ts_ns: t,
                op: FileOp::Fdatasync,
                ..base
            });
        }
    }
    evs.truncate(n);
    (evs, BTreeMap::from([(1, "/data/fio.0.0".to_string())]))
}

fn opts() -> MapOptions {
    // 16 GiB file system
    MapOptions::from_mount_opts(4 << 20, "").expect("options")
}

fn run_model(evs: &[FileEvent], paths: &BTreeMap<u32, String>) -> u64 {
    let mut m = FsModel::new(opts()).expect("model");
    for (id, p) in paths {
        m.register_path(*id, p);
    }
    let mut reqs = 0u64;
    let mut sink = |_r: Request| reqs += 1;
    for e in evs {
        m.apply(e, &mut sink).expect("apply");
    }
    m.finish(&mut sink).expect("finish");
    reqs
}

fn map(c: &mut Criterion) {
    if cfg!(debug_assertions) {
        eprintln!("warning: benchmark built without optimisation");
    }
    let n: usize = std::env::var("PCSTREAM_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let (evs, paths) = mix(n);
    let mut g = c.benchmark_group("map");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("model_mix", |b| b.iter(|| run_model(&evs, &paths)));
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("t.parquet");
    let output = dir.path().join("b.parquet");
    write_events(&input, &evs, &paths, "bench mix").expect("write");
    g.bench_function("map_file_trace_mix", |b| {
        b.iter(|| map_file_trace(&input, &output, &opts(), &mut |_, _| true).expect("map"))
    });
    g.finish();
    let n = (n / 5).max(3);
    let (evs, paths) = fallocated_random(n);
    let mut g = c.benchmark_group("map");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("model_fallocated_random", |b| {
        b.iter(|| run_model(&evs, &paths))
    });
    g.finish();
}

criterion_group!(benches, map);
criterion_main!(benches);
