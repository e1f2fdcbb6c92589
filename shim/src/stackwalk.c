/* stackwalk.c: the PC signature of a call: the walkers (fp: the rbp chain; scan: stack words after
 * a call instruction; unwind: libunwind's unw_backtrace; auto: fp when every frame record it used
 * belongs to a frame-pointer module, else unwind), the hash of the frames and the S/F lines of a
 * signature seen for the first time. The module table the walkers look addresses up in is
 * modules.c's; the configuration below is set, and libunwind loaded, by lifecycle.c. */
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

/* fp: follow the rbp chain from the hook's record `fp`. *ended = 1 if the chain stopped before
 * `max` frames (null or invalid next record): then the last frame's own record was read too.
 * `for_auto`: -1 at the first frame (before the last of `max`) in a module without frame
 * pointers, whose record the walk would rely on: auto does not take that walk (fp_trusted). */
static int walk_fp(struct tbuf *b, struct segtab *t, uintptr_t *fp, uintptr_t *out, struct seg **sg, int max,
                   int *ended, int for_auto)
{
    int n = 0;
    *ended = 1;
    while (fp && n < max) {
        uintptr_t next = fp[0], ret = fp[1];
        /* consecutive frames are mostly in one module: try the previous frame's segment first */
        struct seg *s = n > 0 && ret >= sg[n - 1]->lo && ret < sg[n - 1]->hi ? sg[n - 1] : find_seg(t, ret);
        if (!s)
            return n;
        if (for_auto && s->has_fp != 1 && n < max - 1)
            return -1;
        sg[n] = s;
        out[n++] = ret;
        if (n == max)
            break;
        if (next <= (uintptr_t)fp || !frame_ok(b, next))
            return n;
        fp = (uintptr_t *)next;
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
static TLS struct memo t_memo[MEMO_SLOTS];

static uint64_t frames_sig(const struct segtab *t, struct seg **sg, const uintptr_t *pcs, int n)
{
    uint64_t k = (uint64_t)n;
    for (int i = 0; i < n; i++)
        k = (k ^ pcs[i]) * 0x9e3779b97f4a7c15ULL;
    struct memo *m = &t_memo[k >> 58 & (MEMO_SLOTS - 1)];
    if (m->t == t && m->n == n) {
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
    if (n <= MEMO_FRAMES) {
        m->t = t;
        m->sig = h;
        m->n = n;
        memcpy(m->pcs, pcs, sizeof(uintptr_t) * (size_t)n);
    }
    return h;
}

__attribute__((noinline)) uint64_t signature(struct tbuf *b, uint16_t *nframes)
{
    struct segtab *t = segs();
    uintptr_t pcs[MAX_FRAMES];
    struct seg *sg[MAX_FRAMES];
    int n = 0, ended = 0;
    uintptr_t *fp = hook_frame(b);
    switch (g_method) {
    case M_FP:
        n = walk_fp(b, t, fp, pcs, sg, g_frames, &ended, 0);
        break;
    case M_SCAN:
        n = walk_scan(b, t, fp, pcs, sg, g_frames);
        break;
    case M_UNWIND:
        n = g_unw_backtrace ? walk_unwind(t, pcs, sg, g_frames) : walk_fp(b, t, fp, pcs, sg, g_frames, &ended, 0);
        break;
    default:
        n = walk_fp(b, t, fp, pcs, sg, g_frames, &ended, g_unw_backtrace != NULL);
        /* not all frame pointers: the call-frame rules (cfi.c), which give what libunwind gives
         * where they apply, and libunwind itself where they do not */
        if (g_unw_backtrace && (n < 0 || !fp_trusted(sg, n, ended)) &&
            (n = walk_cfi(b, t, fp, pcs, sg, g_frames)) < 0)
            n = walk_unwind(t, pcs, sg, g_frames);
        break;
    }
    uint64_t h = frames_sig(t, sg, pcs, n);
    *nframes = (uint16_t)n;
    if (seen_insert(g_seen_sig, h))
        emit_sig(h, sg, pcs, n);
    return h;
}
