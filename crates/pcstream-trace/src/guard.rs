//! Panics of third-party decoders turned into errors.
//!
//! A decoder that indexes its buffers directly can panic on a corrupt data page (a flipped byte
//! in an RLE run, a bad dictionary index) instead of returning an error. Parquet 56 did; 60
//! returns errors for every corruption the tests make, but the reader does not rely on it. Every call
//! into the decoder goes through [`contain`], which catches such a panic and returns its message,
//! so the reader reports "not a readable Parquet file" with the file and row group like any other
//! decoding error. While a call is contained the panic hook stays quiet for that thread (no
//! "thread panicked at ..." on stderr); panics anywhere else are printed as usual.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Depth of [`contain`] calls on this thread: the hook prints nothing while it is > 0.
    static CONTAINED: Cell<u32> = const { Cell::new(0) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CONTAINED.with(|c| c.get()) == 0 {
                previous(info);
            }
        }));
    });
}

/// Run `f`; a panic inside it becomes `Err(message)`. `f` must leave no shared state half
/// updated (the decoders it is used for own their state and are dropped after an error).
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    CONTAINED.with(|c| c.set(c.get() + 1));
    let res = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(c.get() - 1));
    res.map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        format!("the decoder failed on corrupt data: {what}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error() {
        let r: Result<u32, String> = contain(|| {
            let v: Vec<u32> = Vec::new();
            #[allow(clippy::unnecessary_operation)]
            v[std::hint::black_box(3)]
        });
        let e = r.unwrap_err();
        assert!(e.contains("index out of bounds"), "{e}");
        assert_eq!(contain(|| 7).unwrap(), 7);
    }
}
