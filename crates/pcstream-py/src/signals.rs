//! SIGINT and SIGTERM while the engine runs without the GIL.
//!
//! Python runs its signal handlers only between bytecodes of the main thread, so a signal that
//! comes while the engine works is seen at the engine's next progress call at the earliest — and
//! aging, the model's final writeback and the generators make none. [`arm`] puts a handler in
//! front of the interpreter's own for both signals: it sets the engine's stop request
//! (`pcstream_trace::cancel`), which every long loop reads, then calls the interpreter's handler
//! as before, so Python still raises `KeyboardInterrupt` (or the CLI's `Terminated`) once the
//! engine has returned. A signal whose disposition is the default or ignore is left alone (a
//! library user's SIGTERM still ends the process as it always did).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pcstream_trace::cancel;

/// The signals that stop the engine's work.
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Per signal of [`SIGNALS`]: the handler ours calls after setting the request, and whether it
/// takes the three arguments of `SA_SIGINFO`.
static PREVIOUS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
static PREVIOUS_SIGINFO: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

type Handler = extern "C" fn(libc::c_int);
type InfoHandler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

fn index_of(signal: libc::c_int) -> Option<usize> {
    SIGNALS.iter().position(|&s| s == signal)
}

/// Set the stop request, then run the handler that was in place before ours.
extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    cancel::request(signal);
    let Some(i) = index_of(signal) else { return };
    let previous = PREVIOUS[i].load(Ordering::Acquire);
    if previous == 0 {
        return;
    }
    // The address was read from sigaction, with the flag saying how the handler is called.
    #[allow(unsafe_code)]
    unsafe {
        if PREVIOUS_SIGINFO[i].load(Ordering::Acquire) {
            std::mem::transmute::<usize, InfoHandler>(previous)(signal, info, ctx);
        } else {
            std::mem::transmute::<usize, Handler>(previous)(signal);
        }
    }
}

/// Forget an earlier stop request and put [`on_signal`] in front of the current handler of each
/// signal, unless it is there already or the disposition is the default or ignore. Called at the
/// start of every engine call that writes or runs long: Python code may have installed another
/// handler since (`signal.signal` replaces ours), and that one is chained to in turn.
pub fn arm() {
    cancel::clear();
    let ours = on_signal as InfoHandler as usize;
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // sigaction with valid pointers to zeroed structs is sound; the struct is plain data.
        #[allow(unsafe_code)]
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            let handler = current.sa_sigaction;
            if handler == ours || handler == libc::SIG_DFL || handler == libc::SIG_IGN {
                continue;
            }
            PREVIOUS[i].store(handler, Ordering::Release);
            PREVIOUS_SIGINFO[i].store(current.sa_flags & libc::SA_SIGINFO != 0, Ordering::Release);
            let mut mine = current;
            mine.sa_sigaction = ours;
            mine.sa_flags = current.sa_flags | libc::SA_SIGINFO;
            libc::sigaction(signal, &mine, std::ptr::null_mut());
        }
    }
}
