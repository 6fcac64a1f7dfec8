/* edgec speed variant of the fully connected layer for weights read from flash (declared in edgec_nn.h; chosen
 * where the weights' flash bytes are weighed: edgec/ops/dense_pairs.py): int8 weights, 1 byte a weight, at fewer
 * instructions a MAC than the packed kernel's SXTB16 pairs.
 *
 * Rows go in pairs (e, o). A word holds, for two inputs i, j, the bytes [w_e[i] + 128, w_o[i], w_e[j] + 128,
 * w_o[j]] (low first), read against the widened input word X = (x_i, x_j) (edgec_widen's (x0, x2) or (x1, x3)):
 * - SMLAD(word, X) adds (256 w_o[i] + w_e[i] + 128) x_i + (256 w_o[j] + w_e[j] + 128) x_j: each int16 half is
 *   256 times the odd row's weight plus the even row's offset weight (0..255);
 * - SMLAD(UXTB16(word), X) adds (w_e[i] + 128) x_i + (w_e[j] + 128) x_j.
 * Both sums start at -128 S (S: the sum of the inputs, once a call), so over the row the second is l = dot_e and
 * the first minus it is 256 dot_o, modulo 2^32: exact where |dot_o| < 2^23, which the lowering checks on the
 * weights (128 times the odd row's sum of |w| under 2^23). Three instructions for 4 MACs (SXTB16 pairs: four).
 *
 * Weights: a header word (the output stage, EDGEC_FCP_*), then per block of 4 rows (rows padded to 4 with copies
 * of the last; k4 inputs, zero weights past in_features) its groups of 4 inputs, [group][pair 0, 1][word (x0, x2),
 * word (x1, x3)], then the block's 4 doubled biases (input zero point folded in), so that a block's words are one
 * sequential run of flash. Requantization records: one for the layer (the uniform stage: a .tflite's per-tensor
 * weight scale, read once a call), else one a row (their bias unused). */
#include "edgec_fast_support.h"

#define EDGEC_FCP_FULL 0    /* the full int8 range, every record's neg -1 */
#define EDGEC_FCP_RELU 1    /* a range up to 127, every record's neg -1 */
#define EDGEC_FCP_CLAMP 2   /* any range and neg */
#define EDGEC_FCP_UNIFORM 3 /* the full range, one record (mult, khi, neg -1, shift) for every row */

/* one call's blocks: the widened input, -128 S, the loop's passes of 8 groups, the groups the first pass skips,
 * the uniform stage's multiplier, its high word and shift */
typedef struct {
    const edgec_w32 *xw;
    int32_t init, passes, skip, mult, khi, shift;
} edgec_fcp_call;

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_FCP_MAC(w, x, acc) ((uint32_t)__smlad((int32_t)(w), (int32_t)(x), (int32_t)(acc)))
#define EDGEC_FCP_UXTB16(w) ((uint32_t)__uxtb16((w)))
#else /* the same integers, modulo 2^32 (no signed overflow) */
EDGEC_INLINE int32_t edgec_fcp_h(uint32_t v, int hi) { return (int32_t)(int16_t)(uint16_t)(hi ? v >> 16 : v); }
EDGEC_INLINE uint32_t EDGEC_FCP_MAC(uint32_t w, uint32_t x, uint32_t acc)
{
    return acc + (uint32_t)(edgec_fcp_h(w, 0) * edgec_fcp_h(x, 0)) + (uint32_t)(edgec_fcp_h(w, 1) * edgec_fcp_h(x, 1));
}
#define EDGEC_FCP_UXTB16(w) ((w) & 0x00ff00ffu)
#endif

#if defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)
/* The uniform stage's blocks in assembly. Registers: r0 x, r1 w, r2 f0, r3 l0, r4 f1, r5 l1, r6 r7 the group's
 * input words, r8-r11 its 4 weight words, r12 the passes left, lr the loop's entry; each group is 18 32-bit
 * instructions (72 bytes: the entry for a count of groups not a multiple of 8 relies on it) whose first loads
 * step x and w. The output stage: r6-r9 the block's doubled biases, r10 mult, r11 khi, r12 shift, r0 out.
 * Frame: [sp] x0, -128 S, passes, mult, khi, shift, out, out's end. */
#define EDGEC_FCP_ASM 1
extern void edgec_fcp_uniform(const edgec_fcp_call *c, const edgec_w32 *w, int8_t *out, int32_t blocks);
#define EDGEC_FCP_ASM_GROUP                                                                        \
    "ldr r6, [r0], #8\n\t"                                                                       \
    "ldr r7, [r0, #-4]\n\t"                                                                      \
    "ldr r8, [r1], #16\n\t"                                                                      \
    "ldr r9, [r1, #-12]\n\t"                                                                     \
    "ldr r10, [r1, #-8]\n\t"                                                                     \
    "ldr r11, [r1, #-4]\n\t"                                                                     \
    "smlad r2, r8, r6, r2\n\t"                                                                     \
    "uxtb16 r8, r8\n\t"                                                                            \
    "smlad r3, r8, r6, r3\n\t"                                                                     \
    "smlad r2, r9, r7, r2\n\t"                                                                     \
    "uxtb16 r9, r9\n\t"                                                                            \
    "smlad r3, r9, r7, r3\n\t"                                                                     \
    "smlad r4, r10, r6, r4\n\t"                                                                    \
    "uxtb16 r10, r10\n\t"                                                                          \
    "smlad r5, r10, r6, r5\n\t"                                                                    \
    "smlad r4, r11, r7, r4\n\t"                                                                    \
    "uxtb16 r11, r11\n\t"                                                                          \
    "smlad r5, r11, r7, r5\n\t"
#define EDGEC_FCP_ASM_GROUPS4 EDGEC_FCP_ASM_GROUP EDGEC_FCP_ASM_GROUP EDGEC_FCP_ASM_GROUP EDGEC_FCP_ASM_GROUP
/* the doubled accumulator t requantized into v and stored (neg -1: + t >> 31) */
#define EDGEC_FCP_ASM_OUT(t, v)                                                                    \
    "smmlar " v ", " t ", r10, r11\n\t"                                                            \
    "add.w " v ", " v ", " t ", asr #31\n\t"                                                       \
    "asr.w " v ", " v ", r12\n\t"                                                                  \
    "ssat " v ", #8, " v "\n\t"                                                                    \
    "strb " v ", [r0], #1\n\t"
__asm__(".syntax unified\n\t.text\n\t.align 2\n\t.global edgec_fcp_uniform\n\t"
        ".type edgec_fcp_uniform, %function\n\t.thumb_func\n"
        "edgec_fcp_uniform:\n\t"
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "sub sp, sp, #32\n\t"
        "ldmia r0, {r4, r5, r6, r7, r8, r9, r10}\n\t" /* x0 init passes skip mult khi shift */
        "strd r4, r5, [sp]\n\t"
        "strd r6, r8, [sp, #8]\n\t"
        "strd r9, r10, [sp, #16]\n\t"
        "add r3, r2, r3, lsl #2\n\t" /* the end of the output */
        "strd r2, r3, [sp, #24]\n\t"
        "movs r4, #72\n\t"
        "adr.w lr, 2f\n\t"
        "mla lr, r7, r4, lr\n\t"
        "orr lr, lr, #1\n"
        "1:\n\t"
        "ldmia sp, {r0, r3, r12}\n\t" /* x0, -128 S, passes */
        "mov r2, r3\n\t"
        "mov r4, r3\n\t"
        "mov r5, r3\n\t"
        "bx lr\n\t"
        ".align 2\n"
        "2:\n\t" EDGEC_FCP_ASM_GROUPS4 EDGEC_FCP_ASM_GROUPS4
        "subs r12, r12, #1\n\t"
        "bne 2b\n\t"
        "ldmia r1!, {r6, r7, r8, r9}\n\t" /* the block's doubled biases */
        "ldrd r10, r11, [sp, #12]\n\t"
        "ldrd r12, r0, [sp, #20]\n\t"
        "sub r2, r2, r3\n\t"             /* 256 dot_o */
        "add.w r6, r6, r3, lsl #1\n\t"   /* 2 (dot_e + bias) */
        "add.w r7, r7, r2, asr #7\n\t"   /* 2 (dot_o + bias) */
        EDGEC_FCP_ASM_OUT("r6", "r3") EDGEC_FCP_ASM_OUT("r7", "r2")
        "sub r4, r4, r5\n\t"
        "add.w r8, r8, r5, lsl #1\n\t"
        "add.w r9, r9, r4, asr #7\n\t"
        EDGEC_FCP_ASM_OUT("r8", "r5") EDGEC_FCP_ASM_OUT("r9", "r4")
        "ldr r6, [sp, #28]\n\t"
        "str r0, [sp, #24]\n\t"
        "cmp r0, r6\n\t"
        "bne 1b\n\t"
        "add sp, sp, #32\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size edgec_fcp_uniform, .-edgec_fcp_uniform\n");
#endif

/* the doubled accumulator t requantized by record q into the layer's range */
EDGEC_INLINE int8_t edgec_fcp_out(int32_t t, const edgec_rq *q, int32_t stage, int32_t lo, int32_t hi)
{
    const int32_t fix = stage == EDGEC_FCP_CLAMP ? ((t >> 31) & q->neg) : (t >> 31);
    int32_t v = (E_SMMLAR(t, q->mult, q->khi) + fix) >> q->shift;
    if (stage != EDGEC_FCP_CLAMP) v = EDGEC_SAT8(v);
    if (stage == EDGEC_FCP_FULL || stage == EDGEC_FCP_UNIFORM) return (int8_t)v;
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* `blocks` blocks of 4 rows in C (every stage; the portable and emulated-DSP builds, and the Arm build's stages
 * other than the uniform one): rq one record a row, or one for all (uniform) */
static EDGEC_HOT void edgec_fcp_blocks(const edgec_fcp_call *c, int32_t groups, int32_t blocks, const edgec_w32 *w,
                                       const edgec_rq *rq, int8_t *out, int32_t stage, int32_t lo, int32_t hi)
{
    const int32_t step = stage == EDGEC_FCP_UNIFORM ? 0 : 1;
    for (; blocks > 0; --blocks, out += 4) {
        const edgec_w32 *x = c->xw;
        uint32_t f0 = (uint32_t)c->init, l0 = f0, f1 = f0, l1 = f0;
        int32_t g, t;
        for (g = groups; g > 0; --g, x += 2, w += 4) {
            const uint32_t xl = x[0], xh = x[1], w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            f0 = EDGEC_FCP_MAC(w0, xl, f0);
            l0 = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(w0), xl, l0);
            f0 = EDGEC_FCP_MAC(w1, xh, f0);
            l0 = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(w1), xh, l0);
            f1 = EDGEC_FCP_MAC(w2, xl, f1);
            l1 = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(w2), xl, l1);
            f1 = EDGEC_FCP_MAC(w3, xh, f1);
            l1 = EDGEC_FCP_MAC(EDGEC_FCP_UXTB16(w3), xh, l1);
        }
        /* each row's doubled sum: the doubled bias + 2 dot (2 dot_o = (f - l) >> 7, exact: f - l = 256 dot_o) */
        t = (int32_t)(w[0] + 2u * l0);
        out[0] = edgec_fcp_out(t, rq, stage, lo, hi);
        rq += step;
        t = (int32_t)w[1] + ((int32_t)(f0 - l0) >> 7);
        out[1] = edgec_fcp_out(t, rq, stage, lo, hi);
        rq += step;
        t = (int32_t)(w[2] + 2u * l1);
        out[2] = edgec_fcp_out(t, rq, stage, lo, hi);
        rq += step;
        t = (int32_t)w[3] + ((int32_t)(f1 - l1) >> 7);
        out[3] = edgec_fcp_out(t, rq, stage, lo, hi);
        rq += step;
        w += 4;
    }
}

/* `blocks` blocks of 4 rows from w into out (rq: the first block's first record) */
static void edgec_fcp_run(const edgec_fcp_call *c, int32_t groups, int32_t blocks, const edgec_w32 *w,
                          const edgec_rq *rq, int8_t *out, int32_t stage, int32_t lo, int32_t hi)
{
#ifdef EDGEC_FCP_ASM
    if (stage == EDGEC_FCP_UNIFORM) {
        edgec_fcp_uniform(c, w, out, blocks);
        return;
    }
#endif
    edgec_fcp_blocks(c, groups, blocks, w, rq, out, stage, lo, hi);
}

void edgec_fully_connected_pairs_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                    const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, groups = p->k4 >> 2, n_out = p->out_features;
    const int32_t stage = (int32_t)weights[0], blocks = n_out >> 2, rest = n_out & 3;
    const edgec_w32 *const w = (const edgec_w32 *)weights + 1;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    edgec_fcp_call c;
    uint32_t s = 0;
    int32_t g, i;
    for (g = 0; g < groups; ++g) { /* missing inputs of a partial last group are 0 (their weights are 0 too) */
        uint32_t v = 0;
        if (4 * g + 4 <= n_in && ((uintptr_t)input & 3u) == 0) {
            v = ((const edgec_w32 *)(const void *)input)[g];
        } else {
            for (i = 0; i < 4 && 4 * g + i < n_in; ++i) v |= (uint32_t)(uint8_t)input[4 * g + i] << (8 * i);
        }
        edgec_widen(v, xw + 2 * g);
        s = EDGEC_FCP_MAC(xw[2 * g], 0x00010001u, s);
        s = EDGEC_FCP_MAC(xw[2 * g + 1], 0x00010001u, s);
    }
    c.xw = xw;
    c.init = (int32_t)(0u - 128u * s);
    c.passes = (groups + 7) >> 3;
    c.skip = (8 - (groups & 7)) & 7;
    c.mult = rq->mult;
    c.khi = rq->khi;
    c.shift = rq->shift;
    if (blocks > 0) edgec_fcp_run(&c, groups, blocks, w, rq, output, stage, p->act_min, p->act_max);
    if (rest) { /* the padded last block through a buffer: the copies of the last row are not stored */
        int8_t t[4];
        edgec_fcp_run(&c, groups, 1, w + blocks * (4 * groups + 4), stage == EDGEC_FCP_UNIFORM ? rq : rq + 4 * blocks,
                      t, stage, p->act_min, p->act_max);
        for (i = 0; i < rest; ++i) output[4 * blocks + i] = t[i];
    }
}
