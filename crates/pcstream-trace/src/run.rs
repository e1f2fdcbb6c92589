//! Driving a simulation from a trace file: capacity check, the oracle's pre-pass, streaming the
//! rows through the engine with decoding on a second thread, progress callbacks.

use std::path::Path;

use pcstream_core::{SimError, SimOptions, SimResult, Simulator, SsdConfig};

use crate::blocktrace::{scan_capacity, BlockTraceReader};
use crate::error::TraceError;

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
    let text = match t.exists() {
        true => Some(std::fs::read_to_string(t).map_err(|e| TraceError::Io {
            path: label.clone(),
            why: format!("cannot read the table ({e})"),
        })?),
        false => None,
    };
    let policy = opts.policy.clone();
    let mut r = run_trace(path, cfg, opts, text.as_deref(), progress)?;
    let saved = r.saved_table.take().ok_or(RunError::NoTable(policy))?;
    std::fs::write(t, saved).map_err(|e| TraceError::Io {
        path: label.clone(),
        why: format!("cannot write the table ({e})"),
    })?;
    r.saved_table = Some(label);
    Ok(r)
}

/// Simulate `path` on `cfg`. `progress(done_rows, total_rows)` returns false to stop.
pub fn run_trace(
    path: &Path,
    cfg: &SsdConfig,
    opts: SimOptions,
    table: Option<&str>,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<SimResult, RunError> {
    let label = path.display().to_string();
    let reader = BlockTraceReader::open(path)?;
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
    let total = reader.num_rows();
    let mut sim = Simulator::new(cfg, opts).map_err(RunError::Sim)?;
    if let Some(t) = table {
        sim.policy_mut().load_state(t).map_err(RunError::Sim)?;
    }
    let with_index = |e: SimError| match e {
        SimError::BadRequest { index, what } => RunError::Trace(TraceError::Io {
            path: path.display().to_string(),
            why: format!("row {index}: {what}"),
        }),
        other => RunError::Sim(other),
    };
    if sim.needs_death_times() {
        let mut pass = sim.death_pass();
        let mut r = BlockTraceReader::open(path)?;
        let mut buf = Vec::new();
        let logical = sim.logical_pages();
        let mut index = 0u64;
        while r.next_batch(&mut buf)? {
            for q in &buf {
                if q.op != 3 && q.lpn.saturating_add(q.pages as u64) > logical {
                    return Err(with_index(SimError::BadRequest {
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
        }
        sim.set_death_times(pass.finish());
    }
    sim.start().map_err(RunError::Sim)?;
    let mut pf = reader.into_prefetch(4);
    let (mut done, mut next_report) = (0u64, PROGRESS_ROWS);
    while let Some(batch) = pf.next_batch() {
        let batch = batch?;
        sim.feed(&batch).map_err(with_index)?;
        done += batch.len() as u64;
        pf.recycle(batch);
        if done >= next_report {
            next_report += PROGRESS_ROWS;
            if !progress(done, total) {
                return Err(RunError::Interrupted);
            }
        }
    }
    progress(done, total);
    Ok(sim.finish())
}
