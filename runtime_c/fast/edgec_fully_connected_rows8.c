/* edgec speed-optimized fully connected layer, 8 rows a pass (declared in edgec_nn.h; a `--optimize speed`
 * variant, edgec/ops/dense.py): the input vector is widened to int16 once, and each load of it
 * serves 8 rows: per group of 4 inputs, 1 LDRD of the input and 8 LDRD + 16 SMLAD for the rows (32 MACs; the
 * wide kernel's 4 rows need 13 instructions for 16). Weights and biases are doubled at build time, so the
 * accumulators hold 2 * acc, what the requantization's SMMLAR takes; the biases come from the weight stream.
 * The portable path (Cortex-M3) reads the same layout one input at a time for the 8 rows (a load and a
 * multiply-accumulate per MAC, the input loaded once for 8 rows). */
#include "edgec_fast_support.h"

/* Weights: for each block of 8 rows (the last block padded with copies of the last row, the requantization
 * records too), the 8 doubled biases, then for each group of 4 inputs (x0..x3; the last group padded with zero
 * weights) the doubled int16 words (w0, w2) (w1, w3) of rows 0..7. Input: the groups' words (x0, x2) (x1, x3). */
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
        E_LDRD(xl, xh, x, (xo));                                                                      \
        EDGEC_FC8_ROW(a0, (wo) + 0);                                                                    \
        EDGEC_FC8_ROW(a1, (wo) + 2);                                                                    \
        EDGEC_FC8_ROW(a2, (wo) + 4);                                                                    \
        EDGEC_FC8_ROW(a3, (wo) + 6);                                                                    \
        EDGEC_FC8_ROW(a4, (wo) + 8);                                                                    \
        EDGEC_FC8_ROW(a5, (wo) + 10);                                                                    \
        EDGEC_FC8_ROW(a6, (wo) + 12);                                                                    \
        EDGEC_FC8_ROW(a7, (wo) + 14);                                                                    \
    } while (0)
#else
/* input j of the group (its position in the word order) for the 8 rows */
#define EDGEC_FC8_INPUT(j)                                                                         \
    do {                                                                                           \
        const int32_t v_ = xs_[(j)];                                                               \
        a0 += v_ * ws_[(j)];                                                                       \
        a1 += v_ * ws_[4 + (j)];                                                                   \
        a2 += v_ * ws_[8 + (j)];                                                                   \
        a3 += v_ * ws_[12 + (j)];                                                                  \
        a4 += v_ * ws_[16 + (j)];                                                                  \
        a5 += v_ * ws_[20 + (j)];                                                                  \
        a6 += v_ * ws_[24 + (j)];                                                                  \
        a7 += v_ * ws_[28 + (j)];                                                                  \
    } while (0)
#define EDGEC_FC8_GROUP(xo, wo)                                                                    \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)(x + (xo));                        \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + (wo));                                 \
        EDGEC_FC8_INPUT(0);                                                                        \
        EDGEC_FC8_INPUT(1);                                                                        \
        EDGEC_FC8_INPUT(2);                                                                        \
        EDGEC_FC8_INPUT(3);                                                                        \
    } while (0)
#endif

/* requantize row r's (doubled) accumulator and store it; `clamp` of v_ to the activation range */
#define EDGEC_FC8_OUT(acc, r, clamp)                                                               \
    do {                                                                                           \
        const int32_t v_ = (E_SMMLAR((acc), rq[(r)].mult, rq[(r)].khi) + (((acc) >> 31) & rq[(r)].neg)) >> \
                           rq[(r)].shift;                                                          \
        out[(r)] = (int8_t)(clamp);                                                                \
    } while (0)

/* The chunks of 4 groups (inputs x .. end4). The Arm build runs them as one block of assembly (8 accumulators, 4
 * operands and 2 pointers: all 14 registers; the end is read from the stack). */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* clang cannot give an asm statement 14 registers */
#define EDGEC_FC8_ASM_ROW(acc)                                                                     \
    "ldrd %[wl], %[wh], [%[w]], #8\n\t"                                                           \
    "smlad %[" #acc "], %[wl], %[xl], %[" #acc "]\n\t"                                             \
    "smlad %[" #acc "], %[wh], %[xh], %[" #acc "]\n\t"
#define EDGEC_FC8_ASM_GROUP                                                                        \
    "ldrd %[xl], %[xh], [%[x]], #8\n\t" EDGEC_FC8_ASM_ROW(a0) EDGEC_FC8_ASM_ROW(a1) EDGEC_FC8_ASM_ROW(a2) \
        EDGEC_FC8_ASM_ROW(a3) EDGEC_FC8_ASM_ROW(a4) EDGEC_FC8_ASM_ROW(a5) EDGEC_FC8_ASM_ROW(a6)       \
            EDGEC_FC8_ASM_ROW(a7)
#define EDGEC_FC8_CHUNKS4()                                                                        \
    do {                                                                                           \
        if (x < end4) {                                                                            \
            uint32_t xl, xh, wl, wh;                                                               \
            __asm__ volatile("1:\n\t" EDGEC_FC8_ASM_GROUP EDGEC_FC8_ASM_GROUP EDGEC_FC8_ASM_GROUP  \
                             EDGEC_FC8_ASM_GROUP "ldr %[xl], %[end]\n\t"                            \
                             "cmp %[x], %[xl]\n\t"                                                 \
                             "bne 1b\n\t"                                                          \
                             : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3),         \
                               [a4] "+r"(a4), [a5] "+r"(a5), [a6] "+r"(a6), [a7] "+r"(a7),         \
                               [x] "+r"(x), [w] "+r"(w), [xl] "=&r"(xl), [xh] "=&r"(xh),           \
                               [wl] "=&r"(wl), [wh] "=&r"(wh)                                      \
                             : [end] "m"(end4)                                                     \
                             : "cc", "memory");                                                    \
        }                                                                                          \
    } while (0)
#else
#define EDGEC_FC8_CHUNKS4()                                                                        \
    do {                                                                                           \
        for (; x < end4; x += 8, w += 64) {                                                        \
            EDGEC_FC8_GROUP(0, 0);                                                                 \
            EDGEC_FC8_GROUP(2, 16);                                                                \
            EDGEC_FC8_GROUP(4, 32);                                                                \
            EDGEC_FC8_GROUP(6, 48);                                                                \
        }                                                                                          \
    } while (0)
#endif

#define EDGEC_FC8_BLOCKS(name, clamp)                                                              \
    static EDGEC_HOT void name(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w, \
                               const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)            \
    {                                                                                              \
        const edgec_w32 *end4 = xw + 2 * (groups & ~3), *const end = xw + 2 * groups;              \
        for (; blocks > 0; --blocks, rq += 8, out += 8) {                                          \
            const edgec_w32 *x = xw;                                                               \
            int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3];    \
            int32_t a4 = (int32_t)w[4], a5 = (int32_t)w[5], a6 = (int32_t)w[6], a7 = (int32_t)w[7];    \
            w += 8;                                                                                \
            EDGEC_FC8_CHUNKS4();                                                                   \
            for (; x < end; x += 2, w += 16) EDGEC_FC8_GROUP(0, 0);                                \
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
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_full, EDGEC_SAT8(v_))
EDGEC_FC8_BLOCKS(edgec_fc8_blocks_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_))

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
    void (*const run)(const edgec_w32 *, int32_t, int32_t, const edgec_w32 *, const edgec_rq *, int8_t *, int32_t,
                      int32_t) = lo == -128 && hi == 127 ? edgec_fc8_blocks_full : edgec_fc8_blocks_clamped;
    run(xw, groups, blocks, (const edgec_w32 *)weights, rq, output, lo, hi);
    if (rest) { /* the padded last block through a buffer: the copies of the last row are not stored */
        int8_t t[8];
        run(xw, groups, 1, (const edgec_w32 *)weights + blocks * (8 + 16 * groups), rq + 8 * blocks, t,
                         lo, hi);
        for (i = 0; i < rest; ++i) output[8 * blocks + i] = t[i];
    }
}
