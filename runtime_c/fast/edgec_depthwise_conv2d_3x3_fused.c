/* edgec speed-optimized depthwise 3x3 convolution (declared in edgec_nn.h; the `fused` variant of
 * `--optimize speed`, edgec/ops/conv/depthwise3x3.py; machinery in edgec_fast_support.h and
 * edgec_depthwise_conv2d_3x3_window.h): edgec_depthwise_conv2d_3x3_fused_s8. */
#include "edgec_depthwise_conv2d_3x3_window.h"
#include "edgec_fast_support.h"

/* The window and rotation of edgec_depthwise_conv2d_3x3_s8, but the weights are packed at build time for each
 * of the three rotations, and of the first and last output rows (edgec/ops/conv/depthwise3x3.py fused_3x3: per
 * channel 5 sets; the edge sets zero the kernel rows on the padding): per channel and set 6 words p0, p1, p2, q01, q2
 * (the channel's right shift in its low half, w[c][2] in its high half), 2 * bias (3 LDRD), and each output is
 * requantized from its register and stored as soon as its 9 taps are summed (no accumulator row, no per-row weight
 * packing, one call per channel and output row). */
#ifdef EDGEC_DSP
#define EDGEC_DWF_DECL                                                                             \
    uint32_t p0, p1, p2, q01, q2, a_, b_;                                                          \
    int32_t bias;                                                                                  \
    E_LDRD(p0, p1, wk, 0);                                                                         \
    E_LDRD(p2, q01, wk, 2);                                                                        \
    E_LDRD(q2, a_, wk, 4);                                                                         \
    bias = (int32_t)a_;
#define EDGEC_DWF_K0(acc) ((acc) = E_SMLABB(b_, q01, E_SMLAD(a_, p0, (acc))))
#define EDGEC_DWF_K1(acc) ((acc) = E_SMLABT(b_, q01, E_SMLAD(a_, p1, (acc))))
#define EDGEC_DWF_K2(acc) ((acc) = E_SMLABT(b_, q2, E_SMLAD(a_, p2, (acc))))
#define EDGEC_DWF_COL(col) E_LDRD(a_, b_, x, 8 * (col))
#define EDGEC_DWF_ONE(acc)                                                                         \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(acc);                                                                         \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(acc);                                                                         \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(acc);                                                                         \
    } while (0)
#else
#define EDGEC_DWF_DECL                                                                             \
    const edgec_h16 *h_ = (const edgec_h16 *)(const void *)wk;                                     \
    const int32_t a0w = h_[0], b0w = h_[1], a1w = h_[2], b1w = h_[3], a2w = h_[4], b2w = h_[5];    \
    const int32_t c0w = h_[6], c1w = h_[7], c2w = h_[9], bias = (int32_t)wk[5];
#define EDGEC_DWF_AT(acc, o)                                                                       \
    do {                                                                                           \
        const edgec_h16 *x_ = (const edgec_h16 *)(const void *)x + 4 * (o);                        \
        (acc) += x_[0] * a0w + x_[1] * b0w + x_[2] * c0w + x_[16] * a1w + x_[17] * b1w +           \
                 x_[18] * c1w + x_[32] * a2w + x_[33] * b2w + x_[34] * c2w;                        \
    } while (0)
#define EDGEC_DWF_ONE(acc) EDGEC_DWF_AT(acc, 0)
#endif

/* requantize the doubled accumulator t and store it at *o; `clamp` of v_, `fix` the correction for a negative t
 * (the record's neg: one row function per value). The record's fields are read where they are used (the int8
 * stores may alias them, so the compiler reloads them anyway: no registers held for them). */
#define EDGEC_DWF_STORE(t, o, clamp, fix)                                                          \
    do {                                                                                           \
        int32_t v_ = (E_SMMLAR((t), q->mult, q->khi) + fix(t)) >> q->shift;                        \
        *(o) = (int8_t)(clamp);                                                                    \
    } while (0)

/* One output row of the 4 channels of a group: n outputs each; x: channel 0's record in strip column 0 (channel k's
 * is 2 words further per k), wk: channel 0's 6 words for this row's set (channel k's 30 * k further), out:
 * channel 0's first output. Two outputs per step (stride 1 shares columns 1 and 2 between them, stride 2 column 2). */
#define EDGEC_DWF_ROW(name, clamp, fix)                                                            \
    static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, int32_t stride, const edgec_w32 *wk, \
                               const edgec_rq *q, int8_t *out0, int32_t step, int32_t lo, int32_t hi) \
    {                                                                                              \
        const int32_t span = 8 * stride * (n & ~1); /* 8 words a column */                         \
        int32_t k;                                                                                 \
        for (k = 0; k < 4; ++k, x0 += 2, wk += 30, ++q, ++out0) {                                  \
            const edgec_w32 *x = x0, *const end = x0 + span;                                       \
            int8_t *out = out0;                                                                    \
            EDGEC_DWF_DECL                                                                         \
            if (stride == 1) {                                                                     \
                for (; x < end; x += 16) {                                                         \
                    int32_t a0 = bias, a1 = bias;                                                  \
                    EDGEC_DWF_PAIR1(a0, a1);                                                       \
                    EDGEC_DWF_STORE(a0, out, clamp, fix);                                          \
                    out += step;                                                                   \
                    EDGEC_DWF_STORE(a1, out, clamp, fix);                                          \
                    out += step;                                                                   \
                }                                                                                  \
            } else {                                                                               \
                for (; x < end; x += 32) {                                                         \
                    int32_t a0 = bias, a1 = bias;                                                  \
                    EDGEC_DWF_PAIR2(a0, a1);                                                       \
                    EDGEC_DWF_STORE(a0, out, clamp, fix);                                          \
                    out += step;                                                                   \
                    EDGEC_DWF_STORE(a1, out, clamp, fix);                                          \
                    out += step;                                                                   \
                }                                                                                  \
            }                                                                                      \
            if (n & 1) {                                                                           \
                int32_t a0 = bias;                                                                 \
                EDGEC_DWF_ONE(a0);                                                                 \
                EDGEC_DWF_STORE(a0, out, clamp, fix);                                              \
            }                                                                                      \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
#ifdef EDGEC_DSP
#define EDGEC_DWF_PAIR1(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(a0);                                                                          \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(a0);                                                                          \
        EDGEC_DWF_K0(a1);                                                                          \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(a0);                                                                          \
        EDGEC_DWF_K1(a1);                                                                          \
        EDGEC_DWF_COL(3);                                                                          \
        EDGEC_DWF_K2(a1);                                                                          \
    } while (0)
#define EDGEC_DWF_PAIR2(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_COL(0);                                                                          \
        EDGEC_DWF_K0(a0);                                                                          \
        EDGEC_DWF_COL(1);                                                                          \
        EDGEC_DWF_K1(a0);                                                                          \
        EDGEC_DWF_COL(2);                                                                          \
        EDGEC_DWF_K2(a0);                                                                          \
        EDGEC_DWF_K0(a1);                                                                          \
        EDGEC_DWF_COL(3);                                                                          \
        EDGEC_DWF_K1(a1);                                                                          \
        EDGEC_DWF_COL(4);                                                                          \
        EDGEC_DWF_K2(a1);                                                                          \
    } while (0)
#else
#define EDGEC_DWF_PAIR1(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_AT(a0, 0);                                                                       \
        EDGEC_DWF_AT(a1, 4);                                                                       \
    } while (0)
#define EDGEC_DWF_PAIR2(a0, a1)                                                                    \
    do {                                                                                           \
        EDGEC_DWF_AT(a0, 0);                                                                       \
        EDGEC_DWF_AT(a1, 8);                                                                       \
    } while (0)
#endif
#define EDGEC_DWF_NEG(t) ((t) >> 31)       /* every neg of the group == -1 (the usual case: shift > 0) */
#define EDGEC_DWF_ANYNEG(t) ((t) >> 31 & q->neg) /* the record's own */
EDGEC_DWF_ROW(edgec_dwf_row_full, EDGEC_SAT8(v_), EDGEC_DWF_NEG)
EDGEC_DWF_ROW(edgec_dwf_row_full_anyneg, EDGEC_SAT8(v_), EDGEC_DWF_ANYNEG)
EDGEC_DWF_ROW(edgec_dwf_row_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_DWF_NEG)
EDGEC_DWF_ROW(edgec_dwf_row_clamped_anyneg, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_DWF_ANYNEG)
typedef void (*edgec_dwf_row)(const edgec_w32 *, int32_t, int32_t, const edgec_w32 *, const edgec_rq *, int8_t *,
                              int32_t, int32_t, int32_t);

/* The Arm build runs the rows of a group whose 4 channels all have a right shift (neg == -1) and the whole int8 range
 * as one block of assembly per stride (gcc's allocation of the C loop spills: 5 weight words, the bias, 4 pointers, 2
 * accumulators and a column record need 14 registers, and the requantization 3 more): the right shift is read from the
 * low byte of q2 (ASR uses only that byte), the multiplier and khi from the stack, the sign correction folded into
 * SMMLAR's accumulate operand ((k + (t >> 31)) * 2^32 + t * m: the same sum). 31 instructions a pair of outputs at
 * stride 1 (the C loop: 38), 32 at stride 2, and the loop's test every other pair. Registers: r0 x, r1 end, r2 out, r3
 * step, r4-r8 p0 p1 p2 q01 q2, r9 bias, r10/r11 a column record (then multiplier, khi), r12 and lr the two
 * accumulators. */
#if defined(EDGEC_DSP_NATIVE) && defined(__thumb2__)
#define EDGEC_DWF_ASM 1
extern void edgec_dwf_rows_s1(const edgec_w32 *x0, int32_t pairs, const edgec_w32 *wk, const edgec_rq *q,
                              int8_t *out0, int32_t step, int32_t odd);
extern void edgec_dwf_rows_s2(const edgec_w32 *x0, int32_t pairs, const edgec_w32 *wk, const edgec_rq *q,
                              int8_t *out0, int32_t step, int32_t odd);
/* requantize the accumulators r12 (stored at [r2]) and lr (at [r2 + r3]); the loop runs two pairs a pass, an odd
 * count entering at the second */
#define EDGEC_DWF_ASM_STORE2                                                                       \
    "ldrd r10, r11, [sp]\n\t"                                                                      \
    "add r11, r11, r12, asr #31\n\t"                                                               \
    "smmlar r12, r12, r10, r11\n\t"                                                                \
    "asr r12, r12, r8\n\t"                                                                         \
    "ssat r12, #8, r12\n\t"                                                                        \
    "strb r12, [r2]\n\t"                                                                           \
    "ldr r11, [sp, #4]\n\t"                                                                        \
    "add r11, r11, lr, asr #31\n\t"                                                                \
    "smmlar lr, lr, r10, r11\n\t"                                                                  \
    "asr lr, lr, r8\n\t"                                                                           \
    "ssat lr, #8, lr\n\t"                                                                          \
    "strb lr, [r2, r3]\n\t"                                                                        \
    "add r2, r2, r3, lsl #1\n\t"
/* frame: [sp] multiplier, khi, then x, wk, q of the next channel, channels left, bytes of the pairs; the arguments
 * out0, step, odd at sp + 68 */
#define EDGEC_DWF_ASM_FN(name, span_shift, pair, odd_pairs)                                        \
    "\t.pushsection .text." name ",\"ax\",%progbits\n\t.align 2\n\t.global " name "\n\t.type " name   \
    ", %function\n\t.thumb_func\n"                                                                 \
    name ":\n\t"                                                                                   \
    "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                                              \
    "sub sp, sp, #32\n\t"                                                                          \
    "lsl r1, r1, #" span_shift "\n\t"                                                              \
    "str r1, [sp, #24]\n\t"                                                                        \
    "strd r0, r2, [sp, #8]\n\t"                                                                    \
    "str r3, [sp, #16]\n\t"                                                                        \
    "movs r4, #4\n\t"                                                                              \
    "str r4, [sp, #20]\n"                                                                          \
    "1:\n\t"                                                                                       \
    "ldr r3, [sp, #16]\n\t"                                                                        \
    "ldrd r4, r5, [r3, #4]\n\t"                                                                    \
    "strd r4, r5, [sp]\n\t"                                                                        \
    "adds r3, r3, #20\n\t"                                                                         \
    "str r3, [sp, #16]\n\t"                                                                        \
    "ldr r2, [sp, #12]\n\t"                                                                        \
    "ldmia r2, {r4, r5, r6, r7, r8, r9}\n\t"                                                       \
    "adds r2, r2, #120\n\t"                                                                        \
    "str r2, [sp, #12]\n\t"                                                                        \
    "ldr r0, [sp, #8]\n\t"                                                                         \
    "adds r1, r0, #8\n\t"                                                                          \
    "str r1, [sp, #8]\n\t"                                                                         \
    "ldr r1, [sp, #24]\n\t"                                                                        \
    "add r1, r1, r0\n\t"                                                                           \
    "ldr r2, [sp, #68]\n\t"                                                                        \
    "adds r3, r2, #1\n\t"                                                                          \
    "str r3, [sp, #68]\n\t"                                                                        \
    "ldr r3, [sp, #72]\n\t"                                                                        \
    "subs r10, r1, r0\n\t"                                                                         \
    "beq 3f\n\t"                                                                                   \
    "tst r10, #" odd_pairs "\n\t"                                                                  \
    "bne 5f\n"                                                                                     \
    "2:\n\t" pair EDGEC_DWF_ASM_STORE2 "5:\n\t" pair EDGEC_DWF_ASM_STORE2 "cmp r0, r1\n\t"            \
    "bne 2b\n"                                                                                     \
    "3:\n\t"                                                                                       \
    "ldr r10, [sp, #76]\n\t"                                                                       \
    "cmp r10, #0\n\t"                                                                              \
    "beq 4f\n\t"                                                                                   \
    "ldrd r10, r11, [r0]\n\t"                                                                      \
    "smlad r12, r10, r4, r9\n\t"                                                                   \
    "smlabb r12, r11, r7, r12\n\t"                                                                 \
    "ldrd r10, r11, [r0, #32]\n\t"                                                                 \
    "smlad r12, r10, r5, r12\n\t"                                                                  \
    "smlabt r12, r11, r7, r12\n\t"                                                                 \
    "ldrd r10, r11, [r0, #64]\n\t"                                                                 \
    "smlad r12, r10, r6, r12\n\t"                                                                  \
    "smlabt r12, r11, r8, r12\n\t"                                                                 \
    "ldrd r10, r11, [sp]\n\t"                                                                      \
    "add r11, r11, r12, asr #31\n\t"                                                               \
    "smmlar r12, r12, r10, r11\n\t"                                                                \
    "asr r12, r12, r8\n\t"                                                                         \
    "ssat r12, #8, r12\n\t"                                                                        \
    "strb r12, [r2]\n"                                                                             \
    "4:\n\t"                                                                                       \
    "ldr r4, [sp, #20]\n\t"                                                                        \
    "subs r4, r4, #1\n\t"                                                                          \
    "str r4, [sp, #20]\n\t"                                                                        \
    "bne 1b\n\t"                                                                                   \
    "add sp, sp, #32\n\t"                                                                          \
    "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"                                               \
    ".size " name ", .-" name "\n\t.popsection\n"
/* two outputs, columns 0 and 1 (stride 1) or 0 and 2 (stride 2), x advanced past them */
#define EDGEC_DWF_ASM_PAIR1                                                                        \
    "ldrd r10, r11, [r0], #64\n\t"                                                                 \
    "smlad r12, r10, r4, r9\n\t"                                                                   \
    "smlabb r12, r11, r7, r12\n\t"                                                                 \
    "ldrd r10, r11, [r0, #-32]\n\t"                                                                \
    "smlad r12, r10, r5, r12\n\t"                                                                  \
    "smlabt r12, r11, r7, r12\n\t"                                                                 \
    "smlad lr, r10, r4, r9\n\t"                                                                    \
    "smlabb lr, r11, r7, lr\n\t"                                                                   \
    "ldrd r10, r11, [r0]\n\t"                                                                      \
    "smlad r12, r10, r6, r12\n\t"                                                                  \
    "smlabt r12, r11, r8, r12\n\t"                                                                 \
    "smlad lr, r10, r5, lr\n\t"                                                                    \
    "smlabt lr, r11, r7, lr\n\t"                                                                   \
    "ldrd r10, r11, [r0, #32]\n\t"                                                                 \
    "smlad lr, r10, r6, lr\n\t"                                                                    \
    "smlabt lr, r11, r8, lr\n\t"
#define EDGEC_DWF_ASM_PAIR2                                                                        \
    "ldrd r10, r11, [r0], #128\n\t"                                                                \
    "smlad r12, r10, r4, r9\n\t"                                                                   \
    "smlabb r12, r11, r7, r12\n\t"                                                                 \
    "ldrd r10, r11, [r0, #-96]\n\t"                                                                \
    "smlad r12, r10, r5, r12\n\t"                                                                  \
    "smlabt r12, r11, r7, r12\n\t"                                                                 \
    "ldrd r10, r11, [r0, #-64]\n\t"                                                                \
    "smlad r12, r10, r6, r12\n\t"                                                                  \
    "smlabt r12, r11, r8, r12\n\t"                                                                 \
    "smlad lr, r10, r4, r9\n\t"                                                                    \
    "smlabb lr, r11, r7, lr\n\t"                                                                   \
    "ldrd r10, r11, [r0, #-32]\n\t"                                                                \
    "smlad lr, r10, r5, lr\n\t"                                                                    \
    "smlabt lr, r11, r7, lr\n\t"                                                                   \
    "ldrd r10, r11, [r0]\n\t"                                                                      \
    "smlad lr, r10, r6, lr\n\t"                                                                    \
    "smlabt lr, r11, r8, lr\n\t"
__asm__(".syntax unified\n" EDGEC_DWF_ASM_FN("edgec_dwf_rows_s1", "6", EDGEC_DWF_ASM_PAIR1, "64")
            EDGEC_DWF_ASM_FN("edgec_dwf_rows_s2", "7", EDGEC_DWF_ASM_PAIR2, "128"));
#endif

/* Input row `src` into slot `slot` of strip columns [x0, x1), as edgec_dw_load_row does, four columns a step (KWS's
 * 25 columns: 8 loads and stores a column and the loop's 5 instructions over 4 of them, not 2), then 2, then 1. */
#define EDGEC_DWF_LOAD_COLUMN(d, s)                                                                \
    do {                                                                                           \
        (d)[0] = (s)[0];                                                                           \
        (d)[4] = (s)[1];                                                                           \
        (d)[8] = (s)[2];                                                                           \
        (d)[12] = (s)[3];                                                                          \
    } while (0)
static EDGEC_NOINLINE void edgec_dwf_load_row(const int8_t *src, int32_t cs, int32_t x0, int32_t x1, int32_t slot,
                                              int16_t *win)
{
    edgec_h16 *d = (edgec_h16 *)win + 16 * x0 + slot;
    edgec_h16 *const end = d + 16 * ((x1 - x0) & ~3);
    for (; d < end; d += 64, src += 4 * cs) {
        EDGEC_DWF_LOAD_COLUMN(d, src);
        EDGEC_DWF_LOAD_COLUMN(d + 16, src + cs);
        EDGEC_DWF_LOAD_COLUMN(d + 32, src + 2 * cs);
        EDGEC_DWF_LOAD_COLUMN(d + 48, src + 3 * cs);
    }
    if ((x1 - x0) & 2) {
        EDGEC_DWF_LOAD_COLUMN(d, src);
        EDGEC_DWF_LOAD_COLUMN(d + 16, src + cs);
        d += 32;
        src += 2 * cs;
    }
    if ((x1 - x0) & 1) EDGEC_DWF_LOAD_COLUMN(d, src);
}

/* The rows a call runs on, named by the entry the generated code calls (edgec/ops/conv/depthwise3x3.py fused_entry,
 * from the layer's stride, output range and records): the assembly of stride 1 or 2 (the whole int8 range, every
 * record's neg -1; the C row on a build without it), the full range with some neg 0 (the assembly for the groups
 * whose 4 negs are -1, the C row for the others), a clamped range's C rows (every neg -1, or `_ANYNEG`). A constant
 * where edgec_dwf_run is inlined, so a firmware links only the rows its layers name; EDGEC_DWF_CHOOSE: chosen at
 * run time (edgec_depthwise_conv2d_3x3_fused_s8). */
enum { EDGEC_DWF_CHOOSE, EDGEC_DWF_ROWS_S1, EDGEC_DWF_ROWS_S2, EDGEC_DWF_FULL_ANYNEG, EDGEC_DWF_CLAMPED,
       EDGEC_DWF_CLAMPED_ANYNEG };
EDGEC_INLINE void edgec_dwf_run(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output,
                                const int loop, const int banded)
{
    const int32_t c = p->c, rows = p->rows, cols = p->cols, n = p->out_cols;
    const int32_t s = loop == EDGEC_DWF_ROWS_S1 ? 1 : loop == EDGEC_DWF_ROWS_S2 ? 2 : p->stride;
    const int32_t width = (n - 1) * s + 3, pl = p->pad_left, lo = p->act_min, hi = p->act_max;
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    int16_t *win = (int16_t *)(void *)scratch;
    const int full = loop == EDGEC_DWF_CHOOSE ? lo == -128 && hi == 127 : loop < EDGEC_DWF_CLAMPED;
    const int allneg = loop == EDGEC_DWF_ROWS_S1 || loop == EDGEC_DWF_ROWS_S2 || loop == EDGEC_DWF_CLAMPED;
    const edgec_dwf_row row_neg = full ? edgec_dwf_row_full : edgec_dwf_row_clamped;
    const edgec_dwf_row row_anyneg = full ? edgec_dwf_row_full_anyneg : edgec_dwf_row_clamped_anyneg;
    /* only the first output row's window reaches above the image and only the last one's below: their own weight
     * sets (3 and 4 of each channel's 5) take the padding, and padded rows are never written (edge_rows in
     * edgec/ops/conv/depthwise3x3.py). A row band of the image (`banded` entries: p->band, edgec/plan/patching.py)
     * takes set 3 only on its first row where that is the image's first (`head` 0, else -1: none), set 4 only on its
     * last where that is the image's last (`tail` last, else out_rows: none), and writes the padded rows no set
     * takes as zero points; the whole image's entries (banded 0) fold head and tail to 0 and last: their code is
     * the same as before bands existed */
    const int32_t pt = p->pad_top, last = p->out_rows - 1, flags = banded ? p->band : 0;
    const int edges = last >= 1 && pt >= 0 && pt <= s && (last - 1) * s - pt + 3 <= rows;
    const int32_t head = flags & EDGEC_DW3X3_NOT_TOP ? -1 : 0;
    const int32_t tail = flags & EDGEC_DW3X3_NOT_BOTTOM ? last + 1 : last;
    int32_t cg, oy, r, k;
    for (cg = 0; cg < c; cg += 4) {
        const int negs = !allneg && rq[cg].neg + rq[cg + 1].neg + rq[cg + 2].neg + rq[cg + 3].neg != -4;
        int32_t next = -pt;
        for (k = 0; k < 3; ++k) {
            edgec_dw_load_row(p, input, 0, x0, k, win, 0);
            edgec_dw_load_row(p, input, x1, width, k, win, 0);
        }
        for (oy = 0; oy < p->out_rows; ++oy) {
            const int32_t r0 = oy * s - pt;
            const int32_t set = !edges || (oy > head && oy < tail) ? (r0 % 3 + 3) % 3 : oy == 0 ? 3 : 4;
            const edgec_w32 *const wk = (const edgec_w32 *)weights + 30 * cg + 6 * set;
            for (r = next > r0 ? next : r0; r < r0 + 3; ++r) {
                const int valid = r >= 0 && r < rows;
                if (valid) {
                    edgec_dwf_load_row(input + r * p->in_row_step + (x0 - pl) * p->in_col_step + cg, p->in_col_step,
                                       x0, x1, (r % 3 + 3) % 3, win);
                } else if (!edges || (r < 0 ? head < 0 : tail > last)) {
                    edgec_dw_load_row(p, input, x0, x1, (r % 3 + 3) % 3, win, 0);
                }
            }
            next = r0 + 3;
#ifdef EDGEC_DWF_ASM
            if (full && !negs) {
                (s == 1 ? edgec_dwf_rows_s1 : edgec_dwf_rows_s2)((const edgec_w32 *)(const void *)win, n >> 1,
                                                                 wk,
                                                                 rq + cg, output + oy * p->out_row_step + cg,
                                                                 p->out_col_step, n & 1);
                continue;
            }
#endif
            (negs ? row_anyneg : row_neg)((const edgec_w32 *)(const void *)win, n, s,
                                          wk, rq + cg,
                                          output + oy * p->out_row_step + cg, p->out_col_step, lo, hi);
        }
    }
}

void edgec_depthwise_conv2d_3x3_fused_s8(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input,
                                         const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_dwf_run(p, input, weights, rq, scratch, output, EDGEC_DWF_CHOOSE, 1);
}

/* The entries the generated code calls (edgec/ops/conv/depthwise3x3.py fused_entry), each linking only its rows; the
 * `band_` ones for a row band of 2 rows or more of a patch-based stage (p->band) */
#define EDGEC_DWF_ARGS \
    const edgec_depthwise_conv2d_3x3_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq, \
        int8_t *scratch, int8_t *output
#define EDGEC_DWF_ENTRY_RUN(loop, banded) edgec_dwf_run(p, input, weights, rq, scratch, output, loop, banded)
void edgec_depthwise_conv2d_3x3_fused_rows_s1_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_ROWS_S1, 0); }
void edgec_depthwise_conv2d_3x3_fused_rows_s2_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_ROWS_S2, 0); }
void edgec_depthwise_conv2d_3x3_fused_full_anyneg_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_FULL_ANYNEG, 0); }
void edgec_depthwise_conv2d_3x3_fused_clamped_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_CLAMPED, 0); }
void edgec_depthwise_conv2d_3x3_fused_clamped_anyneg_s8(EDGEC_DWF_ARGS)
{
    EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_CLAMPED_ANYNEG, 0);
}
void edgec_depthwise_conv2d_3x3_fused_band_rows_s1_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_ROWS_S1, 1); }
void edgec_depthwise_conv2d_3x3_fused_band_rows_s2_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_ROWS_S2, 1); }
void edgec_depthwise_conv2d_3x3_fused_band_full_anyneg_s8(EDGEC_DWF_ARGS)
{
    EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_FULL_ANYNEG, 1);
}
void edgec_depthwise_conv2d_3x3_fused_band_clamped_s8(EDGEC_DWF_ARGS) { EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_CLAMPED, 1); }
void edgec_depthwise_conv2d_3x3_fused_band_clamped_anyneg_s8(EDGEC_DWF_ARGS)
{
    EDGEC_DWF_ENTRY_RUN(EDGEC_DWF_CLAMPED_ANYNEG, 1);
}
