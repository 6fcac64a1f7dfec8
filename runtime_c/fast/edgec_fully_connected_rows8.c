/* edgec speed-optimized fully connected layer, 8 rows a block (declared in edgec_nn.h; a `--optimize speed`
 * variant, edgec/ops/dense.py): the input vector is widened to int16 once, and each block of 8 rows runs as two
 * passes of 4 rows over it: per pair of groups (8 inputs), 1 LDM of the 4 input words, 4 LDM of a row's 4 weight
 * words and 16 SMLAD (32 MACs in 21 instructions). Weights and biases are doubled at build time, so the
 * accumulators hold 2 * acc, what the requantization's SMMLAR takes; the biases come from the weight stream. The
 * Arm build runs all passes of a call as one assembly function (the loop entered part-way for a count of pairs not
 * a multiple of its 8, the output stage chosen once a call). The portable path (Cortex-M3) runs a block in one
 * pass, one input at a time for the 8 rows from the two halves' weight streams (a load and a multiply-accumulate
 * per MAC, the input loaded once for 8 rows). */
#include "edgec_fast_support.h"

/* Weights: a header word, the output stage the build chose (EDGEC_FC8_*), then for each block of 8 rows (the last
 * block padded with copies of the last row, the requantization records too) its two halves, rows 0..3 and rows
 * 4..7: the half's 4 doubled biases, then for each pair of groups of 4 inputs (x0..x7; k4 is a multiple of 8, the
 * padding weights 0) each row's doubled int16 words (w0, w2) (w1, w3) (w4, w6) (w5, w7). Input: the widened
 * words (x0, x2) (x1, x3) (x4, x6) (x5, x7). */
#define EDGEC_FC8_FULL 0  /* the full int8 range, every record's neg -1 */
#define EDGEC_FC8_RELU 1  /* a range up to 127, every record's neg -1 */
#define EDGEC_FC8_CLAMP 2 /* any range and neg */
#define EDGEC_FC8_UNIFORM 3 /* the full range, every record's (mult, khi, neg -1, shift) the same: read once a pass */

/* one call's passes: the input (x0 .. end, pairs words of 4), the clamp, the count of passes, the output stage */
typedef struct {
    const edgec_w32 *xw, *end;
    int32_t pairs, lo, hi, passes, stage;
} edgec_fc8_call;

#if defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)
/* Registers: r0-r3 the 4 accumulators, r4-r7 the 4 input words, r8-r11 a row's 4 weight words, r12 x, lr w; the
 * requantization reads each record with one LDM (r4-r8: bias, mult, khi, neg, shift; r12 rq, r11 out, r9 the value,
 * r10 the lower bound, lr the upper one for the clamp stage; the uniform stage reads the pass's first record once).
 * Frame: [sp] x0, end, loop entry, lo, hi, out's end, out, rq, output stage, w while lr holds hi. */
#define EDGEC_FC8_ASM 1
extern void edgec_fc8_passes(const edgec_fc8_call *c, const edgec_w32 *w, int8_t *out, const edgec_rq *rq);
#define EDGEC_FC8_ASM_ROW(acc)                                                                     \
    "ldmia.w lr!, {r8, r9, r10, r11}\n\t"                                                          \
    "smlad " acc ", r8, r4, " acc "\n\t"                                                           \
    "smlad " acc ", r9, r5, " acc "\n\t"                                                           \
    "smlad " acc ", r10, r6, " acc "\n\t"                                                          \
    "smlad " acc ", r11, r7, " acc "\n\t"
/* 84 bytes (the loop's entry for a count of pairs relies on it) */
#define EDGEC_FC8_ASM_PAIR                                                                         \
    "ldmia.w r12!, {r4, r5, r6, r7}\n\t" EDGEC_FC8_ASM_ROW("r0") EDGEC_FC8_ASM_ROW("r1")            \
        EDGEC_FC8_ASM_ROW("r2") EDGEC_FC8_ASM_ROW("r3")
#define EDGEC_FC8_ASM_PAIRS4 EDGEC_FC8_ASM_PAIR EDGEC_FC8_ASM_PAIR EDGEC_FC8_ASM_PAIR EDGEC_FC8_ASM_PAIR
/* the requantized value of accumulator `acc` in r9 (every record's neg -1: + acc >> 31) */
#define EDGEC_FC8_ASM_VALUE(acc)                                                                   \
    "ldmia.w r12!, {r4, r5, r6, r7, r8}\n\t"                                                       \
    "smmlar r9, " acc ", r5, r6\n\t"                                                               \
    "add.w r9, r9, " acc ", asr #31\n\t"                                                           \
    "asr.w r9, r9, r8\n\t"
#define EDGEC_FC8_ASM_STORE "ssat r9, #8, r9\n\tstrb r9, [r11], #1\n\t"
#define EDGEC_FC8_ASM_FULL(acc) EDGEC_FC8_ASM_VALUE(acc) EDGEC_FC8_ASM_STORE
#define EDGEC_FC8_ASM_UNIFORM(acc)                                                                 \
    "smmlar r9, " acc ", r5, r6\n\t"                                                               \
    "add.w r9, r9, " acc ", asr #31\n\t"                                                           \
    "asr.w r9, r9, r8\n\t" EDGEC_FC8_ASM_STORE
#define EDGEC_FC8_ASM_RELU(acc)                                                                    \
    EDGEC_FC8_ASM_VALUE(acc) "ssat r9, #8, r9\n\tcmp r9, r10\n\tit lt\n\tmovlt r9, r10\n\t"          \
                             "strb r9, [r11], #1\n\t"
#define EDGEC_FC8_ASM_CLAMP(acc)                                                                   \
    "ldmia.w r12!, {r4, r5, r6, r7, r8}\n\t"                                                       \
    "smmlar r9, " acc ", r5, r6\n\t"                                                               \
    "and.w r7, r7, " acc ", asr #31\n\t"                                                           \
    "add r9, r9, r7\n\t"                                                                           \
    "asr.w r9, r9, r8\n\t"                                                                         \
    "cmp r9, r10\n\tit lt\n\tmovlt r9, r10\n\t"                                                    \
    "cmp r9, lr\n\tit gt\n\tmovgt r9, lr\n\t"                                                      \
    "strb r9, [r11], #1\n\t"
__asm__(".syntax unified\n\t.text\n\t.align 2\n\t.global edgec_fc8_passes\n\t"
        ".type edgec_fc8_passes, %function\n\t.thumb_func\n"
        "edgec_fc8_passes:\n\t"
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "sub sp, sp, #40\n\t"
        "ldmia r0, {r4, r5, r6, r7, r8, r9, r10}\n\t" /* x0 end pairs lo hi passes stage */
        "strd r4, r5, [sp]\n\t"
        "strd r7, r8, [sp, #12]\n\t"
        "add r9, r2, r9, lsl #2\n\t" /* the end of the output */
        "str r9, [sp, #20]\n\t"
        "strd r2, r3, [sp, #24]\n\t"
        "mov lr, r1\n\t"
        "rsbs r6, r6, #0\n\t" /* the entry: (-pairs mod 8) pairs into the loop of 8 */
        "and r6, r6, #7\n\t"
        "movs r4, #84\n\t"
        "adr.w r5, 2f\n\t"
        "mla r5, r6, r4, r5\n\t"
        "orr r5, r5, #1\n\t"
        "str r5, [sp, #8]\n\t"
        "adr.w r4, 5f\n\t" /* the output stage */
        "adr.w r5, 6f\n\t"
        "adr.w r6, 7f\n\t"
        "adr.w r7, 9f\n\t"
        "cmp r10, #1\n\t"
        "it eq\n\t"
        "moveq r4, r5\n\t"
        "cmp r10, #2\n\t"
        "it eq\n\t"
        "moveq r4, r6\n\t"
        "cmp r10, #3\n\t"
        "it eq\n\t"
        "moveq r4, r7\n\t"
        "orr r4, r4, #1\n\t"
        "str r4, [sp, #32]\n"
        "1:\n\t"
        "ldmia.w lr!, {r0, r1, r2, r3}\n\t" /* the pass's 4 doubled biases */
        "ldr r12, [sp]\n\t"
        "ldr pc, [sp, #8]\n\t"
        ".align 2\n"
        "2:\n\t" EDGEC_FC8_ASM_PAIRS4 EDGEC_FC8_ASM_PAIRS4
        "ldr r8, [sp, #4]\n\t"
        "cmp r12, r8\n\t"
        "bne 2b\n\t"
        "ldrd r11, r12, [sp, #24]\n\t"
        "ldr pc, [sp, #32]\n"
        "6:\n\t"
        "ldr r10, [sp, #12]\n\t" EDGEC_FC8_ASM_RELU("r0") EDGEC_FC8_ASM_RELU("r1") EDGEC_FC8_ASM_RELU("r2")
            EDGEC_FC8_ASM_RELU("r3")
        "b 8f\n"
        "7:\n\t"
        "ldr r10, [sp, #12]\n\t"
        "str lr, [sp, #36]\n\t"
        "ldr lr, [sp, #16]\n\t" EDGEC_FC8_ASM_CLAMP("r0") EDGEC_FC8_ASM_CLAMP("r1") EDGEC_FC8_ASM_CLAMP("r2")
            EDGEC_FC8_ASM_CLAMP("r3")
        "ldr lr, [sp, #36]\n\t"
        "b 8f\n"
        "5:\n\t" EDGEC_FC8_ASM_FULL("r0") EDGEC_FC8_ASM_FULL("r1") EDGEC_FC8_ASM_FULL("r2") EDGEC_FC8_ASM_FULL("r3")
        "b 8f\n"
        "9:\n\t" /* (a .tflite's fully connected layers: one weight scale) */
        "ldmia.w r12, {r4, r5, r6, r7, r8}\n\t" EDGEC_FC8_ASM_UNIFORM("r0") EDGEC_FC8_ASM_UNIFORM("r1")
            EDGEC_FC8_ASM_UNIFORM("r2") EDGEC_FC8_ASM_UNIFORM("r3")
        "8:\n\t"
        "strd r11, r12, [sp, #24]\n\t"
        "ldr r8, [sp, #20]\n\t"
        "cmp r11, r8\n\t"
        "bne 1b\n\t"
        "add sp, sp, #40\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size edgec_fc8_passes, .-edgec_fc8_passes\n");
#elif defined(EDGEC_DSP)
/* The same passes in C (the host's emulated DSP build, clang's Arm build), each output stage as the assembly's */
#define EDGEC_FC8_ROW(acc, r)                                                                      \
    do {                                                                                           \
        (acc) = E_SMLAD(w[4 * (r)], x0, (acc));                                                    \
        (acc) = E_SMLAD(w[4 * (r) + 1], x1, (acc));                                                \
        (acc) = E_SMLAD(w[4 * (r) + 2], x2, (acc));                                                \
        (acc) = E_SMLAD(w[4 * (r) + 3], x3, (acc));                                                \
    } while (0)
EDGEC_INLINE int8_t edgec_fc8_out(int32_t acc, const edgec_rq *q, const edgec_fc8_call *c)
{
    const int32_t fix = c->stage == EDGEC_FC8_CLAMP ? ((acc >> 31) & q->neg) : (acc >> 31); /* UNIFORM: as FULL */
    int32_t v = (E_SMMLAR(acc, q->mult, q->khi) + fix) >> q->shift;
    if (c->stage != EDGEC_FC8_CLAMP) v = EDGEC_SAT8(v);
    if (c->stage != EDGEC_FC8_FULL) v = v < c->lo ? c->lo : (v > c->hi ? c->hi : v);
    return (int8_t)v;
}
static EDGEC_HOT void edgec_fc8_passes(const edgec_fc8_call *c, const edgec_w32 *w, int8_t *out, const edgec_rq *rq)
{
    int32_t pass;
    for (pass = c->passes; pass > 0; --pass, rq += 4, out += 4) {
        const edgec_w32 *x = c->xw;
        int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3];
        for (w += 4; x < c->end; x += 4, w += 16) {
            const uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
            EDGEC_FC8_ROW(a0, 0);
            EDGEC_FC8_ROW(a1, 1);
            EDGEC_FC8_ROW(a2, 2);
            EDGEC_FC8_ROW(a3, 3);
        }
        out[0] = edgec_fc8_out(a0, rq, c);
        out[1] = edgec_fc8_out(a1, rq + 1, c);
        out[2] = edgec_fc8_out(a2, rq + 2, c);
        out[3] = edgec_fc8_out(a3, rq + 3, c);
    }
}
#else
/* input j of x for the 8 rows: rows 0..3 from ws_ (the block's first half), rows 4..7 from hs_ (its second half),
 * a row's weights 8 apart (a pair of groups): one pass over the input, as many registers as a Cortex-M3 has */
#define EDGEC_FC8_INPUT(j)                                                                         \
    do {                                                                                           \
        const int32_t v_ = xs_[(j)];                                                               \
        a0 += v_ * ws_[(j)];                                                                       \
        a1 += v_ * ws_[8 + (j)];                                                                   \
        a2 += v_ * ws_[16 + (j)];                                                                  \
        a3 += v_ * ws_[24 + (j)];                                                                  \
        a4 += v_ * hs_[(j)];                                                                       \
        a5 += v_ * hs_[8 + (j)];                                                                   \
        a6 += v_ * hs_[16 + (j)];                                                                  \
        a7 += v_ * hs_[24 + (j)];                                                                  \
    } while (0)
#define EDGEC_FC8_GROUP(xo, wo)                                                                    \
    do {                                                                                           \
        const edgec_h16 *xs_ = x + (xo), *ws_ = ww + (wo), *hs_ = h + (wo);                        \
        EDGEC_FC8_INPUT(0);                                                                        \
        EDGEC_FC8_INPUT(1);                                                                        \
        EDGEC_FC8_INPUT(2);                                                                        \
        EDGEC_FC8_INPUT(3);                                                                        \
    } while (0)
/* requantize row r's (doubled) accumulator and store it; `clamp` of v_ to the activation range */
#define EDGEC_FC8_OUT(acc, r, clamp)                                                               \
    do {                                                                                           \
        const int32_t v_ = (E_SMMLAR((acc), rq[(r)].mult, rq[(r)].khi) + (((acc) >> 31) & rq[(r)].neg)) >> \
                           rq[(r)].shift;                                                          \
        out[(r)] = (int8_t)(clamp);                                                                \
    } while (0)
/* `blocks` blocks of 8 rows, one pass of 8 over the input each (w: a half's biases, then its pairs): 4 groups (two
 * pairs) a step, then a pair and a group left (a padding group of zero weights skipped) */
#define EDGEC_FC8_BLOCKS(name, clamp)                                                              \
    static EDGEC_HOT void name(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w,  \
                               const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)            \
    {                                                                                              \
        const int32_t half = 4 + 16 * ((groups + 1) >> 1);                                         \
        const edgec_h16 *const x0 = (const edgec_h16 *)(const void *)xw, *const end4 = x0 + 16 * (groups >> 2); \
        for (; blocks > 0; --blocks, w += 2 * half, rq += 8, out += 8) {                           \
            const edgec_w32 *const hb = w + half;                                                  \
            const edgec_h16 *x = x0, *ww = (const edgec_h16 *)(const void *)(w + 4);               \
            const edgec_h16 *h = (const edgec_h16 *)(const void *)(hb + 4);                        \
            int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3]; \
            int32_t a4 = (int32_t)hb[0], a5 = (int32_t)hb[1], a6 = (int32_t)hb[2], a7 = (int32_t)hb[3]; \
            for (; x < end4; x += 16, ww += 64, h += 64) {                                         \
                EDGEC_FC8_GROUP(0, 0);                                                             \
                EDGEC_FC8_GROUP(4, 4);                                                             \
                EDGEC_FC8_GROUP(8, 32);                                                            \
                EDGEC_FC8_GROUP(12, 36);                                                           \
            }                                                                                      \
            if (groups & 2) {                                                                      \
                EDGEC_FC8_GROUP(0, 0);                                                             \
                EDGEC_FC8_GROUP(4, 4);                                                             \
                x += 8;                                                                            \
                ww += 32;                                                                          \
                h += 32;                                                                           \
            }                                                                                      \
            if (groups & 1) EDGEC_FC8_GROUP(0, 0);                                                 \
            EDGEC_FC8_OUT(a0, 0, clamp);                                                           \
            EDGEC_FC8_OUT(a1, 1, clamp);                                                           \
            EDGEC_FC8_OUT(a2, 2, clamp);                                                           \
            EDGEC_FC8_OUT(a3, 3, clamp);                                                           \
            EDGEC_FC8_OUT(a4, 4, clamp);                                                           \
            EDGEC_FC8_OUT(a5, 5, clamp);                                                           \
            EDGEC_FC8_OUT(a6, 6, clamp);                                                           \
            EDGEC_FC8_OUT(a7, 7, clamp);                                                           \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
/* the full range's instance and the generic one (more cost the Cortex-M3 2.3 KB of code for no measurable gain) */
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_full, EDGEC_SAT8(v_))
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_))
#endif

/* `blocks` blocks of 8 rows from w (a block's words) into out */
static void edgec_fc8_run(edgec_fc8_call *c, int32_t groups, int32_t blocks, const edgec_w32 *w, const edgec_rq *rq,
                          int8_t *out)
{
#ifdef EDGEC_DSP
    c->passes = 2 * blocks;
    edgec_fc8_passes(c, w, out, rq);
    (void)groups;
#else
    if (c->lo == -128 && c->hi == 127)
        edgec_fc8_blocks_full(c->xw, groups, blocks, w, rq, out, c->lo, c->hi);
    else
        edgec_fc8_blocks_clamped(c->xw, groups, blocks, w, rq, out, c->lo, c->hi);
#endif
}

/* the input widened into xw (k8 / 2 words, the padding group's zero) */
EDGEC_INLINE void edgec_fc8_widen_input(const int8_t *input, int32_t n_in, edgec_w32 *d, const edgec_w32 *end)
{
    int32_t g, i;
    if ((n_in & 3) == 0 && ((uintptr_t)input & 3) == 0) {
        const edgec_w32 *t = (const edgec_w32 *)(const void *)input;
        for (g = n_in >> 3; g > 0; --g, t += 2, d += 4) { /* two groups a step */
            const uint32_t u = t[0], v = t[1];
            edgec_widen(u, d);
            edgec_widen(v, d + 2);
        }
        if (n_in & 4) {
            edgec_widen(*t, d);
            d += 2;
        }
    } else {
        for (g = 0; 4 * g < n_in; ++g, d += 2) { /* missing inputs of a partial last group are 0 (their weights too) */
            uint32_t v = 0;
            for (i = 0; i < 4 && 4 * g + i < n_in; ++i) v |= (uint32_t)(uint8_t)input[4 * g + i] << (8 * i);
            edgec_widen(v, d);
        }
    }
    for (; d < end; ++d) *d = 0; /* the padding group of an odd count of groups */
}

/* The layer's sizes are read from p after the widening (its stores may alias p as far as the compiler knows, so
 * none of them is kept live across its loops): 44 B less stack than with them computed first. */
void edgec_fully_connected_rows8_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_w32 *const xw = (edgec_w32 *)(void *)scratch;
    edgec_fc8_call c;
    int32_t blocks, rest, i;
    edgec_fc8_widen_input(input, p->in_features, xw, xw + p->k4 / 2);
    blocks = p->out_features >> 3;
    rest = p->out_features & 7;
    c.xw = xw;
    c.end = xw + p->k4 / 2;
    c.pairs = p->k4 >> 3;
    c.lo = p->act_min;
    c.hi = p->act_max;
    c.stage = (int32_t)weights[0];
    if (blocks > 0) edgec_fc8_run(&c, (p->in_features + 3) >> 2, blocks, (const edgec_w32 *)weights + 1, rq, output);
    if (rest) { /* the padded last block through a buffer: the copies of the last row are not stored */
        int8_t t[8];
        edgec_fc8_run(&c, (p->in_features + 3) >> 2, 1, (const edgec_w32 *)weights + 1 + blocks * (8 + 4 * p->k4),
                      rq + 8 * blocks, t);
        for (i = 0; i < rest; ++i) output[8 * blocks + i] = t[i];
    }
}
