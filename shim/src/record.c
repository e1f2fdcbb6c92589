/* record.c: building records (time, pid/tid, the PC signature from stackwalk.c) into the calling
 * thread's buffer (logs.c). The re-entrancy guard t_guard is defined here; enter()/leave() and the
 * hook tail RECORD_IF are in shim.h. The fd table is fdtable.c's, the rec_* helpers the hooks call
 * are rec.c's. */
#include "shim.h"

TLS int t_guard;

/* ---------- recording ---------- */
/* `r` holds what the caller records (op, fd, offset, len, flags, dev, ino, path, aux; the rest
 * 0, as a compound literal leaves it); the time, pid, tid and the PC signature (computed once
 * per `pc`; none without one) are filled in here, then `r` goes to the thread's buffer. */
void push_record(struct pcshim_record *r, struct pc_once *pc)
{
    if (!g_record)
        return; /* live hints only (pcstream run): no logs */
    struct tbuf *b = my_buf();
    if (pc) {
        if (!pc->done) {
            pc->pc = signature(b, &pc->nframes);
            pc->done = 1;
        }
        r->pc = pc->pc;
        r->nframes = pc->nframes;
    }
    r->ts_ns = now_ns();
    r->pid = g_pid;
    r->tid = b->tid;
    if (atomic_load_explicit(&g_finished, memory_order_relaxed))
        return; /* the process image has ended (E written): nothing more is recorded */
    buf_append(b, r);
    atomic_fetch_add(&g_records, 1);
}

/* push_record with a PC of its own (`want_pc`) or none. */
void add_record(struct pcshim_record *r, int want_pc)
{
    struct pc_once pc = {0, 0, 0};
    push_record(r, want_pc ? &pc : NULL);
}
