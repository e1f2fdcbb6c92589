/* stackwalk.c: the PC signature of a call: the walkers (fp: the rbp chain; scan: stack words after
 * a call instruction; unwind: libunwind's unw_backtrace; auto: fp when every frame record it used
 * belongs to a frame-pointer module, else the call-frame rules of cfi.c, else unwind), the
 * per-thread memos of signatures, the hash of the frames and the S/F lines of a signature seen
 * for the first time. The module table the walkers look addresses up in is modules.c's; the
 * configuration below is set, and libunwind loaded, by lifecycle.c. */
#include "shim.h"

/* ---------- configuration: set once by lifecycle.c at init, read on every walk ---------- */
int g_method = M_AUTO;
int g_frames = 12;
int (*g_unw_backtrace)(void **, int);
uintptr_t g_self_lo, g_self_hi; /* the shim's own code, skipped by the walkers */

/* ---------- stack walkers ---------- */
static int in_self(uintptr_t a) { return a >= g_self_lo && a < g_self_hi; }

static int frame_ok(const struct tbuf *b, uintptr_t f) { return f >= b->stack_lo && f + 16 <= b->stack_hi && !(f & 7); }

/* The frame record of the hook that was called by the program: the first record, following the
 * shim's own rbp chain (the shim is built with frame pointers), whose return address lies outside
 * the shim. Its fp[1] is the return address of the hooked call; NULL if the chain is broken. */
__attribute__((noinline)) static uintptr_t *hook_frame(const struct tbuf *b)
{
    uintptr_t *fp = __builtin_frame_address(0);
    for (int guard = 0; guard < 64; guard++) {
        if (!frame_ok(b, (uintptr_t)fp))
            return NULL;
        if (!in_self(fp[1]))
            return fp;
        if (fp[0] <= (uintptr_t)fp)
            return NULL;
        fp = (uintptr_t *)fp[0];
    }
    return NULL;
}

/* The return addresses of the frame records from the hook's record `fp` on, up to `max`: the
 * chain ends at a null, non-increasing or misaligned record, or one outside the thread's stack. */
static int read_chain(const struct tbuf *b, const uintptr_t *fp, uintptr_t *ret, int max)
{
    int n = 0;
    while (fp && n < max) {
        ret[n++] = fp[1];
        uintptr_t next = fp[0];
        if (n == max || next <= (uintptr_t)fp || !frame_ok(b, next))
            break;
        fp = (const uintptr_t *)next;
    }
    return n;
}

/* fp: the chain's frames up to the first address outside every executable segment. *ended = 1
 * if they stopped before `max` frames: then the last frame's own record was read too.
 * `for_auto`: -1 at the first frame (before the last of `max`) in a module without frame
 * pointers, whose record the walk would rely on: auto does not take that walk (fp_trusted). */
static int fp_frames(struct segtab *t, const uintptr_t *ret, int rn, int max, uintptr_t *out, struct seg **sg,
                     int *ended, int for_auto)
{
    int n = 0;
    *ended = 1;
    for (; n < rn; n++) {
        /* consecutive frames are mostly in one module: try the previous frame's segment first */
        struct seg *s = n > 0 && ret[n] >= sg[n - 1]->lo && ret[n] < sg[n - 1]->hi ? sg[n - 1] : find_seg(t, ret[n]);
        if (!s)
            return n;
        if (for_auto && s->has_fp != 1 && n < max - 1)
            return -1;
        sg[n] = s;
        out[n] = ret[n];
    }
    *ended = n < max;
    return n;
}

static int after_call(const struct seg *s, uintptr_t a)
{
    const unsigned char *p = (const unsigned char *)a;
    if (a - 5 >= s->lo && p[-5] == 0xe8)
        return 1; /* call rel32 */
    if (a - 2 >= s->lo && p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
        return 1; /* call *%reg */
    if (a - 3 >= s->lo && p[-3] == 0xff && ((p[-2] >> 3) & 7) == 2 && (p[-2] >> 6) == 1)
        return 1; /* call *disp8(%reg) */
    if (a - 6 >= s->lo && p[-6] == 0xff && ((p[-5] >> 3) & 7) == 2 && (p[-5] >> 6) == 2)
        return 1; /* call *disp32(%reg) */
    if (a - 6 >= s->lo && p[-6] == 0xff && p[-5] == 0x15)
        return 1; /* call *rel32(%rip) */
    if (a - 3 >= s->lo && p[-3] == 0x41 && p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
        return 1; /* call *%r8..%r15 */
    return 0;
}

/* scan: the stack words above the hooked call, from the hook's return-address slot upward (the
 * shim's own frames, whose uninitialised locals hold stale addresses, are never read), at most
 * SCAN_WORDS words; keep the values that lie in an executable segment outside the shim and follow
 * a call instruction. The first is the exact return address of the hooked call. */
static int walk_scan(struct tbuf *b, struct segtab *t, const uintptr_t *fp, uintptr_t *out, struct seg **sg,
                     int max)
{
    if (!fp)
        return 0;
    const uintptr_t *w = fp + 1;
    int n = 0;
    for (int i = 0; i < SCAN_WORDS && n < max; i++, w++) {
        if ((uintptr_t)(w + 1) > b->stack_hi)
            break;
        struct seg *s = find_seg(t, *w);
        if (s && !in_self(*w) && after_call(s, *w)) {
            sg[n] = s;
            out[n++] = *w;
        }
    }
    return n;
}

static int walk_unwind(struct segtab *t, uintptr_t *out, struct seg **sg, int max)
{
    void *tmp[MAX_FRAMES + 8];
    t_unwinding = 1;
    int got = g_unw_backtrace(tmp, max + 8 < MAX_FRAMES + 8 ? max + 8 : MAX_FRAMES + 8);
    t_unwinding = 0;
    int n = 0;
    for (int i = 0; i < got && n < max; i++) {
        uintptr_t a = (uintptr_t)tmp[i];
        if (in_self(a))
            continue;
        sg[n] = find_seg(t, a);
        out[n++] = a;
    }
    return n;
}

/* auto: the fp walk is right if every record it read belongs to a module that keeps frame
 * pointers: the records of the functions holding frames 0..n-2, and of frame n-1 too when the
 * chain ended early (it supplied the end). */
static int fp_trusted(struct seg **sg, int n, int ended)
{
    if (n == 0)
        return 0;
    int need = ended ? n : n - 1;
    for (int i = 0; i < need; i++)
        if (!sg[i] || sg[i]->has_fp != 1)
            return 0;
    return 1;
}

/* Kept out of line: its 8 KiB line would otherwise sit in every walk's stack frame. */
__attribute__((noinline)) static void emit_sig(uint64_t sig, struct seg **sg, const uintptr_t *pcs, int n)
{
    char line[8192];
    size_t at = put_str(line, 0, sizeof line, "S ");
    at = put_hex(line, at, sizeof line, sig, 16);
    line[at++] = ' ';
    at = put_dec(line, at, sizeof line, (uint64_t)n);
    line[at++] = '\n';
    for (int i = 0; i < n; i++) {
        struct seg *s = sg[i];
        const char *path = s ? s->path : "?";
        size_t len = strlen(path);
        if (at + len + 64 > sizeof line)
            break;
        at = put_str(line, at, sizeof line, "F ");
        at = put_hex(line, at, sizeof line, s ? s->module : 0, 16);
        line[at++] = ' ';
        at = put_hex(line, at, sizeof line, s ? pcs[i] - s->bias : pcs[i], 1);
        line[at++] = ' ';
        at = put_dec(line, at, sizeof line, len);
        line[at++] = ' ';
        at = put_str(line, at, sizeof line, path);
        line[at++] = '\n';
    }
    txt_line(line, at);
}

/* The signature of a frame list is a function of its return addresses and the module table, so
 * each thread remembers the last ones it hashed: checking MEMO_FRAMES addresses against a slot
 * costs less than mixing them (two dependent multiplications per frame in pc_sig_step). */
#define MEMO_SLOTS 64
#define MEMO_FRAMES 16
struct memo {
    const struct segtab *t;
    uint64_t sig;
    int n;
    uintptr_t pcs[MEMO_FRAMES];
};

/* The fp walk's frames, and auto's verdict on them, are a function of the chain it reads and the
 * module table: each thread remembers, per chain, the signature the walk gave (auto: or that it
 * is not to be trusted), so a repeated call path costs reading and comparing its records. */
enum { CH_SIG = 1, CH_UNTRUSTED = 2 };
struct chain {
    const struct segtab *t;
    uint64_t sig;
    int n, kind, nframes;
    uintptr_t ret[MEMO_FRAMES];
};
/* A thread's memos, mapped at its first signature (static TLS would take their room from every
 * thread's stack); none if that fails. Unmapped when the thread ends. */
struct memos {
    struct memo sigs[MEMO_SLOTS];
    struct chain chains[MEMO_SLOTS];
};
static TLS struct memos *t_memos;
static TLS int t_memos_failed;

static struct memos *memos(void)
{
    if (!t_memos && !t_memos_failed)
        t_memos_failed = !(t_memos = thread_block(sizeof *t_memos));
    return t_memos;
}

void walk_caches_free(void)
{
    thread_block_free(t_memos, sizeof *t_memos);
    t_memos = NULL;
    t_memos_failed = 1; /* a later write of this thread (another key's destructor) goes without */
    cfi_thread_gone();
}

static uint64_t frames_sig(const struct segtab *t, struct seg **sg, const uintptr_t *pcs, int n)
{
    uint64_t k = (uint64_t)n;
    for (int i = 0; i < n; i++)
        k = (k ^ pcs[i]) * 0x9e3779b97f4a7c15ULL;
    struct memos *ms = memos();
    struct memo *m = ms ? &ms->sigs[k >> 58 & (MEMO_SLOTS - 1)] : NULL;
    if (m && m->t == t && m->n == n) {
        int i = 0;
        while (i < n && m->pcs[i] == pcs[i])
            i++;
        if (i == n)
            return m->sig;
    }
    uint64_t h = PC_SIG_SEED;
    for (int i = 0; i < n; i++) {
        struct seg *s = sg[i];
        h = pc_sig_step(h, s ? s->module : 0, s ? pcs[i] - s->bias : pcs[i]);
    }
    if (!h)
        h = 1;
    if (m && n <= MEMO_FRAMES) {
        m->t = t;
        m->sig = h;
        m->n = n;
        memcpy(m->pcs, pcs, sizeof(uintptr_t) * (size_t)n);
    }
    return h;
}

/* The slot of a chain; *hit: it holds this chain's verdict. */
static struct chain *chain_slot(const struct segtab *t, const uintptr_t *ret, int n, int *hit)
{
    uint64_t k = (uint64_t)n;
    for (int i = 0; i < n; i++)
        k = (k ^ ret[i]) * 0x9e3779b97f4a7c15ULL;
    struct memos *ms = memos();
    struct chain *c = ms ? &ms->chains[k >> 58 & (MEMO_SLOTS - 1)] : NULL;
    int i = 0;
    if (!c) {
        *hit = 0;
        return NULL;
    }
    if (c->t == t && c->n == n)
        while (i < n && c->ret[i] == ret[i])
            i++;
    *hit = c->t == t && c->n == n && i == n && c->kind;
    return c;
}

/* fp and auto: the signature, or -1 for auto when the fp walk is not trusted (then unwind). */
static int fp_or_auto(struct tbuf *b, struct segtab *t, const uintptr_t *fp, uintptr_t *pcs, struct seg **sg,
                      uint64_t *sig)
{
    int for_auto = g_method == M_AUTO && g_unw_backtrace;
    uintptr_t ret[MAX_FRAMES];
    int rn = read_chain(b, fp, ret, g_frames), hit = 0, ended = 0;
    struct chain *c = rn <= MEMO_FRAMES ? chain_slot(t, ret, rn, &hit) : NULL;
    if (hit && c->kind == CH_UNTRUSTED && for_auto)
        return -1;
    if (hit && c->kind == CH_SIG && !seen_insert(g_seen_sig, c->sig)) {
        *sig = c->sig;
        return c->nframes;
    }
    int n = fp_frames(t, ret, rn, g_frames, pcs, sg, &ended, for_auto);
    int trusted = !for_auto || (n >= 0 && fp_trusted(sg, n, ended));
    if (c) {
        c->t = t;
        c->n = rn;
        memcpy(c->ret, ret, sizeof(uintptr_t) * (size_t)rn);
        c->kind = trusted ? CH_SIG : CH_UNTRUSTED;
    }
    if (!trusted)
        return -1;
    *sig = frames_sig(t, sg, pcs, n);
    if (c) {
        c->sig = *sig;
        c->nframes = n;
    }
    if (hit || seen_insert(g_seen_sig, *sig))
        emit_sig(*sig, sg, pcs, n); /* hit: new to this log (a fork's child), seen_insert said so */
    return n;
}

__attribute__((noinline)) uint64_t signature(struct tbuf *b, uint16_t *nframes)
{
    struct segtab *t = segs();
    uintptr_t pcs[MAX_FRAMES];
    struct seg *sg[MAX_FRAMES];
    int n = -1;
    uintptr_t *fp = hook_frame(b);
    uint64_t h = 0;
    if (g_method == M_SCAN) {
        n = walk_scan(b, t, fp, pcs, sg, g_frames);
    } else if (g_method == M_UNWIND && g_unw_backtrace) {
        n = walk_unwind(t, pcs, sg, g_frames);
    } else if ((n = fp_or_auto(b, t, fp, pcs, sg, &h)) >= 0) {
        *nframes = (uint16_t)n; /* fp (also unwind without libunwind), or auto taking it */
        return h;
    } else if ((n = walk_cfi(b, t, fp, pcs, sg, g_frames)) < 0) {
        /* auto, not all frame pointers: the call-frame rules (cfi.c), which give what libunwind
         * gives where they apply, and libunwind itself where they do not */
        n = walk_unwind(t, pcs, sg, g_frames);
    }
    h = frames_sig(t, sg, pcs, n);
    *nframes = (uint16_t)n;
    if (seen_insert(g_seen_sig, h))
        emit_sig(h, sg, pcs, n);
    return h;
}
