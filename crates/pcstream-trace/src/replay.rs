//! Driving a simulation from a trace file: capacity check, the oracle's pre-pass, streaming the
//! rows through the engine with decoding on a second thread, progress callbacks.

use std::path::Path;

use pcstream_core::request::Op;
use pcstream_core::{Request, SimError, SimOptions, SimResult, Simulator, SsdConfig};

use crate::blocktrace::{scan_capacity, BlockTraceReader};
use crate::error::TraceError;
use crate::input_file::{read_capped, PC_TABLE_MAX_BYTES};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("{0}")]
    Sim(SimError),
    /// The progress callback asked to stop (e.g. Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// `--table` was given for a policy that keeps no persistent table.
    #[error("--table: policy {0} keeps no persistent table")]
    NoTable(String),
}

/// Rows between progress callbacks.
pub const PROGRESS_ROWS: u64 = 1 << 20;

/// Simulate `path` on `cfg` with a persistent policy table kept in the file `table`: loaded
/// before the run when the file exists, written (whole) after it, and named in the result's
/// `saved_table`. Without `table` this is [`run_trace`].
pub fn run_with_table_file(
    path: &Path,
    cfg: &SsdConfig,
    opts: SimOptions,
    table: Option<&Path>,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<SimResult, RunError> {
    let Some(t) = table else {
        return run_trace(path, cfg, opts, None, progress);
    };
    let label = t.display().to_string();
    // A missing table is learned from scratch; anything else at the path must be a table.
    let text = match std::fs::metadata(t) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => Some(read_capped(t, "PC table", PC_TABLE_MAX_BYTES)?),
    };
    let policy = opts.policy.clone();
    let mut r = run_trace(
        path,
        cfg,
        opts,
        text.as_deref().map(|t| (t, label.as_str())),
        progress,
    )?;
    let saved = r.saved_table.take().ok_or(RunError::NoTable(policy))?;
    // Through a temporary file: a full disk never leaves a truncated table.
    let tmp = crate::parquet::temp_path(t)?;
    std::fs::write(&tmp, saved)
        .and_then(|_| std::fs::rename(&tmp, t))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            TraceError::Io {
                path: label.clone(),
                why: format!(
                    "cannot write the table ({}); check free disk space; the old table is unchanged",
                    crate::error::one_line(e)
                ),
            }
        })?;
    r.saved_table = Some(label);
    Ok(r)
}

/// Simulate `path` on `cfg`, with the persistent policy table `table` (its text, and the file it
/// came from for errors) loaded first. `progress(done_rows, total_rows)` returns false to stop.
pub fn run_trace(
    path: &Path,
    cfg: &SsdConfig,
    opts: SimOptions,
    table: Option<(&str, &str)>,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<SimResult, RunError> {
    let reader = BlockTraceReader::open(path)?;
    check_trace(path, &reader, cfg)?;
    let aged_rows = reader.meta().aged.map_or(0, |a| a.rows);
    // Before anything is allocated: the engine state must fit the memory available.
    let (layout, policy_bytes) = Simulator::page_layout(cfg, &opts).map_err(RunError::Sim)?;
    crate::meminfo::check_engine(cfg, &layout, policy_bytes)
        .map_err(|e| RunError::Sim(e.into()))?;
    let mut sim = Simulator::new(cfg, opts).map_err(RunError::Sim)?;
    if let Some((t, label)) = table {
        load_table(&mut sim, t, label)?;
    }
    if aged_rows > 0 {
        let mut r = BlockTraceReader::open(path)?;
        let (aged, _) = split_aged(&mut r, aged_rows, path)?;
        sim.set_aged(&aged).map_err(with_index(path, 0))?;
    }
    if sim.needs_death_times() {
        death_times(&mut sim, path, aged_rows)?;
    }
    sim.start().map_err(RunError::Sim)?;
    feed_all(&mut sim, reader, path, aged_rows, progress)?;
    Ok(sim.finish())
}

/// Refuse a trace that addresses more pages than `cfg` has, or has no requests after its aged
/// rows: both are input errors naming the file.
fn check_trace(path: &Path, reader: &BlockTraceReader, cfg: &SsdConfig) -> Result<(), RunError> {
    let label = path.display().to_string();
    let capacity = match reader.meta().capacity_pages {
        Some(c) => c,
        None => scan_capacity(path)?,
    };
    if capacity > cfg.logical_pages() {
        return Err(RunError::Trace(TraceError::Io {
            path: label,
            why: format!(
                "the trace addresses {capacity} pages but SSD '{}' has {} logical pages; use a larger --ssd or a trace generated for it",
                cfg.name,
                cfg.logical_pages()
            ),
        }));
    }
    let aged_rows = reader.meta().aged.map_or(0, |a| a.rows);
    if reader.num_rows() <= aged_rows {
        return Err(RunError::Trace(TraceError::Io {
            path: label,
            why: "has no requests to simulate; check how the trace was made".into(),
        }));
    }
    Ok(())
}

/// Load the persistent policy table `t` (read from the file `label`) into `sim`'s policy.
fn load_table(sim: &mut Simulator, t: &str, label: &str) -> Result<(), RunError> {
    if sim.policy_mut().save_state().is_none() {
        return Err(RunError::NoTable(sim.policy_mut().name().to_string()));
    }
    // The table is a file the user gave: a malformed one is a bad input file.
    sim.policy_mut().load_state(t).map_err(|e| {
        let why = match e {
            SimError::BadParam(w) | SimError::State(w) => w,
            other => other.to_string(),
        };
        RunError::Trace(TraceError::Io {
            path: label.to_string(),
            why: format!(
                "not a usable policy table ({}); remove the file to start a new table",
                crate::error::one_line(why)
            ),
        })
    })
}

/// The engine's bad-request errors as input errors naming `path` and the row, counted from the
/// file's first row (aged rows included): the engine counts from `offset`.
fn with_index(path: &Path, offset: u64) -> impl Fn(SimError) -> RunError + '_ {
    move |e: SimError| match e {
        SimError::BadRequest { index, what } => RunError::Trace(TraceError::Io {
            path: path.display().to_string(),
            why: format!("row {}: {what}", index + offset),
        }),
        other => RunError::Sim(other),
    }
}

/// The oracle's pre-pass: every request of the trace proper read once for the death times,
/// checked against the device's size first (the pass itself does not check).
fn death_times(sim: &mut Simulator, path: &Path, aged_rows: u64) -> Result<(), RunError> {
    let mut pass = sim.death_pass();
    let mut r = BlockTraceReader::open(path)?;
    let (_, mut buf) = split_aged(&mut r, aged_rows, path)?;
    let logical = sim.logical_pages();
    let mut index = aged_rows;
    loop {
        for q in &buf {
            if q.op != Op::Flush as u8 && q.lpn.saturating_add(q.pages as u64) > logical {
                return Err(with_index(path, 0)(SimError::BadRequest {
                    index,
                    what: format!(
                        "lpn {} + {} pages is beyond the SSD's {logical} logical pages",
                        q.lpn, q.pages
                    ),
                }));
            }
            index += 1;
        }
        pass.feed_batch(&buf);
        if !r.next_batch(&mut buf)? {
            break;
        }
    }
    sim.set_death_times(pass.finish());
    Ok(())
}

/// Stream the trace through the started engine, decoding on a second thread, skipping the aged
/// rows (`start` wrote them), with a progress callback every [`PROGRESS_ROWS`] rows and at the
/// end.
fn feed_all(
    sim: &mut Simulator,
    reader: BlockTraceReader,
    path: &Path,
    aged_rows: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(), RunError> {
    let total = reader.num_rows();
    let mut pf = reader.into_prefetch(4);
    let (mut done, mut next_report) = (0u64, PROGRESS_ROWS);
    let mut skip = aged_rows;
    while let Some(batch) = pf.next_batch() {
        let batch = batch?;
        let n = batch.len() as u64;
        let from = skip.min(n) as usize;
        skip -= from as u64;
        sim.feed(&batch[from..])
            .map_err(with_index(path, aged_rows))?;
        done += n;
        pf.recycle(batch);
        // A signal stops the run at the next batch, not at the next progress call.
        if crate::cancel::requested() {
            return Err(RunError::Interrupted);
        }
        if done >= next_report {
            next_report += PROGRESS_ROWS;
            if !progress(done, total) {
                return Err(RunError::Interrupted);
            }
        }
    }
    progress(done, total);
    Ok(())
}

/// Read the first `rows` rows of `r` (the aged state); returns them and the rest of the batch
/// that held the last of them (the first rows of the trace proper).
fn split_aged(
    r: &mut BlockTraceReader,
    rows: u64,
    path: &Path,
) -> Result<(Vec<Request>, Vec<Request>), TraceError> {
    let mut aged = Vec::new();
    let mut buf = Vec::new();
    while (aged.len() as u64) < rows {
        if !r.next_batch(&mut buf)? {
            return Err(TraceError::BadMeta {
                path: path.display().to_string(),
                key: crate::blocktrace::format::KEY_AGED_ROWS.into(),
                why: format!(
                    "says {rows} aged rows but the trace has {}; re-map the trace",
                    aged.len()
                ),
            });
        }
        let need = (rows - aged.len() as u64).min(buf.len() as u64) as usize;
        aged.extend_from_slice(&buf[..need]);
        buf.drain(..need);
    }
    Ok((aged, buf))
}
