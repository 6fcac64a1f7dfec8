/* edgec speed-optimized fully connected layer, 8 rows a block (declared in edgec_nn.h; a `--optimize speed`
 * variant, edgec/ops/dense.py): the input vector is widened to int16 once, and each block of 8 rows runs as two
 * passes of 4 rows over it: per group of 4 inputs, 1 LDRD of the input, 2 LDM of 4 weight words and 8 SMLAD
 * (16 MACs in 11 instructions; 8 rows in one pass with LDRD took 25 for 32, and 8 rows with LDM would need more
 * registers than the core has). Weights and biases are doubled at build time, so the accumulators hold 2 * acc,
 * what the requantization's SMMLAR takes; the biases come from the weight stream. The portable path
 * (Cortex-M3) runs a block in one pass, one input at a time for the 8 rows from the two halves' weight streams
 * (a load and a multiply-accumulate per MAC, the input loaded once for 8 rows). */
#include "edgec_fast_support.h"

/* Weights: for each block of 8 rows (the last block padded with copies of the last row, the requantization
 * records too), the 8 doubled biases, then rows 0..3 and then rows 4..7: for each group of 4 inputs (x0..x3; the
 * last group padded with zero weights) the doubled int16 words (w0, w2) (w1, w3) of the 4 rows. Input: the
 * groups' words (x0, x2) (x1, x3). */
#ifdef EDGEC_DSP
#define EDGEC_FC8_ROW(acc, off)                                                                    \
    do {                                                                                           \
        E_LDRD(wl, wh, w, (off));                                                                  \
        (acc) = E_SMLAD(wl, xl, (acc));                                                            \
        (acc) = E_SMLAD(wh, xh, (acc));                                                            \
    } while (0)
#define EDGEC_FC8_GROUP(xo, wo)                                                                    \
    do {                                                                                           \
        uint32_t xl, xh, wl, wh;                                                                   \
        E_LDRD(xl, xh, x, (xo));                                                                   \
        EDGEC_FC8_ROW(a0, (wo) + 0);                                                               \
        EDGEC_FC8_ROW(a1, (wo) + 2);                                                               \
        EDGEC_FC8_ROW(a2, (wo) + 4);                                                               \
        EDGEC_FC8_ROW(a3, (wo) + 6);                                                               \
    } while (0)
#else
/* input j of the group (its position in the word order) for the 8 rows: rows 0..3 from ws_ (the block's first
 * half), rows 4..7 from hs_ (its second half): one pass over the input, as many registers as a Cortex-M3 has */
#define EDGEC_FC8_INPUT(j)                                                                         \
    do {                                                                                           \
        const int32_t v_ = xs_[(j)];                                                               \
        a0 += v_ * ws_[(j)];                                                                       \
        a1 += v_ * ws_[4 + (j)];                                                                   \
        a2 += v_ * ws_[8 + (j)];                                                                   \
        a3 += v_ * ws_[12 + (j)];                                                                  \
        a4 += v_ * hs_[(j)];                                                                       \
        a5 += v_ * hs_[4 + (j)];                                                                   \
        a6 += v_ * hs_[8 + (j)];                                                                   \
        a7 += v_ * hs_[12 + (j)];                                                                  \
    } while (0)
#define EDGEC_FC8_GROUP8(xo, wo)                                                                   \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)(x + (xo));                        \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + (wo));                        \
        const edgec_h16 *hs_ = (const edgec_h16 *)(const void *)(h + (wo));                        \
        EDGEC_FC8_INPUT(0);                                                                        \
        EDGEC_FC8_INPUT(1);                                                                        \
        EDGEC_FC8_INPUT(2);                                                                        \
        EDGEC_FC8_INPUT(3);                                                                        \
    } while (0)
#endif

/* requantize row r's (doubled) accumulator and store it; `clamp` of v_ to the activation range, `fix` the
 * negative accumulators' correction: (acc >> 31) & neg, or acc >> 31 where every record's neg is -1 (one ADD
 * with a shifted operand) */
#define EDGEC_FC8_FIX_ANY(acc, n) (((acc) >> 31) & (n))
#define EDGEC_FC8_FIX_ALL(acc, n) ((acc) >> 31)
#ifdef EDGEC_DSP
/* v saturated to int8, then to the lower bound lo (the upper bound is 127) */
#define EDGEC_FC8_RELU(v) edgec_fc8_max(EDGEC_SAT8(v), lo)
EDGEC_INLINE int32_t edgec_fc8_max(int32_t a, int32_t b) { return a < b ? b : a; }
#endif
#define EDGEC_FC8_OUT(acc, r, clamp, fix)                                                          \
    do {                                                                                           \
        const int32_t v_ = (E_SMMLAR((acc), rq[(r)].mult, rq[(r)].khi) + fix((acc), rq[(r)].neg)) >> \
                           rq[(r)].shift;                                                          \
        out[(r)] = (int8_t)(clamp);                                                                \
    } while (0)

/* The chunks of 4 groups of one pass (inputs x .. end4). The Arm build runs them as one block of assembly: the
 * LDM's 4 registers are fixed (a register list loads in ascending register order), the 4 accumulators, the 2
 * input words and the 2 pointers are gcc's; the end is read from the stack. Its loop body is 8 groups, entered
 * half-way when the count of chunks is odd (`odd`: 3 instructions a pass fewer per 8 groups than a body of 4). */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* gcc: clang's allocation was not measured */
#define EDGEC_FC8_ASM_PAIR(acc0, acc1)                                                             \
    "ldm %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t"                                                  \
    "smlad %[" #acc0 "], %[w0], %[xl], %[" #acc0 "]\n\t"                                           \
    "smlad %[" #acc0 "], %[w1], %[xh], %[" #acc0 "]\n\t"                                           \
    "smlad %[" #acc1 "], %[w2], %[xl], %[" #acc1 "]\n\t"                                           \
    "smlad %[" #acc1 "], %[w3], %[xh], %[" #acc1 "]\n\t"
#define EDGEC_FC8_ASM_GROUP                                                                        \
    "ldrd %[xl], %[xh], [%[x]], #8\n\t" EDGEC_FC8_ASM_PAIR(a0, a1) EDGEC_FC8_ASM_PAIR(a2, a3)
#define EDGEC_FC8_ASM_CHUNK EDGEC_FC8_ASM_GROUP EDGEC_FC8_ASM_GROUP EDGEC_FC8_ASM_GROUP EDGEC_FC8_ASM_GROUP
#define EDGEC_FC8_CHUNKS4()                                                                        \
    do {                                                                                           \
        if (x < end4) {                                                                            \
            uint32_t xl, xh;                                                                       \
            register uint32_t w0 __asm__("r8"), w1 __asm__("r9"), w2 __asm__("r10"), w3 __asm__("r12"); \
            __asm__ volatile("ldr %[xl], %[odd]\n\t"                                               \
                             "cmp %[xl], #0\n\t"                                                   \
                             "bne 2f\n\t"                                                          \
                             "1:\n\t" EDGEC_FC8_ASM_CHUNK "2:\n\t" EDGEC_FC8_ASM_CHUNK              \
                             "ldr %[xl], %[end]\n\t"                                               \
                             "cmp %[x], %[xl]\n\t"                                                 \
                             "bne 1b\n\t"                                                          \
                             : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3),         \
                               [x] "+r"(x), [w] "+r"(w), [xl] "=&r"(xl), [xh] "=&r"(xh),           \
                               [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3)      \
                             : [end] "m"(end4), [odd] "m"(odd)                                     \
                             : "cc", "memory");                                                    \
        }                                                                                          \
    } while (0)
#define EDGEC_FC8_ODD const int32_t odd = (groups >> 2) & 1;
#endif

/* `blocks` blocks of 8 rows: with the DSP extension each as two passes of 4 over the input, else one pass of 8 */
#ifndef EDGEC_FC8_ODD
#define EDGEC_FC8_ODD
#endif
#ifdef EDGEC_DSP
#ifndef EDGEC_FC8_CHUNKS4
#define EDGEC_FC8_CHUNKS4()                                                                        \
    do {                                                                                           \
        for (; x < end4; x += 8, w += 32) {                                                        \
            EDGEC_FC8_GROUP(0, 0);                                                                 \
            EDGEC_FC8_GROUP(2, 8);                                                                 \
            EDGEC_FC8_GROUP(4, 16);                                                                \
            EDGEC_FC8_GROUP(6, 24);                                                                \
        }                                                                                          \
    } while (0)
#endif
#define EDGEC_FC8_BLOCK(clamp, fix)                                                                \
    do {                                                                                           \
        const edgec_w32 *b = w;                                                                    \
        int32_t pass;                                                                              \
        w += 8;                                                                                    \
        for (pass = 2; pass > 0; --pass, b += 4, rq += 4, out += 4) {                              \
            const edgec_w32 *x = xw;                                                               \
            int32_t a0 = (int32_t)b[0], a1 = (int32_t)b[1], a2 = (int32_t)b[2], a3 = (int32_t)b[3]; \
            EDGEC_FC8_CHUNKS4();                                                                   \
            for (; x < end; x += 2, w += 8) EDGEC_FC8_GROUP(0, 0);                                 \
            EDGEC_FC8_OUT(a0, 0, clamp, fix);                                                      \
            EDGEC_FC8_OUT(a1, 1, clamp, fix);                                                      \
            EDGEC_FC8_OUT(a2, 2, clamp, fix);                                                      \
            EDGEC_FC8_OUT(a3, 3, clamp, fix);                                                      \
        }                                                                                          \
    } while (0)
#else
#define EDGEC_FC8_BLOCK(clamp, fix)                                                                \
    do {                                                                                           \
        const edgec_w32 *x = xw, *h = w + 8 + 8 * groups;                                          \
        int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3];    \
        int32_t a4 = (int32_t)w[4], a5 = (int32_t)w[5], a6 = (int32_t)w[6], a7 = (int32_t)w[7];    \
        for (w += 8; x < end4; x += 8, w += 32, h += 32) {                                         \
            EDGEC_FC8_GROUP8(0, 0);                                                                \
            EDGEC_FC8_GROUP8(2, 8);                                                                \
            EDGEC_FC8_GROUP8(4, 16);                                                               \
            EDGEC_FC8_GROUP8(6, 24);                                                               \
        }                                                                                          \
        for (; x < end; x += 2, w += 8, h += 8) EDGEC_FC8_GROUP8(0, 0);                            \
        w = h;                                                                                     \
        EDGEC_FC8_OUT(a0, 0, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a1, 1, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a2, 2, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a3, 3, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a4, 4, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a5, 5, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a6, 6, clamp, fix);                                                          \
        EDGEC_FC8_OUT(a7, 7, clamp, fix);                                                          \
        rq += 8;                                                                                   \
        out += 8;                                                                                  \
    } while (0)
#endif
#define EDGEC_FC8_BLOCKS(name, clamp, fix)                                                         \
    static EDGEC_HOT void name(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w, \
                               const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)            \
    {                                                                                              \
        const edgec_w32 *end4 = xw + 2 * (groups & ~3), *const end = xw + 2 * groups;              \
        EDGEC_FC8_ODD                                                                              \
        for (; blocks > 0; --blocks) EDGEC_FC8_BLOCK(clamp, fix);                                  \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
/* With the DSP extension and every record's neg -1 (the usual layer): the full int8 range, or a range up to 127
 * (a ReLU: SSAT, then the lower bound); else any range and both kinds of neg. The portable path keeps the full
 * range's and the generic instance (more cost the Cortex-M3 2.3 KB of code for no measurable gain). */
#ifdef EDGEC_DSP
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_full, EDGEC_SAT8(v_), EDGEC_FC8_FIX_ALL)
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_relu, EDGEC_FC8_RELU(v_), EDGEC_FC8_FIX_ALL)
#define EDGEC_FC8_ALL_NEG 1
#else
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_full_anyneg, EDGEC_SAT8(v_), EDGEC_FC8_FIX_ANY)
#endif
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_FC8_FIX_ANY)

void edgec_fully_connected_rows8_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, n_out = p->out_features, groups = p->k4 >> 2;
    const int32_t blocks = n_out >> 3, rest = n_out & 7, lo = p->act_min, hi = p->act_max;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    int32_t g, i;
    if ((n_in & 3) == 0 && ((uintptr_t)input & 3) == 0) {
        const edgec_w32 *t = (const edgec_w32 *)(const void *)input;
        for (g = groups; g > 0; --g, xw += 2) edgec_widen(*t++, xw);
        xw = (edgec_w32 *)(void *)scratch;
    } else {
        for (g = 0; g < groups; ++g) { /* missing inputs of a partial last group are 0 (their weights are 0 too) */
            uint32_t v = 0;
            for (i = 0; i < 4 && 4 * g + i < n_in; ++i) v |= (uint32_t)(uint8_t)input[4 * g + i] << (8 * i);
            edgec_widen(v, xw + 2 * g);
        }
    }
    void (*run)(const edgec_w32 *, int32_t, int32_t, const edgec_w32 *, const edgec_rq *, int8_t *, int32_t, int32_t) =
        edgec_fc8_blocks_clamped;
#ifdef EDGEC_FC8_ALL_NEG
    int negs = hi == 127;
    for (i = 0; i < n_out && negs; ++i) negs = rq[i].neg == -1; /* stops at the first 0 */
    if (negs) run = lo == -128 ? edgec_fc8_blocks_full : edgec_fc8_blocks_relu;
#else
    if (lo == -128 && hi == 127) run = edgec_fc8_blocks_full_anyneg;
#endif
    run(xw, groups, blocks, (const edgec_w32 *)weights, rq, output, lo, hi);
    if (rest) { /* the padded last block through a buffer: the copies of the last row are not stored */
        int8_t t[8];
        run(xw, groups, 1, (const edgec_w32 *)weights + blocks * (8 + 16 * groups), rq + 8 * blocks, t,
                         lo, hi);
        for (i = 0; i < rest; ++i) output[8 * blocks + i] = t[i];
    }
}
