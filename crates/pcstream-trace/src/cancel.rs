//! A request to stop long work, and the outputs finished before it came.
//!
//! The request is one process-wide atomic: a signal handler sets it (the Python binding's, for
//! SIGINT and SIGTERM; a store is async-signal-safe), and every long loop of map, import and gen
//! reads it (one relaxed load) so the work stops within a fraction of a second whatever it is
//! doing — including the parts that make no progress call (aging, the model's final writeback,
//! the generators). The loops return [`TraceError::Interrupted`]; the atomic writer then removes
//! its temporary file. [`crate::parquet::output`] checks the request once more right before the
//! rename and records each output it renamed into place, so the caller can tell "nothing was
//! written" from "the output was complete before the signal came" ([`kept`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use crate::error::TraceError;

/// The signal that asked to stop, 0 if none.
static REQUESTED: AtomicI32 = AtomicI32::new(0);

/// Outputs renamed into place since the last [`clear`].
static KEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Ask every long loop to stop (`signal`: the signal's number, for the caller's message; any
/// non-zero value). Async-signal-safe.
pub fn request(signal: i32) {
    REQUESTED.store(signal.max(1), Ordering::Relaxed);
}

/// Whether a stop was requested since the last [`clear`].
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed) != 0
}

/// [`TraceError::Interrupted`] if a stop was requested: the check long loops make.
pub fn check() -> Result<(), TraceError> {
    if requested() {
        Err(TraceError::Interrupted)
    } else {
        Ok(())
    }
}

/// Forget a previous request and the outputs kept so far: a new piece of work starts.
pub fn clear() {
    REQUESTED.store(0, Ordering::Relaxed);
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Record that `path` was renamed into place, complete.
pub(crate) fn note_kept(path: &Path) {
    KEPT.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.to_path_buf());
}

/// The outputs renamed into place since the last [`clear`], in order.
pub fn kept() -> Vec<PathBuf> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
