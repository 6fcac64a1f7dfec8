/* edgec_cycles: a QEMU TCG plugin (plugin API v1, QEMU 7.2) that estimates Cortex-M cycles beside QEMU's exact
 * instruction count, built by edgec/bench/cycles.py (scripts/setup.sh builds it once).
 *
 * It is an ESTIMATE from a static timing table, not a cycle-accurate model: each executed Thumb instruction is
 * weighed by its Cortex-M3/M4 timing from Arm's technical reference manuals (ARMv7-M "Processor instruction
 * timings": most data processing 1; load/store single 2, 1 when it directly follows another load/store single
 * (address/data phases pipelined); LDRD/STRD 3; LDM/STM/PUSH/POP 1 + registers; multiplies, DSP MACs and
 * long multiplies 1 (the M4's single-cycle MAC); SDIV/UDIV a fixed 7 of their 2-12; taken branches +2
 * (pipeline refill), +2 more when the PC is loaded from memory (POP {pc}, LDR pc); TBB/TBH 2 + refill; VFP
 * single 1, VDIV/VSQRT 14, VLDR/VSTR 2, VLDM/VSTM/VPUSH/VPOP 1 + words). Flash: `ws` wait states (arg,
 * default 0) are added to every taken branch and to literal (PC-relative) loads; sequential fetches are
 * assumed hidden by a prefetch buffer / accelerator. With core=m55, Helium (MVE) instructions count 2 cycles
 * (two beats of a dual-beat core; see the overlap below) and a low-overhead loop's LE costs 1, without refill.
 * Memory timing of real parts ([[cycle_model]] in a board profile, edgec/bench/cycles.py): each
 * `mem=LO:HI:LINE:IMISS:DMISS:PREFETCH:IBYTES:IWAYS:DBYTES:DWAYS` (hex LO/HI, up to 4, weighed in the same run) says
 * that code and constants in [LO, HI) are flash read LINE bytes at a time through a one-line buffer and optional
 * LRU caches (instruction IBYTES/IWAYS, data DBYTES/DWAYS; 0 = none; the data side sees reads of flash only:
 * SRAM is assumed zero-wait-state), IMISS/DMISS the core cycles a line read from flash costs over a zero-wait-
 * state access, and with PREFETCH the next sequential line read while the current one executes (a sequential
 * miss costs what its line's execution did not hide). Two more fields `:CLO:CHI` (hex) name a code RAM of the part
 * (the STM32L4R5's SRAM2 at 0x10000000, fetched on the I-code bus: `edgec build --code-in-ram`), or the emulated
 * board's stand-in for it: instruction fetches and data reads there are zero-wait-state and leave the flash line
 * buffer, the prefetch and the caches as they were. Each window line then ends with one cycle total per `mem=`. core=m7: loads/stores 1 cycle,
 * LDRD/STRD 1, LDM/STM 1 + registers/2, taken branches +1 (predicted), and two adjacent single-cycle
 * instructions issue together unless both access memory, both multiply, or the first is a branch (no
 * register-dependency check: optimistic). core=m55: an MVE instruction right after an MVE instruction of the
 * other class (memory vs arithmetic) overlaps its beats: 1 cycle.
 * Not modelled: bus contention, write buffers, interrupts' stacking, register dependencies (M4: none stall),
 * IT-skipped instructions (counted as executed), data-dependent divide time.
 *
 * Timed windows: with `start=ADDR,mark=ADDR` (code addresses of edgec_ticks_align and edgec_ticks, see the
 * bench harness runtime_c/harness/edgec_link.c), a window opens at the first `mark` call after `start` and closes
 * at the second: one line "window <instructions> <cycles>" per window is appended to `out=FILE` (flushed at once:
 * QEMU may be killed); with `open=ADDR,close=ADDR` (a peer's harness: TFLM's bench_mark_start/stop) a window runs
 * from a call of `open` to the next call of `close`. Without them, one line "total <instructions> <cycles>".
 *
 * Debian's QEMU ships no qemu-plugin.h: the few API v1 declarations used are below. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
#define EXPORT __attribute__((visibility("default")))

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
extern void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                                 enum qemu_plugin_cb_flags flags, void *userdata);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
extern const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
extern size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
extern void qemu_plugin_outs(const char *string);
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);
extern _Bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
extern void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                             enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                             void *userdata);

EXPORT int qemu_plugin_version = 1;

enum { BR_NONE, BR_BRANCH, BR_LOAD_PC, BR_LOOP_END };

typedef struct {
    uint64_t vaddr, fallthrough; /* the TB's first address, and the address after its last instruction */
    uint32_t insns, cycles;      /* static cost of the whole TB */
    int branch;                  /* what its last instruction is (BR_*) */
    uint32_t *offsets, *costs;   /* each instruction's offset from vaddr and static cycles (memory timing only) */
} tb_info;

typedef struct {                 /* a set-associative LRU cache of flash lines; ways = 0: no cache */
    uint32_t sets, ways;
    uint64_t *tags;              /* sets x ways, most recent first; UINT64_MAX = empty */
} cache_t;

typedef struct {                 /* one part's memory timing (mem=...), weighed in the same run as the others */
    uint64_t flash_lo, flash_hi;
    uint64_t code_lo, code_hi;   /* a zero-wait-state code RAM inside [flash_lo, flash_hi) (code_lo = code_hi: none) */
    uint32_t line, imiss, dmiss, prefetch;
    cache_t icache, dcache;
    uint64_t cur_iline, cur_dline;
    uint32_t prev_line_cycles;
    uint64_t total_extra, win_extra;
} mem_model;

#define MAX_MODELS 4
static mem_model models[MAX_MODELS];
static int n_models;
static int wait_states, is_m55, is_m7;
static uint64_t start_addr = UINT64_MAX, mark_addr = UINT64_MAX, open_addr = UINT64_MAX, close_addr = UINT64_MAX;
static uint64_t total_insns, total_cycles, win_insns, win_cycles;
static int armed, marks, last_branch, in_window;
static uint64_t last_fallthrough = UINT64_MAX;
static FILE *out;

static int cache_setup(cache_t *c, uint32_t bytes, uint32_t ways, uint32_t line)
{
    uint32_t i;
    if (bytes == 0 || ways == 0) { c->sets = c->ways = 0; return 0; }
    c->ways = ways;
    c->sets = bytes / line / ways;
    if (c->sets == 0) return -1;
    c->tags = (uint64_t *)malloc(sizeof(uint64_t) * c->sets * c->ways);
    if (!c->tags) return -1;
    for (i = 0; i < c->sets * c->ways; ++i) c->tags[i] = UINT64_MAX;
    return 0;
}

/* mem=LO:HI:LINE:IMISS:DMISS:PREFETCH:ICACHE_BYTES:ICACHE_WAYS:DCACHE_BYTES:DCACHE_WAYS[:CODE_LO:CODE_HI] */
static int model_setup(const char *spec)
{
    unsigned long long lo, hi, clo = 0, chi = 0;
    unsigned line, imiss, dmiss, pf, ib, iw, db, dw;
    mem_model *m;
    int n;
    if (n_models == MAX_MODELS) return -1;
    n = sscanf(spec, "%llx:%llx:%u:%u:%u:%u:%u:%u:%u:%u:%llx:%llx", &lo, &hi, &line, &imiss, &dmiss, &pf, &ib, &iw,
               &db, &dw, &clo, &chi);
    if ((n != 10 && n != 12) || line == 0 || (line & (line - 1)) || clo > chi) return -1;
    m = &models[n_models++];
    m->flash_lo = lo, m->flash_hi = hi, m->line = line, m->imiss = imiss, m->dmiss = dmiss, m->prefetch = pf;
    m->code_lo = clo, m->code_hi = chi;
    m->cur_iline = m->cur_dline = UINT64_MAX;
    return cache_setup(&m->icache, ib, iw, line) || cache_setup(&m->dcache, db, dw, line) ? -1 : 0;
}

/* 1 when the line is in the cache (made most recent), else 0 (and it is filled, the least recent dropped) */
static int cache_access(cache_t *c, uint64_t line)
{
    uint64_t *set;
    uint32_t w, k;
    if (c->ways == 0) return 0;
    set = c->tags + (size_t)(line % c->sets) * c->ways;
    for (w = 0; w < c->ways && set[w] != line; ++w) {}
    k = w < c->ways ? w : c->ways - 1;
    for (; k > 0; --k) set[k] = set[k - 1];
    set[0] = line;
    return w < c->ways;
}

static int counting(void) { return (armed && marks == 1) || in_window; }

/* an address in the part's zero-wait-state code RAM (SRAM2 on the I-code bus) */
static int in_code_ram(const mem_model *m, uint64_t a) { return a >= m->code_lo && a < m->code_hi; }

static void add_extra(mem_model *m, uint32_t c)
{
    m->total_extra += c;
    if (counting()) m->win_extra += c;
}

/* a data read: from flash through the line buffer and the data cache; SRAM zero-wait-state */
static void mem_read(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    int i;
    (void)vcpu; (void)udata;
    if (qemu_plugin_mem_is_store(info)) return;
    for (i = 0; i < n_models; ++i) {
        mem_model *m = &models[i];
        uint64_t line;
        if (vaddr < m->flash_lo || vaddr >= m->flash_hi || in_code_ram(m, vaddr)) continue;
        line = vaddr / m->line;
        if (line == m->cur_dline) continue;
        m->cur_dline = line;
        if (!cache_access(&m->dcache, line)) add_extra(m, m->dmiss);
    }
}

/* the instruction fetches of one executed TB, for each part's memory timing */
static void fetch(const tb_info *t)
{
    int k;
    uint32_t i;
    for (k = 0; k < n_models; ++k) {
        mem_model *m = &models[k];
        if (t->vaddr < m->flash_lo || t->vaddr >= m->flash_hi || in_code_ram(m, t->vaddr)) continue;
        for (i = 0; i < t->insns; ++i) {
            const uint64_t line = (t->vaddr + t->offsets[i]) / m->line;
            if (line != m->cur_iline) {
                if (!cache_access(&m->icache, line)) {
                    uint32_t pen = m->imiss;
                    if (m->prefetch && line == m->cur_iline + 1)
                        pen = m->prev_line_cycles >= m->imiss ? 0u : m->imiss - m->prev_line_cycles;
                    add_extra(m, pen);
                }
                m->cur_iline = line;
                m->prev_line_cycles = 0;
            }
            m->prev_line_cycles += t->costs[i];
        }
    }
}

static void write_window(void)
{
    int i;
    if (!out) return;
    fprintf(out, "window %llu %llu", (unsigned long long)win_insns, (unsigned long long)win_cycles);
    for (i = 0; i < n_models; ++i) fprintf(out, " %llu", (unsigned long long)(win_cycles + models[i].win_extra));
    fputc('\n', out);
    fflush(out);
}

static void open_window(void)
{
    int i;
    win_insns = win_cycles = 0;
    for (i = 0; i < n_models; ++i) models[i].win_extra = 0;
}

static int popcount16(uint32_t v)
{
    int n = 0;
    for (v &= 0xffffu; v; v &= v - 1) ++n;
    return n;
}

/* LDM/STM/PUSH/POP of n registers: 1 + n (M7: two registers a cycle on its 64-bit bus) */
static uint32_t multi(int n) { return is_m7 ? 1u + (uint32_t)(n + 1) / 2u : 1u + (uint32_t)n; }

/* Cycles of one instruction (hw1, hw2: its halfwords; hw2 unused for 16-bit ones); *ls: a load/store single
 * (pipelines with the next); *br: what kind of control transfer it is. */
static uint32_t cost(uint32_t hw1, uint32_t hw2, int wide, int prev_ls, int *ls, int *br)
{
    const uint32_t ls_single = (prev_ls || is_m7) ? 1 : 2;
    *ls = 0;
    *br = BR_NONE;
    if (!wide) {
        if ((hw1 & 0xf800u) == 0x4800u) { *ls = 1; return ls_single + (uint32_t)wait_states; } /* LDR literal */
        if ((hw1 & 0xf000u) == 0x5000u || (hw1 & 0xe000u) == 0x6000u || (hw1 & 0xe000u) == 0x8000u) {
            *ls = 1;                                        /* LDR/STR register, immediate, halfword, SP */
            return ls_single;
        }
        if ((hw1 & 0xfe00u) == 0xb400u) return multi(popcount16((hw1 & 0xffu) | ((hw1 >> 8) & 1u))); /* PUSH */
        if ((hw1 & 0xfe00u) == 0xbc00u) {                   /* POP */
            if (hw1 & 0x100u) *br = BR_LOAD_PC;
            return multi(popcount16((hw1 & 0xffu) | ((hw1 >> 8) & 1u)));
        }
        if ((hw1 & 0xf000u) == 0xc000u) return multi(popcount16(hw1 & 0xffu)); /* LDM/STM */
        if ((hw1 & 0xf000u) == 0xd000u && (hw1 & 0x0e00u) != 0x0e00u) { *br = BR_BRANCH; return 1; } /* B<c> */
        if ((hw1 & 0xf800u) == 0xe000u) { *br = BR_BRANCH; return 1; }                 /* B */
        if ((hw1 & 0xff00u) == 0x4700u) { *br = BR_BRANCH; return 1; }                 /* BX, BLX */
        if ((hw1 & 0xf500u) == 0xb100u) { *br = BR_BRANCH; return 1; }                 /* CBZ, CBNZ */
        if ((hw1 & 0xfd00u) == 0x4400u && (hw1 & 0x87u) == 0x87u) { *br = BR_BRANCH; return 1; } /* ADD/MOV pc */
        return 1;
    }
    if ((hw1 & 0xfe40u) == 0xe800u) {                       /* LDM/STM (incl. PUSH.W, POP.W) */
        if ((hw1 & 0x10u) && (hw2 & 0x8000u)) *br = BR_LOAD_PC;
        return multi(popcount16(hw2));
    }
    if ((hw1 & 0xfe40u) == 0xe840u) {                       /* dual, exclusive, table branch */
        if ((hw1 & 0xfff0u) == 0xe8d0u && (hw2 & 0xffe0u) == 0xf000u) { *br = BR_BRANCH; return 2; } /* TBB/TBH */
        if ((hw1 & 0x0120u) == 0 && (hw1 & 0xfff0u) != 0xe8d0u) return 2;            /* LDREX/STREX */
        return is_m7 ? 1u : 3u;                             /* LDRD/STRD (M7: a 64-bit bus) */
    }
    if ((hw1 & 0xf800u) == 0xf000u && (hw2 & 0x8000u)) {    /* branches and miscellaneous control */
        if ((hw2 & 0xd001u) == 0xc001u && is_m55) { *br = BR_LOOP_END; return 1; }  /* LE/LETP/DLS/WLS */
        if ((hw2 & 0x5000u) != 0 || (hw1 & 0x0380u) != 0x0380u) { *br = BR_BRANCH; return 1; } /* B.W, BL, B<c>.W */
        return 1;                                           /* MSR, MRS, hints, barriers */
    }
    if ((hw1 & 0xfe00u) == 0xf800u) {                       /* load/store single */
        if ((hw1 & 0x10u) && (hw2 >> 12) == 15u && (hw1 & 0x0060u) == 0x40u) *br = BR_LOAD_PC;
        *ls = 1;
        return ls_single + ((hw1 & 0x000fu) == 15u ? (uint32_t)wait_states : 0u); /* literal: a flash read */
    }
    if ((hw1 & 0xfff0u) == 0xfb90u || (hw1 & 0xfff0u) == 0xfbb0u) return 7;           /* SDIV, UDIV */
    if ((hw1 & 0xff00u) == 0xfb00u) return 1;               /* multiplies, MACs, long multiplies */
    if ((hw1 & 0xec00u) == 0xec00u) {                       /* coprocessor space: FP, Helium */
        const uint32_t cp = (hw2 >> 8) & 0xfu;
        const int fp = (cp == 10u || cp == 11u) && (hw1 & 0xef00u) != 0xef00u;
        if (!fp) return is_m55 ? 2u : 1u;                   /* an MVE instruction: two beats */
        if ((hw1 & 0xef00u) == 0xed00u) return 2;           /* VLDR, VSTR */
        if ((hw1 & 0xee00u) == 0xec00u && (hw1 & 0xefe0u) != 0xec40u) {
            return 1u + (hw2 & 0xffu);                      /* VLDM, VSTM, VPUSH, VPOP: 1 + words */
        }
        if ((hw1 & 0xefb0u) == 0xee80u && !(hw2 & 0x10u)) return 14; /* VDIV */
        if ((hw1 & 0xefbfu) == 0xeeb1u && (hw2 & 0xc0u) == 0xc0u) return 14; /* VSQRT */
        return 1;
    }
    return 1;                                               /* data processing */
}

static void tb_exec(unsigned int vcpu, void *udata)
{
    const tb_info *t = (const tb_info *)udata;
    uint64_t c = t->cycles;
    (void)vcpu;
    if (t->vaddr == mark_addr && armed) {
        if (++marks == 1) {
            open_window();
        } else {
            write_window();
            armed = 0;
        }
    }
    if (t->vaddr == start_addr) armed = 1, marks = 0;
    if (t->vaddr == close_addr && in_window) {
        write_window();
        in_window = 0;
    }
    if (t->vaddr == open_addr) in_window = 1, open_window();
    if (last_branch != BR_NONE && t->vaddr != last_fallthrough && last_branch != BR_LOOP_END) {
        /* taken: refill (+ fetch of the PC); the M7 predicts: +1 */
        c += (is_m7 ? 1u : 2u) + (uint32_t)wait_states + (last_branch == BR_LOAD_PC ? 2u : 0u);
    }
    total_insns += t->insns;
    total_cycles += c;
    if (counting()) win_insns += t->insns, win_cycles += c;
    if (t->offsets) fetch(t);
    last_branch = t->branch;
    last_fallthrough = t->fallthrough;
}

/* what pairs on the M7 (0 other, 1 memory, 2 multiply) and which MVE class an instruction is (0 none, 1 memory,
 * 2 arithmetic) */
static int m7_class(uint32_t hw1, int wide, int ls)
{
    if (ls) return 1;
    if (wide && ((hw1 & 0xfe40u) == 0xe800u || (hw1 & 0xfe40u) == 0xe840u)) return 1;
    if (wide && (hw1 & 0xff00u) == 0xfb00u) return 2;
    return 0;
}

static int mve_class(uint32_t hw1, uint32_t hw2, int wide)
{
    uint32_t cp;
    if (!wide || (hw1 & 0xec00u) != 0xec00u) return 0;
    cp = (hw2 >> 8) & 0xfu;
    if ((cp == 10u || cp == 11u) && (hw1 & 0xef00u) != 0xef00u) return 0;    /* VFP */
    return (hw1 & 0xee00u) == 0xec00u ? 1 : 2;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    const size_t n = qemu_plugin_tb_n_insns(tb);
    tb_info *t = (tb_info *)calloc(1, sizeof *t); /* lives as long as the translation (never freed: small) */
    size_t i;
    int ls = 0, prev_single = 0, prev_k = 0, prev_mve = 0;
    (void)id;
    if (!t) return;
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->fallthrough = t->vaddr;
    if (n_models) {
        t->offsets = (uint32_t *)calloc(n ? n : 1, sizeof *t->offsets);
        t->costs = (uint32_t *)calloc(n ? n : 1, sizeof *t->costs);
        if (!t->offsets || !t->costs) return;
    }
    for (i = 0; i < n; ++i) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const uint8_t *d = (const uint8_t *)qemu_plugin_insn_data(insn);
        const size_t size = qemu_plugin_insn_size(insn);
        const uint32_t hw1 = (uint32_t)d[0] | (uint32_t)d[1] << 8;
        const uint32_t hw2 = size >= 4 ? ((uint32_t)d[2] | (uint32_t)d[3] << 8) : 0u;
        const int wide = size >= 4;
        int now_ls, br;
        uint32_t c = cost(hw1, hw2, wide, ls, &now_ls, &br);
        if (is_m7) {                                  /* dual issue of two single-cycle instructions */
            const int k = m7_class(hw1, wide, now_ls);
            if (prev_single && c == 1u && (k == 0 || k != prev_k)) {
                c = 0;
                prev_single = 0;
            } else {
                prev_single = c == 1u && br == BR_NONE;
                prev_k = k;
            }
        }
        if (is_m55) {                                 /* beats of a memory and an arithmetic MVE op overlap */
            const int m = mve_class(hw1, hw2, wide);
            if (m && prev_mve && m != prev_mve) c = 1;
            prev_mve = m;
        }
        if (n_models) {
            /* all accesses, loads picked in the callback: QEMU 7.2 hands a MEM_R filter the stores */
            qemu_plugin_register_vcpu_mem_cb(insn, mem_read, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
            t->offsets[i] = (uint32_t)(t->fallthrough - t->vaddr);
            t->costs[i] = c;
        }
        t->cycles += c;
        ls = now_ls;
        t->branch = br;
        t->fallthrough += size;
    }
    t->insns = (uint32_t)n;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    char line[256];
    size_t len;
    int i;
    (void)id;
    (void)p;
    len = (size_t)snprintf(line, sizeof line, "total %llu %llu", (unsigned long long)total_insns,
                           (unsigned long long)total_cycles);
    for (i = 0; i < n_models && len < sizeof line - 24; ++i)
        len += (size_t)snprintf(line + len, sizeof line - len, " %llu",
                                (unsigned long long)(total_cycles + models[i].total_extra));
    snprintf(line + len, sizeof line - len, "\n");
    if (out) {
        fputs(line, out);
        fclose(out);
        out = NULL;
    } else {
        qemu_plugin_outs(line);
    }
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
    int i;
    (void)info;
    for (i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (!strncmp(a, "out=", 4)) {
            out = fopen(a + 4, "w");
            if (!out) return -1;
        } else if (!strncmp(a, "start=", 6)) {
            start_addr = strtoull(a + 6, NULL, 0) & ~1ull;
        } else if (!strncmp(a, "mark=", 5)) {
            mark_addr = strtoull(a + 5, NULL, 0) & ~1ull;
        } else if (!strncmp(a, "open=", 5)) {
            open_addr = strtoull(a + 5, NULL, 0) & ~1ull;
        } else if (!strncmp(a, "close=", 6)) {
            close_addr = strtoull(a + 6, NULL, 0) & ~1ull;
        } else if (!strncmp(a, "ws=", 3)) {
            wait_states = atoi(a + 3);
        } else if (!strncmp(a, "mem=", 4)) {
            if (model_setup(a + 4)) {
                fprintf(stderr, "edgec_cycles: bad memory timing %s\n", a);
                return -1;
            }
        } else if (!strcmp(a, "core=m55")) {
            is_m55 = 1;
        } else if (!strcmp(a, "core=m7")) {
            is_m7 = 1;
        } else if (strncmp(a, "core=", 5)) {
            fprintf(stderr, "edgec_cycles: unknown argument %s\n", a);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
