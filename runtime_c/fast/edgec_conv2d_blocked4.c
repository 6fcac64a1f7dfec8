/* edgec speed-optimized convolution, 2 output pixels x 4 output channels in registers (declared in edgec_nn.h;
 * a `--optimize speed` variant, edgec/ops/conv/im2col.py, for 1x1 convolutions and single-channel inputs): each k-step (2 input channels) is one LDRD of both pixels' int16 words, two LDRD of the 4
 * channels' weight words and 8 SMLAD (16 MACs; the blocked kernel needs 12 instructions for them). The taps of
 * the two pixels (edgec_conv_taps: the input pixel itself for a 1x1 convolution) are widened to int16 once, interleaved so that one LDRD reads both pixels. The weights
 * and biases are doubled at build time, so the accumulators hold 2 * acc, the value the requantization's
 * SMMLAR takes (no shift per output); the biases come from the weight stream. */
#include "edgec_conv_block2x4.h"
#include "edgec_conv_taps.h"
#include "edgec_fast_support.h"

/* Weights: for each block of 4 output channels (the last block padded with copies of the last channel, the
 * requantization records too), the 4 doubled biases, then for each group of 4 input channels (x0..x3; groups padded with zero weights to an even
 * count) the doubled int16 words (w0, w2) of channels 0..3 then (w1, w3) of channels 0..3.
 * Columns: for each group, (x0, x2) of pixel 0 and of pixel 1, then (x1, x3) of pixel 0 and of pixel 1. */

/* Requantize channel d's accumulators (doubled) of both pixels with record q[d] and store them at o0[d], o1[d];
 * `fix` the negative accumulators' correction: (acc >> 31) & neg, or acc >> 31 where every record's neg is -1
 * (one ADD with a shifted operand instead of three instructions). */
#define EDGEC_PW_FIX_ANY(acc, n) (((acc) >> 31) & (n))
#define EDGEC_PW_FIX_ALL(acc, n) ((acc) >> 31)
#define EDGEC_PW_STORE(acc0, acc1, d, clamp, fix)                                                 \
    do {                                                                                           \
        const edgec_rq *r_ = q + (d);                                                              \
        const int32_t m_ = r_->mult, k_ = r_->khi, n_ = r_->neg, s_ = r_->shift;                   \
        int32_t v_ = (E_SMMLAR((acc0), m_, k_) + fix((acc0), n_)) >> s_;                           \
        o0[(d)] = (int8_t)(clamp);                                                                 \
        v_ = (E_SMMLAR((acc1), m_, k_) + fix((acc1), n_)) >> s_;                                   \
        (void)n_;                                                                                  \
        o1[(d)] = (int8_t)(clamp);                                                                 \
    } while (0)

/* `blocks` blocks of 4 output channels of 2 pixels (columns cols .. cols + k8); `clamp` of v_ to the activation
 * range. */
#define EDGEC_PW_PIXELS(name, clamp, fix)                                                          \
    static EDGEC_HOT void name(const edgec_w32 *cols, int32_t k8, const edgec_w32 *w, const edgec_rq *q, \
                               int32_t blocks, int8_t *o0, int8_t *o1, int32_t lo, int32_t hi)     \
    {                                                                                              \
        const edgec_w32 *const end16 = cols + (k8 & ~15);                                          \
        for (; blocks > 0; --blocks, q += 4, o0 += 4, o1 += 4) {                                   \
            int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3];    \
            int32_t b0 = a0, b1 = a1, b2 = a2, b3 = a3;                                            \
            const edgec_w32 *x = cols;                                                             \
            EDGEC_B24_REGS                                                                         \
            w += 4;                                                                                \
            EDGEC_B24_CHUNKS16(end16);                                                             \
            if (k8 & 8) {                                                                          \
                EDGEC_B24_GROUP(0);                                                                \
                EDGEC_B24_GROUP(1);                                                                \
                w += 16;                                                                           \
            }                                                                                      \
            EDGEC_PW_STORE(a0, b0, 0, clamp, fix);                                                   \
            EDGEC_PW_STORE(a1, b1, 1, clamp, fix);                                                   \
            EDGEC_PW_STORE(a2, b2, 2, clamp, fix);                                                   \
            EDGEC_PW_STORE(a3, b3, 3, clamp, fix);                                                   \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
/* the full int8 range with every neg -1 (the usual layer), or some neg 0; any other range (both kinds of neg) */
EDGEC_PW_PIXELS(edgec_blocked4_pixels_clamped, v_ < lo ? lo : (v_ > hi ? hi : v_), EDGEC_PW_FIX_ANY)
/* On the Arm build the full-range block is one block of assembly (gcc's C spilled in the tail of 8 words and around
 * the requantization): the 2x4 block's k-step and requantization (EDGEC_B24_ASM_STEP, EDGEC_B24_RQ_*,
 * fast/edgec_conv_block2x4.h) in blocked4's own loop over the blocks of 4 channels. Per block: the biases seed both
 * pixels' sums with 4 LDRD (no MOV), the loop ends on the records' pointer (no count in memory), the taps run as
 * EDGEC_B4_TAIL8 / TAIL16 / DUFF say, and pixel 1's word is stored at o0 + delta (delta = o1 - o0: out_c, or 0 for a lone last pixel,
 * whose pixel-0 word then overwrites it), so RQ_ALL's block never saves the weights' pointer. `save`/`restore` keep
 * w where the requantization needs it as a temporary (RQ_ANY). `_anyneg` where some record's neg is 0 (VWW's later
 * layers). */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
#define EDGEC_B4_BODY_STEPS 32   /* k-steps (2 taps of both pixels, 44 bytes of code) in the unrolled body */
/* The taps of one block: n / 2 k-steps, the first one EDGEC_B4_FIRST. TAIL8 / TAIL16: n is 8 / 16 (straight code);
 * DUFF: then the body of 32 k-steps entered part-way (at `entry`, computed once a call by EDGEC_B4_ENTRY: the first
 * pass runs the (n / 2 - 1) mod 32 last steps, or all 32), then whole bodies up to `end`; DUFF_ONCE: the one pass of n <= 64 (no test of the end: 3
 * instructions a block fewer; k8 24 to 56, VWW's 1x1 layers on 32 input channels; exactly 64: STRAIGHT64) */
/* The first k-step of a block: pixel 1's sums start from pixel 0's, which hold the biases (the block loads them with 2
 * LDRD, not 4: 2 instructions a block) */
#define EDGEC_B4_FIRST                                                                             \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                           \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                                                           \
    "smlad %[b0], %[xb], %[wa], %[a0]\n\t"                                                        \
    "smlad %[a0], %[xa], %[wa], %[a0]\n\t"                                                        \
    "smlad %[b1], %[xb], %[wb], %[a1]\n\t"                                                        \
    "smlad %[a1], %[xa], %[wb], %[a1]\n\t"                                                        \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                                                           \
    "smlad %[b2], %[xb], %[wa], %[a2]\n\t"                                                        \
    "smlad %[a2], %[xa], %[wa], %[a2]\n\t"                                                        \
    "smlad %[b3], %[xb], %[wb], %[a3]\n\t"                                                        \
    "smlad %[a3], %[xa], %[wb], %[a3]\n\t"
#define EDGEC_B4_TAIL8 EDGEC_B4_FIRST EDGEC_B24_ASM_STEP EDGEC_B24_ASM_TAIL4
#define EDGEC_B4_TAIL16 EDGEC_B4_FIRST EDGEC_B24_ASM_STEP EDGEC_B24_ASM_TAIL4 EDGEC_B24_ASM_TAIL8
#define EDGEC_B4_STEPS8 EDGEC_B24_ASM_TAIL8 EDGEC_B24_ASM_TAIL8
/* n exactly 64 (KWS's 1x1 layers, 64 input channels): the 32 k-steps straight, no jump into the body (DUFF_ONCE's
 * LDR and BX: 2 instructions a block of 4 channels fewer) */
#define EDGEC_B4_STRAIGHT64 EDGEC_B4_TAIL16 EDGEC_B4_STEPS8 EDGEC_B4_STEPS8 EDGEC_B4_STEPS8
#define EDGEC_B4_DUFF_ONCE                                                                         \
    EDGEC_B4_FIRST                                                                                 \
    "ldr %[xa], %[entry]\n\t"                                                                      \
    "bx %[xa]\n\t"                                                                                 \
    "1:\n\t" EDGEC_B4_STEPS8 EDGEC_B4_STEPS8 EDGEC_B4_STEPS8 EDGEC_B4_STEPS8                       \
    "3:\n\t"                                                                                       \
    ".ifne (3b - 1b) - 44 * 32\n\t"                                                                \
    ".error \"blocked4: a k-step of the unrolled body is not 44 bytes\"\n\t"                       \
    ".endif\n\t"
#define EDGEC_B4_DUFF                                                                              \
    EDGEC_B4_DUFF_ONCE                                                                             \
    "ldr %[xa], %[end]\n\t"                                                                        \
    "cmp %[x], %[xa]\n\t"                                                                          \
    "bne 1b\n\t"
#define EDGEC_B4_ENTRY                                                                             \
    "adr %[xa], 1f\n\t"                                                                            \
    "ldr %[xb], %[skip]\n\t"                                                                       \
    "add %[xa], %[xa], %[xb]\n\t"                                                                  \
    "orr %[xa], %[xa], #1\n\t"                                                                     \
    "str %[xa], %[entry]\n\t"
/* `pairs` pairs of output pixels, all `blocks` blocks of 4 channels of each: pixel 0's outputs at o0 (o0 then steps on
 * by delta past pixel 1's), pixel 1's at o0 + delta. groups > 0: the columns are widened here, per pair, from the
 * `groups` input words at t (pixel 0) and after them (pixel 1; the next pair after those: a 1x1 convolution's pixels);
 * 0: the caller wrote them (one pair). */
#define EDGEC_B4_ASM_PAIRS(name, duff, prologue, taps, rq, save, restore)                                              \
static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, const edgec_w32 *w0, const edgec_rq *q0, int32_t blocks,    \
                           const int8_t *t, int32_t groups, int8_t *o0, int32_t delta, int32_t pairs)                  \
{                                                                                                                      \
    const edgec_w32 *const end = x0 + (duff ? n : 0), *x, *w, *wsave; /* n: a positive multiple of 8 */                \
    const edgec_rq *const qend = q0 + 4 * blocks, *q;                                                                  \
    const int8_t *const oend = o0 + pairs * (4 * blocks + delta);                                                      \
    const int32_t skip = duff ? 44 * ((EDGEC_B4_BODY_STEPS - ((n >> 1) - 1) % EDGEC_B4_BODY_STEPS) % EDGEC_B4_BODY_STEPS) : 0; \
    uint32_t a0, a1, a2, a3, b0, b1, b2, b3, xa, xb, wa, wb, entry;                                                   \
    if (blocks <= 0 || pairs <= 0) return;                                                                             \
    __asm__ volatile(prologue "ldr %[x], %[x0]\n\t" /* x0 in x at each block's start (reloaded before its BNE) */     \
                     "4:\n\t"                                                                                          \
                     "ldr %[wb], %[groups]\n\t"                                                                        \
                     "cmp %[wb], #0\n\t"                                                                               \
                     "beq 6f\n\t"                                                                                      \
                     "ldr %[w], %[t]\n\t"                                                                              \
                     "add %[xb], %[w], %[wb], lsl #2\n\t"                                                              \
                     "mov %[wa], %[x]\n\t"                                                                             \
                     "lsrs %[wb], %[wb], #1\n\t" /* pairs of groups; an odd one first (7: out of the loop's way) */     \
                     "bcs 7f\n\t"                                                                                       \
                     "5:\n\t" /* two groups of 4 inputs of both pixels: (x0, x2) of each, then (x1, x3); the 4 loads in a row */\
                     "ldr %[a0], [%[w]], #4\n\t"                                                                        \
                     "ldr %[a1], [%[xb]], #4\n\t"                                                                       \
                     "ldr %[a2], [%[w]], #4\n\t"                                                                        \
                     "ldr %[a3], [%[xb]], #4\n\t"                                                                       \
                     "sxtb16 %[b0], %[a0]\n\t"                                                                          \
                     "sxtb16 %[b1], %[a1]\n\t"                                                                          \
                     "sxtb16 %[a0], %[a0], ror #8\n\t"                                                                  \
                     "sxtb16 %[a1], %[a1], ror #8\n\t"                                                                  \
                     "strd %[b0], %[b1], [%[wa]], #8\n\t"                                                               \
                     "strd %[a0], %[a1], [%[wa]], #8\n\t"                                                               \
                     "sxtb16 %[b0], %[a2]\n\t"                                                                          \
                     "sxtb16 %[b1], %[a3]\n\t"                                                                          \
                     "sxtb16 %[a2], %[a2], ror #8\n\t"                                                                  \
                     "sxtb16 %[a3], %[a3], ror #8\n\t"                                                                  \
                     "strd %[b0], %[b1], [%[wa]], #8\n\t"                                                               \
                     "strd %[a2], %[a3], [%[wa]], #8\n\t"                                                               \
                     "subs %[wb], %[wb], #1\n\t"                                                                        \
                     "bne 5b\n\t"                                                                                       \
                     "8:\n\t"                                                                                           \
                     "str %[xb], %[t]\n\t" /* t + 8 * groups: the next pair's pixel 0 */                               \
                     "6:\n\t"                                                                                          \
                     "ldr %[w], %[w0]\n\t"                                                                             \
                     "ldr %[xa], %[q0]\n\t"                                                                            \
                     "str %[xa], %[q]\n\t"                                                                             \
                     "2:\n\t"                                                                                          \
                     "ldrd %[a0], %[a1], [%[w]], #8\n\t"                                                               \
                     "ldrd %[a2], %[a3], [%[w]], #8\n\t"                                                               \
                     taps save                                                                                         \
                     "ldr %[x], %[q]\n\t"                                                                              \
                     rq(a0, b0, 0) rq(a1, b1, 20) rq(a2, b2, 40) rq(a3, b3, 60)                                        \
                     "add %[x], %[x], #80\n\t"                                                                         \
                     "ldr %[wa], %[o0]\n\t" /* the loads in a row, then the stores in a row: each pipelines */        \
                     "ldr %[xa], %[delta]\n\t"                                                                         \
                     "ldr %[xb], %[qend]\n\t"                                                                          \
                     restore                                                                                           \
                     "cmp %[x], %[xb]\n\t" /* the flags stay until the BNE: nothing below sets them */                 \
                     "bfi %[b0], %[b1], #8, #8\n\t" /* the 4 bytes of a pixel in one word */                         \
                     "bfi %[b0], %[b2], #16, #8\n\t"                                                                   \
                     "bfi %[b0], %[b3], #24, #8\n\t"                                                                   \
                     "bfi %[a0], %[a1], #8, #8\n\t"                                                                   \
                     "bfi %[a0], %[a2], #16, #8\n\t"                                                                  \
                     "bfi %[a0], %[a3], #24, #8\n\t"                                                                  \
                     "str %[b0], [%[wa], %[xa]]\n\t" /* pixel 1 first: a lone last pixel's delta is 0 */              \
                     "str %[a0], [%[wa]], #4\n\t"                                                                      \
                     "str %[wa], %[o0]\n\t"                                                                            \
                     "str %[x], %[q]\n\t"                                                                              \
                     "ldr %[x], %[x0]\n\t" /* the next block's columns (EDGEC_B4_FIRST): after the stores */         \
                     "bne 2b\n\t"                                                                                      \
                     "ldr %[wa], %[o0]\n\t" /* past pixel 1's outputs */                                               \
                     "ldr %[xa], %[delta]\n\t"                                                                         \
                     "add %[wa], %[wa], %[xa]\n\t"                                                                     \
                     "str %[wa], %[o0]\n\t"                                                                            \
                     "ldr %[xa], %[oend]\n\t"                                                                          \
                     "cmp %[wa], %[xa]\n\t"                                                                            \
                     "bne 4b\n\t"                                                                                      \
                     "b 9f\n\t"                                                                                         \
                     "7:\n\t" /* an odd group (wb: the pairs after it) */                                               \
                     "ldr %[a0], [%[w]], #4\n\t"                                                                        \
                     "ldr %[a1], [%[xb]], #4\n\t"                                                                       \
                     "sxtb16 %[a2], %[a0]\n\t"                                                                          \
                     "sxtb16 %[a3], %[a1]\n\t"                                                                          \
                     "sxtb16 %[b0], %[a0], ror #8\n\t"                                                                  \
                     "sxtb16 %[b1], %[a1], ror #8\n\t"                                                                  \
                     "strd %[a2], %[a3], [%[wa]], #8\n\t"                                                               \
                     "strd %[b0], %[b1], [%[wa]], #8\n\t"                                                               \
                     "cmp %[wb], #0\n\t"                                                                                \
                     "bne 5b\n\t"                                                                                       \
                     "b 8b\n\t"                                                                                         \
                     "9:\n\t"                                                                                           \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [b0] "=&r"(b0),                 \
                       [b1] "=&r"(b1), [b2] "=&r"(b2), [b3] "=&r"(b3), [x] "=&r"(x), [w] "=&r"(w), [xa] "=&r"(xa),     \
                       [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb), [q] "=m"(q), [o0] "+m"(o0), [ws] "=m"(wsave),   \
                       [entry] "=m"(entry), [t] "+m"(t)                                                                \
                     : [x0] "m"(x0), [end] "m"(end), [qend] "m"(qend), [delta] "m"(delta), [skip] "m"(skip),           \
                       [w0] "m"(w0), [q0] "m"(q0), [groups] "m"(groups), [oend] "m"(oend)                              \
                     : "cc", "memory");                                                                                \
}
#define EDGEC_B4_SAVE_W "str %[w], %[ws]\n\t"
#define EDGEC_B4_RESTORE_W "ldr %[w], %[ws]\n\t"
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm, 1, EDGEC_B4_ENTRY, EDGEC_B4_DUFF, EDGEC_B24_RQ_ALL, "", "")
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm64, 1, EDGEC_B4_ENTRY, EDGEC_B4_DUFF_ONCE, EDGEC_B24_RQ_ALL, "", "")
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm64_exact, 0, "", EDGEC_B4_STRAIGHT64, EDGEC_B24_RQ_ALL, "", "")
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm16, 0, "", EDGEC_B4_TAIL16, EDGEC_B24_RQ_ALL, "", "")
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm8, 0, "", EDGEC_B4_TAIL8, EDGEC_B24_RQ_ALL, "", "")
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm_anyneg, 1, EDGEC_B4_ENTRY, EDGEC_B4_DUFF, EDGEC_B24_RQ_ANY, EDGEC_B4_SAVE_W,
                    EDGEC_B4_RESTORE_W)
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm16_anyneg, 0, "", EDGEC_B4_TAIL16, EDGEC_B24_RQ_ANY, EDGEC_B4_SAVE_W,
                    EDGEC_B4_RESTORE_W)
EDGEC_B4_ASM_PAIRS(edgec_blocked4_asm8_anyneg, 0, "", EDGEC_B4_TAIL8, EDGEC_B24_RQ_ANY, EDGEC_B4_SAVE_W,
                    EDGEC_B4_RESTORE_W)
typedef void (*edgec_b4_pairs_fn)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, int32_t,
                                  const int8_t *, int32_t, int8_t *, int32_t, int32_t);
static edgec_b4_pairs_fn edgec_blocked4_pairs(int32_t k8, int negs)
{
    if (k8 == 8) return negs ? edgec_blocked4_asm8 : edgec_blocked4_asm8_anyneg;
    if (k8 == 16) return negs ? edgec_blocked4_asm16 : edgec_blocked4_asm16_anyneg;
    if (k8 == 64 && negs) return edgec_blocked4_asm64_exact;
    if (k8 <= 64 && negs) return edgec_blocked4_asm64;
    return negs ? edgec_blocked4_asm : edgec_blocked4_asm_anyneg;
}
/* A lone last pixel of a full-range layer (its columns: a pair's, pixel 1's words a copy of pixel 0's), 1 pixel x 4
 * channels: the biases, then 4 k-steps a pass (the pixel's two words of a pair of k-steps by two LDR in a row, each
 * k-step's 4 weight words by one LDM, 4 SMLAD: 21 cycles for 16 MACs in the M4 timing, where LDR + 2 LDRD a k-step
 * took 24), then the requantization in C. The LDM's registers are named (r8, r10, r11, r12: a register list is in
 * ascending order, the weights' words 0..3 of a k-step are channels 0..3). n: column words, a multiple of 8. */
static EDGEC_HOT void edgec_blocked4_lone(const edgec_w32 *x0, int32_t n, const edgec_w32 *w, const edgec_rq *q,
                                          int32_t blocks, int8_t *o)
{
#define EDGEC_B4_LONE_STEPS2                                                                       \
    "ldr %[xa], [%[x]], #8\n\t"                                                                    \
    "ldr %[xb], [%[x]], #8\n\t"                                                                    \
    "ldmia %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t"                                                \
    "smlad %[a0], %[xa], %[w0], %[a0]\n\t"                                                         \
    "smlad %[a1], %[xa], %[w1], %[a1]\n\t"                                                         \
    "smlad %[a2], %[xa], %[w2], %[a2]\n\t"                                                         \
    "smlad %[a3], %[xa], %[w3], %[a3]\n\t"                                                         \
    "ldmia %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t"                                                \
    "smlad %[a0], %[xb], %[w0], %[a0]\n\t"                                                         \
    "smlad %[a1], %[xb], %[w1], %[a1]\n\t"                                                         \
    "smlad %[a2], %[xb], %[w2], %[a2]\n\t"                                                         \
    "smlad %[a3], %[xb], %[w3], %[a3]\n\t"
/* the doubled sum t requantized with record r (EDGEC_PW_STORE's, any neg), saturated */
#define EDGEC_B4_LONE_RQ(t, r) EDGEC_SAT8((E_SMMLAR((t), (r).mult, (r).khi) + (((t) >> 31) & (r).neg)) >> (r).shift)
    for (; blocks > 0; --blocks, q += 4, o += 4) {
        const edgec_w32 *x = x0;
        int32_t a0, a1, a2, a3, k = n >> 3;
        uint32_t xa, xb;
        register uint32_t w0 __asm__("r8"), w1 __asm__("r10"), w2 __asm__("r11"), w3 __asm__("r12");
        __asm__ volatile("ldrd %[a0], %[a1], [%[w]], #8\n\t"
                         "ldrd %[a2], %[a3], [%[w]], #8\n"
                         "1:\n\t" EDGEC_B4_LONE_STEPS2 EDGEC_B4_LONE_STEPS2
                         "subs %[k], %[k], #1\n\t"
                         "bne 1b\n\t"
                         : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [x] "+r"(x), [w] "+r"(w),
                           [k] "+r"(k), [xa] "=&r"(xa), [xb] "=&r"(xb), [w0] "=&r"(w0), [w1] "=&r"(w1),
                           [w2] "=&r"(w2), [w3] "=&r"(w3)
                         :
                         : "cc", "memory");
        o[0] = (int8_t)EDGEC_B4_LONE_RQ(a0, q[0]);
        o[1] = (int8_t)EDGEC_B4_LONE_RQ(a1, q[1]);
        o[2] = (int8_t)EDGEC_B4_LONE_RQ(a2, q[2]);
        o[3] = (int8_t)EDGEC_B4_LONE_RQ(a3, q[3]);
    }
#undef EDGEC_B4_LONE_STEPS2
#undef EDGEC_B4_LONE_RQ
}
#define EDGEC_B4_PAIRS 1 /* edgec_b4_run runs full-range layers on them */
#else
EDGEC_PW_PIXELS(edgec_blocked4_pixels_full, EDGEC_SAT8(v_), EDGEC_PW_FIX_ALL)
EDGEC_PW_PIXELS(edgec_blocked4_pixels_full_anyneg, EDGEC_SAT8(v_), EDGEC_PW_FIX_ANY)
static edgec_b24_pixels_fn edgec_blocked4_full(int32_t k8, int negs)
{
    (void)k8;
    return negs ? edgec_blocked4_pixels_full : edgec_blocked4_pixels_full_anyneg;
}
#endif

/* The loop a call runs on, named by the entry the generated code calls (edgec/ops/conv/im2col.py blocked4_loop, from
 * the layer's k8, output range and requantization records, as edgec_blocked4_pairs chooses at run time): a
 * full-range layer's block of assembly by k8 (8, 16, up to 64, any) and whether every record's neg is -1 (else
 * `_anyneg`), or the C pixels of a clamped range; on a build without the assembly (clang, no DSP) the C pixels of
 * the same range and records. A constant where edgec_b4_run is inlined, so a firmware links only the loops its
 * layers name (--gc-sections drops the others: up to 8 kB of flash); EDGEC_B4_CHOOSE: chosen at run time (the
 * entries that take any params, every loop linked). */
enum {
    EDGEC_B4_CHOOSE,
    EDGEC_B4_K8,
    EDGEC_B4_K8_ANYNEG,
    EDGEC_B4_K16,
    EDGEC_B4_K16_ANYNEG,
    EDGEC_B4_K64,
    EDGEC_B4_K64_EXACT,
    EDGEC_B4_KX,
    EDGEC_B4_KX_ANYNEG,
    EDGEC_B4_CLAMPED
};
#ifdef EDGEC_B4_PAIRS
EDGEC_INLINE edgec_b4_pairs_fn edgec_b4_loop_pairs(int loop)
{
    switch (loop) {
    case EDGEC_B4_K8: return edgec_blocked4_asm8;
    case EDGEC_B4_K8_ANYNEG: return edgec_blocked4_asm8_anyneg;
    case EDGEC_B4_K16: return edgec_blocked4_asm16;
    case EDGEC_B4_K16_ANYNEG: return edgec_blocked4_asm16_anyneg;
    case EDGEC_B4_K64: return edgec_blocked4_asm64;
    case EDGEC_B4_K64_EXACT: return edgec_blocked4_asm64_exact;
    case EDGEC_B4_KX: return edgec_blocked4_asm;
    case EDGEC_B4_KX_ANYNEG: return edgec_blocked4_asm_anyneg;
    default: return 0;
    }
}
#else
EDGEC_INLINE edgec_b24_pixels_fn edgec_b4_loop_pixels(int loop)
{
    switch (loop) {
    case EDGEC_B4_CLAMPED: return edgec_blocked4_pixels_clamped;
    case EDGEC_B4_K8_ANYNEG:
    case EDGEC_B4_K16_ANYNEG:
    case EDGEC_B4_KX_ANYNEG: return edgec_blocked4_pixels_full_anyneg;
    default: return edgec_blocked4_pixels_full;
    }
}
#endif

/* One group of 4 input values as the column words of pixel j: (x0, x2) at c[0], (x1, x3) at c[2]. */
EDGEC_INLINE void edgec_b4_column(uint32_t v, edgec_w32 *c)
{
#ifdef EDGEC_DSP
    c[0] = E_SXTB16(v);
    c[2] = E_SXTB16_ROR8(v);
#else
    edgec_h16 *d0 = (edgec_h16 *)(void *)c, *d2 = (edgec_h16 *)(void *)(c + 2);
    d0[0] = (int16_t)(int8_t)(uint8_t)(v & 0xffu);
    d0[1] = (int16_t)(int8_t)(uint8_t)((v >> 16) & 0xffu);
    d2[0] = (int16_t)(int8_t)(uint8_t)((v >> 8) & 0xffu);
    d2[1] = (int16_t)(int8_t)(uint8_t)(v >> 24);
#endif
}

/* The columns of two pixels from their `groups` input words each (t0, t1): per group (x0, x2) of both, then (x1, x3)
 * of both; on the Arm build 2 LDR, 4 SXTB16 and 2 STRD a group (gcc's C took 13 instructions). */
static void edgec_b4_columns2(const edgec_w32 *t0, const edgec_w32 *t1, edgec_w32 *c, int32_t groups)
{
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* as the other blocks of assembly: gcc measured */
    uint32_t v0, v1, c0, c1, c2, c3;
    if (groups <= 0) return;
    __asm__ volatile("1:\n\t"
                     "ldr %[v0], [%[t0]], #4\n\t"
                     "ldr %[v1], [%[t1]], #4\n\t"
                     "sxtb16 %[c0], %[v0]\n\t"
                     "sxtb16 %[c1], %[v1]\n\t"
                     "sxtb16 %[c2], %[v0], ror #8\n\t"
                     "sxtb16 %[c3], %[v1], ror #8\n\t"
                     "strd %[c0], %[c1], [%[c]], #8\n\t"
                     "strd %[c2], %[c3], [%[c]], #8\n\t"
                     "subs %[g], %[g], #1\n\t"
                     "bne 1b\n\t"
                     : [t0] "+r"(t0), [t1] "+r"(t1), [c] "+r"(c), [g] "+r"(groups), [v0] "=&r"(v0), [v1] "=&r"(v1),
                       [c0] "=&r"(c0), [c1] "=&r"(c1), [c2] "=&r"(c2), [c3] "=&r"(c3)
                     :
                     : "cc", "memory");
#else
    for (; groups > 0; --groups, c += 4) {
        const uint32_t v0 = *t0++, v1 = *t1++;
        edgec_b4_column(v0, c);
        edgec_b4_column(v1, c + 1);
    }
#endif
}

/* The column words of a single-channel window whose kernel rows are whole groups (k_w4 taps, a multiple of 4) at s,
 * rows `step` bytes apart, read 4 taps a word (the taps in weight order [ky][kx]: no copy through the im2col row). */
EDGEC_INLINE void edgec_b4_window(const int8_t *s, int32_t step, int32_t k_h, int32_t k_w4, edgec_w32 *c)
{
    int32_t ky, kx;
    for (ky = k_h; ky > 0; --ky, s += step) {
        for (kx = 0; kx < k_w4; kx += 4, c += 4) {
            uint32_t v;
            memcpy(&v, s + kx, 4); /* one LDR where unaligned words are allowed */
            edgec_b4_column(v, c);
        }
    }
}

/* The column words of pixel (oy, ox) of a single-channel convolution whose kernel rows are whole groups (k_w a
 * multiple of 4), read straight from the input rows where its window lies inside the image; 0 elsewhere
 * (edgec_conv_taps pads it). Inlined: the copy of each entry that calls it is the one the kernel had when a single
 * entry did (gcc inlines a static function called once, not one called from the eight loops' entries). */
EDGEC_INLINE int edgec_b4_direct(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t oy, int32_t ox,
                                 edgec_w32 *c)
{
    const int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left, k_w = p->k_w;
    if (iy0 < 0 || iy0 + p->k_h > p->in_h || ix0 < 0 || ix0 + k_w > p->in_w) return 0;
    edgec_b4_window(input + iy0 * p->in_w + ix0, p->in_w, p->k_h, k_w, c);
    return 1;
}

/* The padded variant (edgec_conv2d_blocked4_padded_s8): a band of the single-channel input padded with its zero point,
 * EDGEC_B4_BAND_W(p) bytes a row (k_w rounded up to 4 in place of k_w: the weights of the extra taps are zero), rows
 * b->first .. b->first + b->rows - 1 of the padded image (row 0: pad_top rows above the input), up to k_h + stride_h
 * rows (the windows of a pair of pixels, the second one on the next output row where out_w is odd). Every window is read in place. */
#define EDGEC_B4_KW4(p) (((p)->k_w + 3) & ~3)
#define EDGEC_B4_BAND_W(p) (((p)->out_w - 1) * (p)->stride_w + EDGEC_B4_KW4(p))
typedef struct {
    int8_t *rows;
    int32_t first, count;
} edgec_b4_band;

/* The band from padded row `first` on, at least `need` rows: kept rows move up, the others are built. */
static EDGEC_NOINLINE void edgec_b4_band_at(const edgec_conv2d_im2col_params *p, const int8_t *input, edgec_b4_band *b,
                             int32_t first, int32_t need)
{
    const int32_t w = EDGEC_B4_BAND_W(p), pl = p->pad_left, in_w = p->in_w;
    const int32_t used = in_w < w - pl ? in_w : w - pl; /* input columns any window reads */
    const int8_t zp = (int8_t)p->input_zp;
    int32_t keep = b->first + b->count - first, r;
    if (first != b->first) {
        if (keep > 0 && first > b->first) {
            edgec_copy(b->rows, b->rows + (first - b->first) * w, keep * w);
        } else {
            keep = 0;
        }
        b->first = first;
        b->count = keep;
    }
    for (r = first + b->count; r < first + need; ++r) {
        int8_t *d = b->rows + (r - first) * w;
        const int32_t iy = r - p->pad_top;
        if (iy < 0 || iy >= p->in_h || used <= 0) {
            edgec_fill(d, zp, w);
            continue;
        }
        edgec_fill(d, zp, pl);
        edgec_copy(d + pl, input + iy * in_w, used);
        edgec_fill(d + pl + used, zp, w - pl - used);
    }
    if (need > b->count) b->count = need;
}

/* The columns of two pixels from `rows` kernel rows of k_w4 taps each, at s0 and s1, rows `skip` bytes apart after
 * each row's taps (the band's rows, or the input's where both windows' columns lie inside the image): per group of
 * 4 taps (x0, x2) of both, then (x1, x3) of both. On the Arm build one block of assembly, 10 instructions a group and
 * 2 a kernel row (gcc's C of edgec_b4_window took 21 a group). */
EDGEC_INLINE void edgec_b4_pair_rows(const int8_t *s0, const int8_t *s1, int32_t skip, int32_t rows, int32_t k_w4,
                                     edgec_w32 *c)
{
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* as the other blocks of assembly: gcc measured */
    const int32_t groups = k_w4 >> 2;
    int32_t g;
    uint32_t v0, v1, c0, c1;
    __asm__ volatile("1:\n\t"
                     "mov %[g], %[groups]\n"
                     "2:\n\t"
                     "ldr %[v0], [%[s0]], #4\n\t"
                     "ldr %[v1], [%[s1]], #4\n\t"
                     "sxtb16 %[c0], %[v0]\n\t"
                     "sxtb16 %[c1], %[v1]\n\t"
                     "sxtb16 %[v0], %[v0], ror #8\n\t"
                     "sxtb16 %[v1], %[v1], ror #8\n\t"
                     "strd %[c0], %[c1], [%[c]], #8\n\t"
                     "strd %[v0], %[v1], [%[c]], #8\n\t"
                     "subs %[g], %[g], #1\n\t"
                     "bne 2b\n\t"
                     "add %[s0], %[s0], %[skip]\n\t"
                     "add %[s1], %[s1], %[skip]\n\t"
                     "subs %[rows], %[rows], #1\n\t"
                     "bne 1b\n\t"
                     : [s0] "+r"(s0), [s1] "+r"(s1), [c] "+r"(c), [rows] "+r"(rows), [g] "=&r"(g), [v0] "=&r"(v0),
                       [v1] "=&r"(v1), [c0] "=&r"(c0), [c1] "=&r"(c1)
                     : [groups] "r"(groups), [skip] "r"(skip)
                     : "cc", "memory");
#else
    edgec_b4_window(s0, k_w4 + skip, rows, k_w4, c);
    edgec_b4_window(s1, k_w4 + skip, rows, k_w4, c + 1);
#endif
}

/* The columns of pixels q0 and q1 from their windows in the band (their padded rows there: edgec_b4_band_at). */
EDGEC_INLINE void edgec_b4_band_windows(const edgec_conv2d_im2col_params *p, const edgec_b4_band *b, int32_t q0,
                                        int32_t q1, edgec_w32 *c)
{
    const int32_t out_w = p->out_w, w = EDGEC_B4_BAND_W(p), k_w4 = EDGEC_B4_KW4(p);
    const int8_t *s0 = b->rows + ((q0 / out_w) * p->stride_h - b->first) * w + (q0 % out_w) * p->stride_w;
    const int8_t *s1 = b->rows + ((q1 / out_w) * p->stride_h - b->first) * w + (q1 % out_w) * p->stride_w;
    edgec_b4_pair_rows(s0, s1, w - k_w4, p->k_h, k_w4, c);
}

/* The padded variant without its band (band_w 0: the plan's ask where the band would raise the arena above the
 * tensors' peak; the scratch is the columns alone). `n` column groups of both pixels whose kernel rows lie on the
 * padding: the zero point's column words. */
static void edgec_b4_zp_groups(const edgec_conv2d_im2col_params *p, edgec_w32 *c, int32_t n)
{
    edgec_w32 z[4];
    edgec_b4_column((uint8_t)p->input_zp * 0x01010101u, z);
    for (; n > 0; --n, c += 4) {
        c[0] = c[1] = z[0];
        c[2] = c[3] = z[2];
    }
}

/* One pixel's columns (every other word from c, as edgec_b4_window writes them) of a window at input row iy0,
 * column ix0 that reaches the padding: the taps outside the image are the zero point. A group of 4 taps at a time
 * down the window's rows (rows on the padding: the zero point's words): a group inside the image is one word of
 * each row, one across the image's left or right edge the row's first or last word shifted into place over the
 * zero point's bytes (rows under 4 bytes: byte by byte). */
static EDGEC_NOINLINE void edgec_b4_edge_window(const edgec_conv2d_im2col_params *p, const int8_t *input,
                                                int32_t iy0, int32_t ix0, edgec_w32 *c)
{
    const int32_t in_w = p->in_w, k_h = p->k_h, k_w4 = EDGEC_B4_KW4(p), step = k_w4;
    const int32_t top = iy0 < 0 ? -iy0 : 0, end = p->in_h - iy0 < k_h ? p->in_h - iy0 : k_h;
    const uint32_t zw = (uint8_t)p->input_zp * 0x01010101u;
    edgec_w32 z[4];
    int32_t x, ky, j;
    edgec_b4_column(zw, z);
    for (x = ix0; x < ix0 + k_w4; x += 4, c += 4) {
        edgec_w32 *d = c;
        for (ky = 0; ky < top && ky < k_h; ++ky, d += step) {
            d[0] = z[0];
            d[2] = z[2];
        }
        if (top < end) {
            const int8_t *r = input + (iy0 + top) * in_w;
            if (x + 4 <= 0 || x >= in_w) { /* every tap on the padding */
                for (; ky < end; ++ky, d += step) {
                    d[0] = z[0];
                    d[2] = z[2];
                }
            } else if (x >= 0 && x + 4 <= in_w) { /* inside: a word of each row */
                for (r += x; ky < end; ++ky, d += step, r += in_w) {
                    uint32_t w;
                    memcpy(&w, r, 4);
                    edgec_b4_column(w, d);
                }
            } else if (in_w >= 4) { /* across an edge: the row's first or last word shifted */
                const int32_t ls = x < 0 ? -8 * x : 0, rs = x < 0 ? 0 : 8 * (x + 4 - in_w);
                const uint32_t m = (0xffffffffu >> rs) << ls, zm = zw & ~m;
                for (r += x < 0 ? 0 : in_w - 4; ky < end; ++ky, d += step, r += in_w) {
                    uint32_t w;
                    memcpy(&w, r, 4);
                    edgec_b4_column((((w >> rs) << ls) & m) | zm, d);
                }
            } else {
                for (; ky < end; ++ky, d += step, r += in_w) {
                    uint32_t v = zw;
                    for (j = 0; j < 4; ++j) {
                        if (x + j >= 0 && x + j < in_w) {
                            v = (v & ~(0xffu << (8 * j))) | ((uint32_t)(uint8_t)r[x + j] << (8 * j));
                        }
                    }
                    edgec_b4_column(v, d);
                }
            }
        }
        for (; ky < k_h; ++ky, d += step) {
            d[0] = z[0];
            d[2] = z[2];
        }
    }
}

/* The columns of pixels q0 and q1 without the band: both windows' kernel rows inside the image read in place from
 * the input rows (the band's assembly) where both windows' columns lie inside it (and the pixels share an output
 * row or their windows lie inside it), rows on the padding the zero point's words; other windows built word by
 * word (edgec_b4_edge_window). Inlined, as edgec_b4_direct (out of line: micro_speech +778 instructions, +24 B of
 * stack). */
EDGEC_INLINE void edgec_b4_inplace(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t q0, int32_t q1,
                                   edgec_w32 *c)
{
    const int32_t out_w = p->out_w, in_w = p->in_w, in_h = p->in_h, k_h = p->k_h, k_w4 = EDGEC_B4_KW4(p);
    const int32_t y0 = (q0 / out_w) * p->stride_h - p->pad_top, x0 = (q0 % out_w) * p->stride_w - p->pad_left;
    const int32_t y1 = (q1 / out_w) * p->stride_h - p->pad_top, x1 = (q1 % out_w) * p->stride_w - p->pad_left;
    const int32_t top = y0 < 0 ? -y0 : 0, end = in_h - y0 < k_h ? in_h - y0 : k_h, groups = k_w4 >> 2;
    const int columns = x0 >= 0 && x0 + k_w4 <= in_w && x1 >= 0 && x1 + k_w4 <= in_w;
    const int rows = y1 == y0 ? top < end : y0 >= 0 && y1 >= 0 && y0 + k_h <= in_h && y1 + k_h <= in_h;
    if (columns && rows) {
        edgec_b4_zp_groups(p, c, top * groups);
        edgec_b4_pair_rows(input + (y0 + top) * in_w + x0, input + (y1 + top) * in_w + x1, in_w - k_w4, end - top,
                           k_w4, c + 4 * top * groups);
        edgec_b4_zp_groups(p, c + 4 * end * groups, (k_h - end) * groups);
        return;
    }
    edgec_b4_edge_window(p, input, y0, x0, c);
    edgec_b4_edge_window(p, input, y1, x1, c + 1);
}

/* The padded last block of a pixel pair (the out_c % 4 channels after the whole blocks; pixel 0's outputs at o0, pixel
 * 1's at o1) through a buffer, as edgec_b4_run does it inline: the copies of the last channel are not stored. Out of
 * line for the padded variant without its band (micro_speech's first layer: its buffer, the records' and weights'
 * pointers and its 10-argument call made that loop's frame 32 B larger, on the deepest path of the model's stack). */
#ifndef EDGEC_B4_PAIRS
typedef void (*edgec_b4_pairs_fn)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, int32_t,
                                  const int8_t *, int32_t, int8_t *, int32_t, int32_t);
#endif
static EDGEC_NOINLINE void edgec_b4_rest(const edgec_conv2d_im2col_params *p, const edgec_w32 *cols, int32_t k8,
                                         const uint32_t *weights, const edgec_rq *rq, edgec_b4_pairs_fn pairs,
                                         edgec_b24_pixels_fn pixels, int8_t *o0, int8_t *o1)
{
    const int32_t blocks = p->out_c >> 2, rest = p->out_c & 3;
    const edgec_w32 *const wrest = (const edgec_w32 *)weights + blocks * (4 + 2 * k8);
    int8_t t[8];
    int32_t i;
    if (pairs) {
        pairs(cols, k8, wrest, rq + 4 * blocks, 1, 0, 0, t, 4, 1);
    } else {
        pixels(cols, k8, wrest, rq + 4 * blocks, 1, t, t + 4, p->act_min, p->act_max);
    }
    for (i = 0; i < rest; ++i) {
        o0[4 * blocks + i] = t[i];
        o1[4 * blocks + i] = t[4 + i];
    }
}

/* The kernel's loop over pairs of output pixels; `direct` (a constant where it is inlined: the copies compile
 * apart, and the loop without it is the one the kernel had before the direct reads) 1: reads single-channel windows
 * inside the image from the input rows (edgec_b4_direct); 2: every window from the padded band (the padded variant,
 * `band`, its rows after the columns in scratch; 0 for the others); 3: the padded variant without its band
 * (edgec_b4_inplace). On the Arm build a full-range layer runs on the assembly
 * (edgec_blocked4_pairs): a 1x1 convolution's whole pairs in one call that widens their columns itself (out_c a
 * multiple of 4), the other pairs one a call on the columns written here. `loop`: the loop the entry names (a
 * constant: EDGEC_B4_K8 ... EDGEC_B4_CLAMPED), or EDGEC_B4_CHOOSE. */
EDGEC_INLINE void edgec_b4_run(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                               const edgec_rq *rq, int8_t *scratch, int8_t *output, const int direct,
                               edgec_b4_band *band, const int loop)
{
    const int32_t out_c = p->out_c, out_w = p->out_w, n = p->out_h * out_w, groups = p->k4 >> 2;
    const int32_t k8 = (p->k4 + 7) & ~7;
    const int full = p->act_min == -128 && p->act_max == 127;
    int negs = 1;
    /* (single-channel inputs, direct 1-3, are neither: the constant drops both paths from those copies) */
    const int pointwise = !direct && p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (p->in_c & 3) == 0 && p->in_w == out_w;
    const int gather = !direct && !pointwise && p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
                       (p->in_c & 3) == 0 && p->in_c == p->k4 && (p->out_h - 1) * p->stride_h < p->in_h &&
                       (out_w - 1) * p->stride_w < p->in_w; /* every pixel inside the image */
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 4 * k8;
    const int32_t blocks = out_c >> 2, rest = out_c & 3;
    const edgec_w32 *const wrest = (const edgec_w32 *)weights + blocks * (4 + 2 * k8);
    int32_t pix = 0, j, g, i;
#ifdef EDGEC_B4_PAIRS
    edgec_b4_pairs_fn pairs;
#endif
    edgec_b24_pixels_fn pixels;
    if (loop == EDGEC_B4_CHOOSE) {
        for (j = 0; j < out_c && negs; ++j) negs = rq[j].neg == -1; /* stops at the first 0 */
#ifdef EDGEC_B4_PAIRS
        pairs = full ? edgec_blocked4_pairs(k8, negs) : 0;
        pixels = edgec_blocked4_pixels_clamped;
#else
        pixels = full ? edgec_blocked4_full(k8, negs) : edgec_blocked4_pixels_clamped;
#endif
    } else {
#ifdef EDGEC_B4_PAIRS
        pairs = edgec_b4_loop_pairs(loop);
        pixels = edgec_blocked4_pixels_clamped;
        /* (the loop without the band hid `pairs` from the compiler here until its padded last block went out of
         * line, edgec_b4_rest: gcc allocated the loop's registers worse with it a constant then; now micro_speech
         * runs 1,000 instructions fewer with it a constant, and the clamped C pixels are not linked beside it) */
#else
        pixels = edgec_b4_loop_pixels(loop);
#endif
    }
    for (g = 4 * groups; g < k8; ++g) cols[g] = 0; /* a padding group's columns: zero weights, zero values */
#ifdef EDGEC_B4_PAIRS
    if (pairs && pointwise && !rest && n > 1) {
        pairs(cols, k8, (const edgec_w32 *)weights, rq, blocks, input, groups, output, out_c, n >> 1);
        pix = n & ~1; /* a lone last pixel: below */
    }
#endif
    for (; pix < n; pix += 2) {
        const int two = n - pix > 1;
        if (pointwise) { /* both pixels' groups in one loop (a lone last pixel fills both columns) */
            const edgec_w32 *t0 = (const edgec_w32 *)(const void *)(input + pix * p->in_c);
            const edgec_w32 *t1 = (const edgec_w32 *)(const void *)(input + (pix + two) * p->in_c);
            edgec_b4_columns2(t0, t1, cols, groups);
        } else if (gather) { /* a strided 1x1 convolution: the two input pixels' words where they are */
            const int32_t q1 = pix + two;
            const edgec_w32 *t0 = (const edgec_w32 *)(const void *)(
                input + ((pix / out_w) * p->stride_h * p->in_w + (pix % out_w) * p->stride_w) * p->in_c);
            const edgec_w32 *t1 = (const edgec_w32 *)(const void *)(
                input + ((q1 / out_w) * p->stride_h * p->in_w + (q1 % out_w) * p->stride_w) * p->in_c);
            edgec_b4_columns2(t0, t1, cols, groups);
        }
        if (direct == 3) { /* no band: windows in place, those on the padding built */
            edgec_b4_inplace(p, input, pix, pix + two, cols);
        } else if (direct == 2) { /* the rows of both windows in the band, then each window in place */
            const int32_t q1 = pix + two, oy0 = pix / out_w;
            const int32_t first = oy0 * p->stride_h, need = (q1 / out_w - oy0) * p->stride_h + p->k_h;
            if (first != band->first || need > band->count) edgec_b4_band_at(p, input, band, first, need);
            edgec_b4_band_windows(p, band, pix, q1, cols);
        }
        for (j = 0; j < 2 && !pointwise && !gather && direct < 2; ++j) { /* a lone last pixel fills both columns */
            const int32_t q = pix + (two ? j : 0);
            const edgec_w32 *t;
            edgec_w32 *c = cols + j;
            if (direct && edgec_b4_direct(p, input, q / out_w, q % out_w, c)) continue;
            t = (const edgec_w32 *)(const void *)edgec_conv_taps(p, input, q / out_w, q % out_w, row);
            for (g = groups; g > 0; --g, c += 4) edgec_b4_column(*t++, c);
        }
        if (rest && direct == 3) { /* (out of line: its buffer and values are not on the loop's frame) */
#ifdef EDGEC_B4_PAIRS
            edgec_b4_rest(p, cols, k8, weights, rq, pairs, pairs ? 0 : pixels, output + pix * out_c,
                          output + (pix + two) * out_c); /* (no C pixels linked beside the assembly) */
#else
            edgec_b4_rest(p, cols, k8, weights, rq, 0, pixels, output + pix * out_c, output + (pix + two) * out_c);
#endif
        } else if (rest) { /* the padded last block through a buffer: the copies of the last channel are not stored */
            int8_t t[8];
#ifdef EDGEC_B4_PAIRS
            if (pairs) {
                pairs(cols, k8, wrest, rq + 4 * blocks, 1, 0, 0, t, 4, 1);
            } else
#endif
                pixels(cols, k8, wrest, rq + 4 * blocks, 1, t, t + 4, p->act_min, p->act_max);
            for (i = 0; i < rest; ++i) {
                output[pix * out_c + 4 * blocks + i] = t[i];
                output[(pix + two) * out_c + 4 * blocks + i] = t[4 + i];
            }
        }
#ifdef EDGEC_B4_PAIRS
        if (pairs && !two) {
            edgec_blocked4_lone(cols, k8, (const edgec_w32 *)weights, rq, blocks, output + pix * out_c);
            continue;
        }
        if (pairs) {
            pairs(cols, k8, (const edgec_w32 *)weights, rq, blocks, 0, 0, output + pix * out_c, out_c, 1);
            continue;
        }
#endif
        pixels(cols, k8, (const edgec_w32 *)weights, rq, blocks, output + pix * out_c, output + (pix + two) * out_c,
               p->act_min, p->act_max);
    }
}

void edgec_conv2d_blocked4_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                               const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    if (p->in_c == 1 && (p->k_w & 3) == 0) {
        edgec_b4_run(p, input, weights, rq, scratch, output, 1, 0, EDGEC_B4_CHOOSE);
    } else {
        edgec_b4_run(p, input, weights, rq, scratch, output, 0, 0, EDGEC_B4_CHOOSE);
    }
}

/* The padded variant's loops, with its band and without (band_w 0), each an entry point of its own: the generated
 * code calls the one its params need (edgec/ops/conv/im2col.py `blocked4_padded_entry`), so a firmware links only
 * that loop (--gc-sections drops the other: 2.5 kB of flash), and the stack of either is the one the kernel had
 * with the band's alone. */
void edgec_conv2d_blocked4_banded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                     const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_b4_band band;
    band.rows = scratch + 4 * ((p->k4 + 7) & ~7); /* after the columns */
    band.first = -1;                              /* empty */
    band.count = 0;
    edgec_b4_run(p, input, weights, rq, scratch, output, 2, &band, EDGEC_B4_CHOOSE);
}

void edgec_conv2d_blocked4_unbanded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input,
                                       const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_b4_run(p, input, weights, rq, scratch, output, 3, 0, EDGEC_B4_CHOOSE);
}

/* The padded variant: single-channel inputs of any kernel width (the band, or none with band_w 0; edgec_nn.h); a
 * caller that knows band_w calls the loop it needs directly (above). */
void edgec_conv2d_blocked4_padded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                     const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    if (p->band_w) {
        edgec_conv2d_blocked4_banded_s8(p, input, weights, rq, scratch, output);
    } else {
        edgec_conv2d_blocked4_unbanded_s8(p, input, weights, rq, scratch, output);
    }
}

/* The entries the generated code calls: one a mode (the plain kernel, its direct single-channel reads, the padded
 * variant with its band and without) and a loop (the enum above), decided when the model is built from the layer's
 * params and records (edgec/ops/conv/im2col.py blocked4_entry), so a firmware links only the loops it runs. The mode
 * and the loop as the entries above that choose them at run time would (the same numbers). */
#define EDGEC_B4_ARGS                                                                                                  \
    const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq,           \
        int8_t *scratch, int8_t *output
#define EDGEC_B4_PLAIN(loop) edgec_b4_run(p, input, weights, rq, scratch, output, 0, 0, loop)
#define EDGEC_B4_DIRECT(loop) edgec_b4_run(p, input, weights, rq, scratch, output, 1, 0, loop)
#define EDGEC_B4_BANDED(loop)                                                                                          \
    edgec_b4_band band;                                                                                                \
    band.rows = scratch + 4 * ((p->k4 + 7) & ~7);                                                                      \
    band.first = -1;                                                                                                   \
    band.count = 0;                                                                                                    \
    edgec_b4_run(p, input, weights, rq, scratch, output, 2, &band, loop)
#define EDGEC_B4_UNBANDED(loop) edgec_b4_run(p, input, weights, rq, scratch, output, 3, 0, loop)
void edgec_conv2d_blocked4_k8_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K8); }
void edgec_conv2d_blocked4_k8_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K8_ANYNEG); }
void edgec_conv2d_blocked4_k16_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K16); }
void edgec_conv2d_blocked4_k16_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K16_ANYNEG); }
void edgec_conv2d_blocked4_k64_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K64); }
void edgec_conv2d_blocked4_k64_exact_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_K64_EXACT); }
void edgec_conv2d_blocked4_kx_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_KX); }
void edgec_conv2d_blocked4_kx_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_KX_ANYNEG); }
void edgec_conv2d_blocked4_clamped_s8(EDGEC_B4_ARGS) { EDGEC_B4_PLAIN(EDGEC_B4_CLAMPED); }
void edgec_conv2d_blocked4_direct_k8_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K8); }
void edgec_conv2d_blocked4_direct_k8_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K8_ANYNEG); }
void edgec_conv2d_blocked4_direct_k16_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K16); }
void edgec_conv2d_blocked4_direct_k16_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K16_ANYNEG); }
void edgec_conv2d_blocked4_direct_k64_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K64); }
void edgec_conv2d_blocked4_direct_k64_exact_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_K64_EXACT); }
void edgec_conv2d_blocked4_direct_kx_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_KX); }
void edgec_conv2d_blocked4_direct_kx_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_KX_ANYNEG); }
void edgec_conv2d_blocked4_direct_clamped_s8(EDGEC_B4_ARGS) { EDGEC_B4_DIRECT(EDGEC_B4_CLAMPED); }
void edgec_conv2d_blocked4_banded_k8_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K8); }
void edgec_conv2d_blocked4_banded_k8_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K8_ANYNEG); }
void edgec_conv2d_blocked4_banded_k16_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K16); }
void edgec_conv2d_blocked4_banded_k16_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K16_ANYNEG); }
void edgec_conv2d_blocked4_banded_k64_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K64); }
void edgec_conv2d_blocked4_banded_k64_exact_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_K64_EXACT); }
void edgec_conv2d_blocked4_banded_kx_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_KX); }
void edgec_conv2d_blocked4_banded_kx_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_KX_ANYNEG); }
void edgec_conv2d_blocked4_banded_clamped_s8(EDGEC_B4_ARGS) { EDGEC_B4_BANDED(EDGEC_B4_CLAMPED); }
void edgec_conv2d_blocked4_unbanded_k8_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K8); }
void edgec_conv2d_blocked4_unbanded_k8_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K8_ANYNEG); }
void edgec_conv2d_blocked4_unbanded_k16_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K16); }
void edgec_conv2d_blocked4_unbanded_k16_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K16_ANYNEG); }
void edgec_conv2d_blocked4_unbanded_k64_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K64); }
void edgec_conv2d_blocked4_unbanded_k64_exact_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_K64_EXACT); }
void edgec_conv2d_blocked4_unbanded_kx_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_KX); }
void edgec_conv2d_blocked4_unbanded_kx_anyneg_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_KX_ANYNEG); }
void edgec_conv2d_blocked4_unbanded_clamped_s8(EDGEC_B4_ARGS) { EDGEC_B4_UNBANDED(EDGEC_B4_CLAMPED); }
