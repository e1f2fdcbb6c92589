/* cfi.c: the unwind walk of auto, from each return address's call-frame rule (DWARF CFI of the
 * module's .eh_frame, found through its .eh_frame_hdr search table), cached per thread by
 * return address. libunwind walks the same rules, but its set-up (a register context, a cursor)
 * and its walk through the shim's own frames cost more than the walk itself; here a steady-state
 * frame is one cache lookup and two stack reads. The walk gives up (the caller then asks
 * libunwind, so signatures are the same as before) on anything it does not model: a CFA that is
 * not %rsp or %rbp plus an offset, an expression rule for the return address or %rbp, a signal
 * frame, an address without unwind information, a read outside the thread's stack, a shim frame
 * above the hooked call. The module table (and each segment's .eh_frame_hdr) is modules.c's. */
#include "shim.h"

/* DWARF register numbers (x86-64 psABI) */
enum { R_RBP = 6, R_RSP = 7, R_RA = 16 };
/* how a register is recovered: unchanged, saved at CFA + off, not recoverable, anything else */
enum { H_SAME = 0, H_OFF = 1, H_UNDEF = 2, H_OTHER = 3 };
/* a cached rule: step with it, the outermost frame (its return address undefined), or give up */
enum { K_STEP = 1, K_LAST = 2, K_GIVEUP = 3 };
#define RULE_SLOTS 512 /* per thread, direct-mapped by return address */
#define CFI_STATES 8   /* DW_CFA_remember_state depth */

struct rule {
    uintptr_t ra; /* the key; 0: empty */
    struct seg *seg;
    int32_t cfa_off, ra_off, rbp_off;
    uint8_t cfa_reg, rbp_how, kind;
};

/* A thread's rules (RULE_SLOTS of them), mapped at its first walk rather than held in TLS: static
 * TLS is carved out of every thread's stack, recording or not. Unmapped when it ends. */
static TLS struct rule *t_rules;
static TLS struct segtab *t_rules_tab; /* the module table the cached rules were found in */
static TLS int t_rules_off;            /* not mapped (again) for this thread: refused, or it ended */

struct cfa_state {
    int cfa_reg, cfa_expr;
    int64_t cfa_off;
    int how[2];      /* [0] %rbp, [1] the return address */
    int64_t off[2];
};

struct cursor {
    const unsigned char *p, *end;
    int bad;
};

static uint64_t uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (int shift = 0; c->p < c->end && shift < 64; shift += 7) {
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t sleb(struct cursor *c)
{
    int64_t v = 0;
    int shift = 0;
    while (c->p < c->end && shift < 64) {
        unsigned char b = *c->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

static uint64_t fixed(struct cursor *c, int n)
{
    uint64_t v = 0;
    if (c->end - c->p < n) {
        c->bad = 1;
        return 0;
    }
    memcpy(&v, c->p, (size_t)n); /* little-endian */
    c->p += n;
    return v;
}

/* A pointer in DW_EH_PE encoding `enc` (absolute, or relative to where it is stored). */
static uintptr_t encoded(struct cursor *c, int enc)
{
    const unsigned char *at = c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: c->bad = 1; return 0;
    }
    if ((enc & 0x70) == 0x10)
        v += (uintptr_t)at; /* pcrel */
    else if (enc & 0x70)
        c->bad = 1; /* textrel, datarel, funcrel: not used in .eh_frame by GNU ld */
    if (enc & 0x80)
        c->bad = 1; /* indirect */
    return (uintptr_t)v;
}

/* The FDE whose first address is the last one <= pc, from the binary-search table of
 * .eh_frame_hdr (version 1, table datarel|sdata4: checked when the module table was built). */
static const unsigned char *fde_of(const struct seg *s, uintptr_t pc)
{
    const unsigned char *h = s->eh_hdr;
    size_t ptr_len = (h[1] & 0x0f) == 0x03 || (h[1] & 0x0f) == 0x0b ? 4 : 8;
    uint32_t count;
    memcpy(&count, h + 4 + ptr_len, 4);
    const unsigned char *tab = h + 8 + ptr_len;
    if (count == 0 || 8 + ptr_len + 8 * (size_t)count > s->eh_len)
        return NULL;
    uint32_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        int32_t rel;
        memcpy(&rel, tab + 8 * (size_t)mid, 4);
        if ((uintptr_t)h + (intptr_t)rel <= pc)
            lo = mid;
        else
            hi = mid;
    }
    int32_t start, fde;
    memcpy(&start, tab + 8 * (size_t)lo, 4);
    memcpy(&fde, tab + 8 * (size_t)lo + 4, 4);
    return (uintptr_t)h + (intptr_t)start <= pc ? h + fde : NULL;
}

/* [p, p + n) inside the loaded segment of .eh_frame_hdr (and .eh_frame): an entry pointing
 * elsewhere is not read, so a damaged table cannot make the walk fault */
static int in_module(const struct seg *s, const unsigned char *p, size_t n)
{
    return p && (uintptr_t)p >= s->eh_lo && (uintptr_t)p + n >= (uintptr_t)p && (uintptr_t)p + n <= s->eh_hi;
}

struct cie {
    uint64_t code_align;
    int64_t data_align;
    int fde_enc, has_z;
    struct cursor init; /* its initial instructions */
};

static int parse_cie(const struct seg *s, const unsigned char *p, struct cie *ci)
{
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu || !in_module(s, p, 4 + (size_t)len))
        return -1;
    struct cursor c = {p + 4, p + 4 + len, 0};
    if (fixed(&c, 4) != 0)
        return -1; /* not a CIE */
    int version = (int)fixed(&c, 1);
    const char *aug = (const char *)c.p;
    size_t alen = c.end > c.p ? strnlen(aug, (size_t)(c.end - c.p)) : 0;
    if (c.bad || (version != 1 && version != 3) || c.p + alen >= c.end)
        return -1; /* no room for the string's end */
    c.p += alen + 1;
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    uint64_t ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
    ci->fde_enc = 0;
    ci->has_z = aug[0] == 'z';
    if (ra_reg != R_RA || (!ci->has_z && aug[0]))
        return -1;
    if (ci->has_z) {
        uint64_t n = uleb(&c);
        const unsigned char *after = c.p + n;
        for (size_t i = 1; i < alen && !c.bad; i++) {
            if (aug[i] == 'R')
                ci->fde_enc = (int)fixed(&c, 1);
            else if (aug[i] == 'L')
                fixed(&c, 1);
            else if (aug[i] == 'P')
                encoded(&c, (int)fixed(&c, 1) & 0x7f); /* read for its size; indirect is fine */
            else
                return -1; /* 'S' (a signal frame) or unknown: libunwind's */
        }
        if (after > c.end)
            return -1;
        c.p = after;
    }
    ci->init = c;
    return c.bad ? -1 : 0;
}

/* Run CFA instructions up to the row of `target` (loc starts at `loc`); 0, or -1 if one is
 * not understood. `init` is the state after the CIE's instructions (DW_CFA_restore). */
static int run_cfa(struct cursor c, const struct cie *ci, uintptr_t loc, uintptr_t target, struct cfa_state *st,
                   const struct cfa_state *init)
{
    struct cfa_state saved[CFI_STATES];
    int depth = 0;
    while (c.p < c.end && !c.bad) {
        unsigned op = *c.p++, arg = op & 0x3f;
        uint64_t reg = 0;
        int64_t off = 0;
        uintptr_t next = loc;
        switch (op & 0xc0 ? op & 0xc0 : op) {
        case 0x40: next = loc + arg * ci->code_align; break;
        case 0x80: reg = arg; off = (int64_t)uleb(&c) * ci->data_align; goto set_off;
        case 0xc0: reg = arg; goto restore;
        case 0x00: break;
        case 0x01: next = encoded(&c, ci->fde_enc); break;
        case 0x02: next = loc + fixed(&c, 1) * ci->code_align; break;
        case 0x03: next = loc + fixed(&c, 2) * ci->code_align; break;
        case 0x04: next = loc + fixed(&c, 4) * ci->code_align; break;
        case 0x05: reg = uleb(&c); off = (int64_t)uleb(&c) * ci->data_align; goto set_off;
        case 0x06: reg = uleb(&c); goto restore;
        case 0x07: reg = uleb(&c); off = H_UNDEF; goto set_how;
        case 0x08: reg = uleb(&c); off = H_SAME; goto set_how;
        case 0x09: reg = uleb(&c); uleb(&c); off = H_OTHER; goto set_how;
        case 0x0a:
            if (depth == CFI_STATES)
                return -1;
            saved[depth++] = *st;
            break;
        case 0x0b:
            if (depth == 0)
                return -1;
            *st = saved[--depth];
            break;
        case 0x0c: st->cfa_reg = (int)uleb(&c); st->cfa_off = (int64_t)uleb(&c); st->cfa_expr = 0; break;
        case 0x0d: st->cfa_reg = (int)uleb(&c); st->cfa_expr = 0; break;
        case 0x0e: st->cfa_off = (int64_t)uleb(&c); break;
        case 0x0f: st->cfa_expr = 1; c.p += uleb(&c); break;
        case 0x10: case 0x16: reg = uleb(&c); c.p += uleb(&c); off = H_OTHER; goto set_how;
        case 0x11: reg = uleb(&c); off = sleb(&c) * ci->data_align; goto set_off;
        case 0x12: st->cfa_reg = (int)uleb(&c); st->cfa_off = sleb(&c) * ci->data_align; st->cfa_expr = 0; break;
        case 0x13: st->cfa_off = sleb(&c) * ci->data_align; break;
        case 0x14: reg = uleb(&c); uleb(&c); off = H_OTHER; goto set_how;
        case 0x15: reg = uleb(&c); sleb(&c); off = H_OTHER; goto set_how;
        case 0x2e: uleb(&c); break; /* DW_CFA_GNU_args_size */
        case 0x2f: reg = uleb(&c); off = -(int64_t)uleb(&c) * ci->data_align; goto set_off;
        default: return -1;
        }
        if (next != loc) {
            if (next > target)
                return 0; /* the row of target is the current one */
            loc = next;
        }
        continue;
    set_off:
        if (reg == R_RBP || reg == R_RA) {
            st->how[reg == R_RA] = H_OFF;
            st->off[reg == R_RA] = off;
        }
        continue;
    set_how:
        if (reg == R_RBP || reg == R_RA)
            st->how[reg == R_RA] = (int)off;
        continue;
    restore:
        if (!init)
            return -1; /* DW_CFA_restore in a CIE */
        if (reg == R_RBP || reg == R_RA) {
            st->how[reg == R_RA] = init->how[reg == R_RA];
            st->off[reg == R_RA] = init->off[reg == R_RA];
        }
    }
    return c.bad ? -1 : 0;
}

/* The rule of the frame whose return address (or, for the hooked call's frame, whose address
 * after the call) is `ra`: its FDE is the one holding ra - 1, inside the call instruction. */
static void find_rule(struct seg *s, uintptr_t ra, struct rule *r)
{
    r->kind = K_GIVEUP;
    if (!s || !s->eh_hdr)
        return;
    const unsigned char *fde = fde_of(s, ra - 1);
    if (!in_module(s, fde, 8))
        return;
    uint32_t len, cie_rel;
    memcpy(&len, fde, 4);
    memcpy(&cie_rel, fde + 4, 4);
    const unsigned char *cie = fde + 4 - cie_rel;
    struct cie ci;
    if (len == 0 || len == 0xffffffffu || cie_rel == 0 || !in_module(s, fde, 4 + (size_t)len) ||
        !in_module(s, cie, 8) || parse_cie(s, cie, &ci) != 0)
        return;
    struct cursor c = {fde + 8, fde + 4 + len, 0};
    uintptr_t begin = encoded(&c, ci.fde_enc);
    uintptr_t range = encoded(&c, ci.fde_enc & 0x0f);
    if (ci.has_z)
        c.p += uleb(&c);
    if (c.bad || ra - 1 < begin || ra - 1 >= begin + range || c.p > c.end)
        return;
    /* %rbp unchanged unless a rule says otherwise; the return address only where one says */
    struct cfa_state init = {R_RSP, 0, 8, {H_SAME, H_OTHER}, {0, 0}}, st;
    if (run_cfa(ci.init, &ci, begin, ra - 1, &init, NULL) != 0)
        return;
    st = init;
    if (run_cfa(c, &ci, begin, ra - 1, &st, &init) != 0)
        return;
    if (st.how[1] == H_UNDEF) {
        r->kind = K_LAST;
        return;
    }
    if (st.cfa_expr || (st.cfa_reg != R_RSP && st.cfa_reg != R_RBP) || st.how[1] != H_OFF ||
        (st.how[0] != H_SAME && st.how[0] != H_OFF))
        return;
    r->cfa_reg = (uint8_t)st.cfa_reg;
    r->cfa_off = (int32_t)st.cfa_off;
    r->ra_off = (int32_t)st.off[1];
    r->rbp_how = (uint8_t)st.how[0];
    r->rbp_off = (int32_t)st.off[0];
    r->kind = K_STEP;
}

static const struct rule *rule_of(struct segtab *t, uintptr_t ra)
{
    if (!t_rules) {
        if (t_rules_off || !(t_rules = thread_block(sizeof(struct rule) * RULE_SLOTS))) {
            t_rules_off = 1;
            return NULL;
        }
        t_rules_tab = t; /* a new mapping is zero: no rule yet */
    }
    if (t_rules_tab != t) {
        /* a module came or went: rules found before may be stale */
        memset(t_rules, 0, sizeof(struct rule) * RULE_SLOTS);
        t_rules_tab = t;
    }
    struct rule *r = &t_rules[(ra ^ (ra >> 9)) & (RULE_SLOTS - 1)];
    if (r->ra != ra) {
        r->ra = ra;
        r->seg = find_seg(t, ra);
        find_rule(r->seg, ra, r);
    }
    return r;
}

static int on_stack(const struct tbuf *b, uintptr_t a) { return a >= b->stack_lo && a + 8 <= b->stack_hi && !(a & 7); }

/* The walk from the hook's frame record `fp` (the shim keeps frame pointers: fp[1] is the return
 * address of the hooked call, fp + 2 the caller's stack pointer, fp[0] its %rbp). Fills up to
 * `max` frames; -1 when it gives up. */
int walk_cfi(const struct tbuf *b, struct segtab *t, const uintptr_t *fp, uintptr_t *out, struct seg **sg, int max)
{
    if (!fp)
        return -1;
    uintptr_t ip = fp[1], rsp = (uintptr_t)(fp + 2), rbp = fp[0];
    int n = 0;
    while (n < max) {
        const struct rule *r = rule_of(t, ip);
        if (!r || r->kind == K_GIVEUP || (ip >= g_self_lo && ip < g_self_hi))
            return -1; /* a shim frame above the hook (an exit handler's write): libunwind's cap */
        sg[n] = r->seg;
        out[n++] = ip;
        if (r->kind == K_LAST)
            break;
        uintptr_t cfa = (r->cfa_reg == R_RSP ? rsp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
        uintptr_t ra_at = cfa + (uintptr_t)(intptr_t)r->ra_off, rbp_at = cfa + (uintptr_t)(intptr_t)r->rbp_off;
        if (cfa <= rsp || !on_stack(b, ra_at) || (r->rbp_how == H_OFF && !on_stack(b, rbp_at)))
            return -1; /* a frame not above the last one: libunwind decides what it is */
        if (r->rbp_how == H_OFF)
            rbp = *(const uintptr_t *)rbp_at;
        ip = *(const uintptr_t *)ra_at;
        rsp = cfa;
        if (!ip)
            return -1;
    }
    return n;
}

void cfi_thread_gone(void)
{
    thread_block_free(t_rules, sizeof(struct rule) * RULE_SLOTS);
    t_rules = NULL;
    t_rules_off = 1;
}
