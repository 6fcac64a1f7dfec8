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
 * (two beats of a dual-beat core, no overlap assumed) and a low-overhead loop's LE costs 1, without refill.
 * Not modelled: the M7's dual issue and caches, bus contention, interrupts' stacking, register dependencies,
 * IT-skipped instructions (counted as executed), data-dependent divide time.
 *
 * Timed windows: with `start=ADDR,mark=ADDR` (code addresses of edgec_ticks_align and edgec_ticks, see the
 * bench harness runtime_c/harness/edgec_link.c), a window opens at the first `mark` call after `start` and closes
 * at the second: one line "window <instructions> <cycles>" per window is appended to `out=FILE` (flushed at once:
 * QEMU may be killed). Without them, one line "total <instructions> <cycles>" at exit.
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

EXPORT int qemu_plugin_version = 1;

enum { BR_NONE, BR_BRANCH, BR_LOAD_PC, BR_LOOP_END };

typedef struct {
    uint64_t vaddr, fallthrough; /* the TB's first address, and the address after its last instruction */
    uint32_t insns, cycles;      /* static cost of the whole TB */
    int branch;                  /* what its last instruction is (BR_*) */
} tb_info;

static int wait_states, is_m55;
static uint64_t start_addr = UINT64_MAX, mark_addr = UINT64_MAX;
static uint64_t total_insns, total_cycles, win_insns, win_cycles;
static int armed, marks, last_branch;
static uint64_t last_fallthrough = UINT64_MAX;
static FILE *out;

static int popcount16(uint32_t v)
{
    int n = 0;
    for (v &= 0xffffu; v; v &= v - 1) ++n;
    return n;
}

/* Cycles of one instruction (hw1, hw2: its halfwords; hw2 unused for 16-bit ones); *ls: a load/store single
 * (pipelines with the next); *br: what kind of control transfer it is. */
static uint32_t cost(uint32_t hw1, uint32_t hw2, int wide, int prev_ls, int *ls, int *br)
{
    const uint32_t ls_single = prev_ls ? 1 : 2;
    *ls = 0;
    *br = BR_NONE;
    if (!wide) {
        if ((hw1 & 0xf800u) == 0x4800u) { *ls = 1; return ls_single + (uint32_t)wait_states; } /* LDR literal */
        if ((hw1 & 0xf000u) == 0x5000u || (hw1 & 0xe000u) == 0x6000u || (hw1 & 0xe000u) == 0x8000u) {
            *ls = 1;                                        /* LDR/STR register, immediate, halfword, SP */
            return ls_single;
        }
        if ((hw1 & 0xfe00u) == 0xb400u) return 1u + (uint32_t)popcount16((hw1 & 0xffu) | ((hw1 >> 8) & 1u)); /* PUSH */
        if ((hw1 & 0xfe00u) == 0xbc00u) {                   /* POP */
            if (hw1 & 0x100u) *br = BR_LOAD_PC;
            return 1u + (uint32_t)popcount16((hw1 & 0xffu) | ((hw1 >> 8) & 1u));
        }
        if ((hw1 & 0xf000u) == 0xc000u) return 1u + (uint32_t)popcount16(hw1 & 0xffu); /* LDM/STM */
        if ((hw1 & 0xf000u) == 0xd000u && (hw1 & 0x0e00u) != 0x0e00u) { *br = BR_BRANCH; return 1; } /* B<c> */
        if ((hw1 & 0xf800u) == 0xe000u) { *br = BR_BRANCH; return 1; }                 /* B */
        if ((hw1 & 0xff00u) == 0x4700u) { *br = BR_BRANCH; return 1; }                 /* BX, BLX */
        if ((hw1 & 0xf500u) == 0xb100u) { *br = BR_BRANCH; return 1; }                 /* CBZ, CBNZ */
        if ((hw1 & 0xfd00u) == 0x4400u && (hw1 & 0x87u) == 0x87u) { *br = BR_BRANCH; return 1; } /* ADD/MOV pc */
        return 1;
    }
    if ((hw1 & 0xfe40u) == 0xe800u) {                       /* LDM/STM (incl. PUSH.W, POP.W) */
        if ((hw1 & 0x10u) && (hw2 & 0x8000u)) *br = BR_LOAD_PC;
        return 1u + (uint32_t)popcount16(hw2);
    }
    if ((hw1 & 0xfe40u) == 0xe840u) {                       /* dual, exclusive, table branch */
        if ((hw1 & 0xfff0u) == 0xe8d0u && (hw2 & 0xffe0u) == 0xf000u) { *br = BR_BRANCH; return 2; } /* TBB/TBH */
        if ((hw1 & 0x0120u) == 0 && (hw1 & 0xfff0u) != 0xe8d0u) return 2;            /* LDREX/STREX */
        return 3;                                           /* LDRD/STRD */
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
            win_insns = win_cycles = 0;
        } else {
            if (out) {
                fprintf(out, "window %llu %llu\n", (unsigned long long)win_insns, (unsigned long long)win_cycles);
                fflush(out);
            }
            armed = 0;
        }
    }
    if (t->vaddr == start_addr) armed = 1, marks = 0;
    if (last_branch != BR_NONE && t->vaddr != last_fallthrough && last_branch != BR_LOOP_END) {
        c += 2u + (uint32_t)wait_states + (last_branch == BR_LOAD_PC ? 2u : 0u); /* taken: refill (+ fetch) */
    }
    total_insns += t->insns;
    total_cycles += c;
    if (armed && marks == 1) {
        win_insns += t->insns;
        win_cycles += c;
    }
    last_branch = t->branch;
    last_fallthrough = t->fallthrough;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    const size_t n = qemu_plugin_tb_n_insns(tb);
    tb_info *t = (tb_info *)calloc(1, sizeof *t); /* lives as long as the translation (never freed: small) */
    size_t i;
    int ls = 0;
    (void)id;
    if (!t) return;
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->fallthrough = t->vaddr;
    for (i = 0; i < n; ++i) {
        const struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const uint8_t *d = (const uint8_t *)qemu_plugin_insn_data(insn);
        const size_t size = qemu_plugin_insn_size(insn);
        const uint32_t hw1 = (uint32_t)d[0] | (uint32_t)d[1] << 8;
        const uint32_t hw2 = size >= 4 ? ((uint32_t)d[2] | (uint32_t)d[3] << 8) : 0u;
        int now_ls, br;
        t->cycles += cost(hw1, hw2, size >= 4, ls, &now_ls, &br);
        ls = now_ls;
        t->branch = br;
        t->fallthrough += size;
    }
    t->insns = (uint32_t)n;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    char line[128];
    (void)id;
    (void)p;
    snprintf(line, sizeof line, "total %llu %llu\n", (unsigned long long)total_insns,
             (unsigned long long)total_cycles);
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
        } else if (!strncmp(a, "ws=", 3)) {
            wait_states = atoi(a + 3);
        } else if (!strcmp(a, "core=m55")) {
            is_m55 = 1;
        } else if (strncmp(a, "core=", 5)) {
            fprintf(stderr, "edgec_cycles: unknown argument %s\n", a);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
