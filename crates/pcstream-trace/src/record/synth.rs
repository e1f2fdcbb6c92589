//! Synthetic shim logs, for tests, benchmarks and scale measurements: [`LogWriter`] writes one
//! process image's `.bin` and `.txt` files as the shim does (records gathered in per-thread
//! buffers of at most [`BUF_RECORDS`], each appended whole), and [`write_synthetic`] generates a
//! seeded run of many small writes by several processes and threads.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::shimlog::{Frame, ShimRecord, HEADER_BYTES, MAGIC, RECORD_BYTES};
use crate::filetrace::flags::{VIA_RECOVERED, VIA_STDIO, VIA_STDIO_INLINE};
use crate::filetrace::FileOp;

/// Records in one per-thread buffer of the shim (`BUF_RECORDS` in `shim/src/shim.h`).
pub const BUF_RECORDS: usize = 256;

/// The 88 bytes of `r`, as `struct pcshim_record`.
pub fn encode_record(r: &ShimRecord) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    for (i, v) in [r.ts_ns, r.offset, r.len, r.pc, r.dev, r.ino, r.path, r.aux]
        .iter()
        .enumerate()
    {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b[64..68].copy_from_slice(&r.pid.to_le_bytes());
    b[68..72].copy_from_slice(&r.tid.to_le_bytes());
    b[72..76].copy_from_slice(&r.fd.to_le_bytes());
    b[76..80].copy_from_slice(&r.flags.to_le_bytes());
    b[80..82].copy_from_slice(&r.op.to_le_bytes());
    b[82..84].copy_from_slice(&r.nframes.to_le_bytes());
    b
}

/// The 32 bytes of a `struct pcshim_header` (12 frames, method auto).
pub fn encode_header(pid: u32, ppid: u32) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(MAGIC);
    for (i, v) in [1u32, RECORD_BYTES as u32, pid, ppid, 12, 3]
        .iter()
        .enumerate()
    {
        h[8 + i * 4..12 + i * 4].copy_from_slice(&v.to_le_bytes());
    }
    h
}

/// One process image's log files, written as the shim writes them.
pub struct LogWriter {
    bin: BufWriter<File>,
    txt: BufWriter<File>,
    /// Per thread (tid, buffered records).
    bufs: Vec<(u32, Vec<u8>)>,
    records: u64,
}

impl LogWriter {
    /// Create `<pid>.<start_ns>.bin` and `.txt` in `dir`, with the header.
    pub fn create(dir: &Path, pid: u32, ppid: u32, start_ns: u64) -> std::io::Result<LogWriter> {
        let name = format!("{pid}.{start_ns}");
        let mut bin = BufWriter::new(File::create(dir.join(format!("{name}.bin")))?);
        bin.write_all(&encode_header(pid, ppid))?;
        let txt = BufWriter::new(File::create(dir.join(format!("{name}.txt")))?);
        Ok(LogWriter {
            bin,
            txt,
            bufs: Vec::new(),
            records: 0,
        })
    }

    /// A `P` line: `path` has the hash `hash`.
    pub fn path(&mut self, hash: u64, path: &str) -> std::io::Result<()> {
        writeln!(self.txt, "P {hash:016x} {} {path}", path.len())
    }

    /// An `S` line and its `F` lines.
    pub fn signature(&mut self, sig: u64, frames: &[Frame]) -> std::io::Result<()> {
        writeln!(self.txt, "S {sig:016x} {}", frames.len())?;
        for f in frames {
            writeln!(
                self.txt,
                "F {:016x} {:x} {} {}",
                f.module_id,
                f.offset,
                f.module.len(),
                f.module
            )?;
            if let Some(name) = &f.symbol {
                writeln!(self.txt, "N {} {name}", name.len())?;
            }
        }
        Ok(())
    }

    /// A `W` line.
    pub fn warn(&mut self, text: &str) -> std::io::Result<()> {
        writeln!(self.txt, "W {text}")
    }

    /// Add `r` to its thread's buffer; a full buffer is appended to the `.bin` file.
    pub fn record(&mut self, r: &ShimRecord) -> std::io::Result<()> {
        let i = match self.bufs.iter().position(|(t, _)| *t == r.tid) {
            Some(i) => i,
            None => {
                self.bufs
                    .push((r.tid, Vec::with_capacity(BUF_RECORDS * RECORD_BYTES)));
                self.bufs.len() - 1
            }
        };
        self.bufs[i].1.extend_from_slice(&encode_record(r));
        self.records += 1;
        if self.bufs[i].1.len() == BUF_RECORDS * RECORD_BYTES {
            self.flush_thread(r.tid)?;
        }
        Ok(())
    }

    /// Append thread `tid`'s buffered records (as the shim does when its buffer fills, at exit,
    /// when the thread ends).
    pub fn flush_thread(&mut self, tid: u32) -> std::io::Result<()> {
        if let Some((_, b)) = self.bufs.iter_mut().find(|(t, _)| *t == tid) {
            self.bin.write_all(b)?;
            b.clear();
        }
        Ok(())
    }

    /// Append every buffer (in the order the threads first wrote) and, if `clean`, the `E` line;
    /// without it the process image reads as killed.
    pub fn finish(mut self, clean: bool) -> std::io::Result<()> {
        for (_, b) in &mut self.bufs {
            self.bin.write_all(b)?;
            b.clear();
        }
        if clean {
            writeln!(self.txt, "E {}", self.records)?;
        }
        self.bin.flush()?;
        self.txt.flush()
    }
}

/// What [`write_synthetic`] generates.
#[derive(Clone, Copy, Debug)]
pub struct SynthSpec {
    pub processes: u32,
    /// Threads per process.
    pub threads: u32,
    /// Records of the threads' bodies (opens, writes, syncs, hints); each thread adds a close
    /// and each process an exit.
    pub records: u64,
    pub seed: u64,
    /// Nanoseconds between consecutive records (on average; some share a time stamp).
    pub step_ns: u64,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            processes: 4,
            threads: 4,
            records: 100_000,
            seed: 1,
            step_ns: 400,
        }
    }
}

/// Totals of what [`write_synthetic`] wrote, to check a conversion against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynthTotals {
    pub records: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub recovered_bytes: u64,
    pub inline_stdio_bytes: u64,
    pub hint_events: u64,
    /// Files written (one per thread) and distinct signatures.
    pub files: u64,
    pub signatures: u64,
}

/// splitmix64: a seeded, dependency-free generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Per-thread state of the generator.
struct Thread {
    pid: u32,
    tid: u32,
    file: u64,
    ino: u64,
    fd: i32,
    end: u64,
    pcs: [u64; 4],
    pc: usize,
    opened: bool,
}

/// Write the logs of `spec.processes` processes of `spec.threads` threads each into `dir`:
/// every thread opens its own file, then makes small writes (1–48 bytes through stdio, mostly
/// contiguous) with one of 4 signatures (changing about every 64 writes), now and then an
/// fsync, a write at a new offset, a safety-net (recovered) or inline-stdio write, a set_hint;
/// at the end it closes the file, and each process exits. Threads interleave in time (about
/// `step_ns` apart, some records sharing a time stamp) and buffers are appended when full or,
/// at random, earlier, so files interleave threads as real logs do.
pub fn write_synthetic(dir: &Path, spec: &SynthSpec) -> std::io::Result<SynthTotals> {
    let mut rng = Rng(spec.seed);
    let (np, nt) = (spec.processes.max(1), spec.threads.max(1));
    let mut totals = SynthTotals::default();
    let mut writers = Vec::new();
    let mut threads = Vec::new();
    for p in 0..np {
        let pid = 1000 + p;
        let mut w = LogWriter::create(dir, pid, 1, 1_000 + p as u64)?;
        for t in 0..nt {
            threads.push(Thread::new(&mut w, p, t, nt, &mut totals)?);
        }
        writers.push(w);
    }
    let mut ts = 1_000_000u64;
    for _ in 0..spec.records {
        // A quarter of the steps share the previous time stamp (ties across threads).
        if rng.below(4) != 0 {
            ts += 1 + rng.below(2 * spec.step_ns.max(1));
        }
        let k = rng.below(threads.len() as u64) as usize;
        let th = &mut threads[k];
        let w = &mut writers[(th.pid - 1000) as usize];
        let r = th.next_record(&mut rng, ts, &mut totals);
        w.record(&r)?;
        totals.records += 1;
        if rng.below(300) == 0 {
            w.flush_thread(th.tid)?;
        }
    }
    for th in &threads {
        ts += 1;
        let w = &mut writers[(th.pid - 1000) as usize];
        w.record(&th.rec(ts, FileOp::Close))?;
        totals.records += 1;
        if th.tid == th.pid {
            continue;
        }
        w.flush_thread(th.tid)?;
    }
    for (p, mut w) in writers.into_iter().enumerate() {
        ts += 1;
        let main = &threads[p * nt as usize];
        w.record(&ShimRecord {
            fd: -1,
            dev: 0,
            ino: 0,
            path: 0,
            ..main.rec(ts, FileOp::Exit)
        })?;
        totals.records += 1;
        w.finish(true)?;
    }
    Ok(totals)
}

impl Thread {
    /// Thread `t` of process `p` (of `nt` threads each): its file's path and its 4 signatures
    /// written to its process's log `w`.
    fn new(
        w: &mut LogWriter,
        p: u32,
        t: u32,
        nt: u32,
        totals: &mut SynthTotals,
    ) -> std::io::Result<Thread> {
        let pid = 1000 + p;
        let file = 0x5eed_0000_0000 + (p as u64) * 1000 + t as u64;
        w.path(file, &format!("/synth/p{p}/t{t}.log"))?;
        let mut pcs = [0u64; 4];
        for (k, pc) in pcs.iter_mut().enumerate() {
            *pc = 0xabc0_0000 + (p as u64) * 10_000 + t as u64 * 10 + k as u64;
            let frames = [
                Frame {
                    module: "/usr/bin/synth".into(),
                    module_id: 7,
                    offset: 0x1000 + k as u64 * 16,
                    symbol: None,
                },
                Frame {
                    module: "/usr/lib/libc.so.6".into(),
                    module_id: 9,
                    offset: 0x2000 + t as u64,
                    symbol: None,
                },
            ];
            w.signature(*pc, &frames)?;
            totals.signatures += 1;
        }
        totals.files += 1;
        Ok(Thread {
            pid,
            tid: if t == 0 { pid } else { 100_000 * (t + 1) + pid },
            file,
            ino: 1 + (p * nt + t) as u64,
            fd: 3 + t as i32,
            end: 0,
            pcs,
            pc: 0,
            opened: false,
        })
    }

    /// A record of this thread on its file.
    fn rec(&self, ts: u64, op: FileOp) -> ShimRecord {
        ShimRecord {
            ts_ns: ts,
            pid: self.pid,
            tid: self.tid,
            op: op as u16,
            fd: self.fd,
            dev: 1,
            ino: self.ino,
            path: self.file,
            ..Default::default()
        }
    }

    /// The thread's next record at `ts`: its open first, then mostly small writes, now and
    /// then an fsync or a set_hint (see [`write_synthetic`]).
    fn next_record(&mut self, rng: &mut Rng, ts: u64, totals: &mut SynthTotals) -> ShimRecord {
        if !self.opened {
            self.opened = true;
            return ShimRecord {
                flags: 0o1101,
                ..self.rec(ts, FileOp::Open)
            };
        }
        match rng.below(4000) {
            0 => self.rec(ts, FileOp::Fsync),
            1 => {
                totals.hint_events += 1;
                ShimRecord {
                    offset: 2,
                    ..self.rec(ts, FileOp::SetHint)
                }
            }
            x => {
                if x < 8 {
                    self.end += 4096 * (1 + rng.below(4));
                }
                if rng.below(64) == 0 {
                    self.pc = rng.below(4) as usize;
                }
                let len = 1 + rng.below(48);
                let flags = match x {
                    8..=11 => VIA_RECOVERED,
                    12..=15 => VIA_STDIO | VIA_STDIO_INLINE,
                    _ => VIA_STDIO,
                };
                if flags & VIA_RECOVERED != 0 {
                    totals.recovered_bytes += len;
                }
                if flags & VIA_STDIO_INLINE != 0 {
                    totals.inline_stdio_bytes += len;
                }
                totals.writes += 1;
                totals.write_bytes += len;
                let r = ShimRecord {
                    offset: self.end,
                    len,
                    pc: self.pcs[self.pc],
                    flags,
                    nframes: 2,
                    ..self.rec(ts, FileOp::Write)
                };
                self.end += len;
                r
            }
        }
    }
}
