/* edgec fast INT8 kernels (see edgec_fast.h). C99; GCC/Clang attributes where available.
 * Right shifts of negative values are arithmetic (as on every compiler edgec supports: gcc, clang,
 * arm-none-eabi-gcc); signed accumulators never overflow (fastkernels.py checks the bound). */
#include "edgec_fast.h"

#include <stddef.h>
#include <string.h>

/* EDGEC_HOT: an inner loop already written in issue order; gcc's pre-allocation scheduler would hoist
 * loads and run out of registers (spills) */
#if defined(__GNUC__) && !defined(__clang__)
#define EDGEC_HOT __attribute__((noinline, optimize("no-schedule-insns")))
#elif defined(__GNUC__)
#define EDGEC_HOT __attribute__((noinline))
#else
#define EDGEC_HOT
#endif
#if defined(__GNUC__)
#define EDGEC_ALIAS __attribute__((may_alias))
#define EDGEC_INLINE static inline __attribute__((always_inline))
#define EDGEC_NOINLINE __attribute__((noinline)) /* its own register allocation, not the caller's */
#else
#define EDGEC_NOINLINE
#define EDGEC_ALIAS
#define EDGEC_INLINE static inline
#endif

typedef uint32_t EDGEC_ALIAS edgec_w32; /* a 4-byte aligned word of int8 or int16 data */
typedef uint64_t EDGEC_ALIAS edgec_d64; /* two such words (one LDRD) */
typedef int16_t EDGEC_ALIAS edgec_h16;

/* ---------------------------------------------------------------- the DSP intrinsics we use */
#if defined(__ARM_FEATURE_DSP) && !defined(EDGEC_NO_DSP) && !defined(EDGEC_EMULATE_DSP)
#include <arm_acle.h>
#define EDGEC_DSP 1
#define EDGEC_DSP_NATIVE 1
/* keeps gcc from hoisting the next block's loads above this one (it then runs out of registers) */
#define EDGEC_BARRIER() __asm__ volatile("" ::: "memory")
#define E_SXTB16(x) ((uint32_t)__sxtb16((int32_t)(x)))
#define E_SMLAD(a, b, acc) __smlad((int32_t)(a), (int32_t)(b), (acc))
#define E_SMLABB(a, b, acc) __smlabb((int32_t)(a), (int32_t)(b), (acc))
#define E_SMLABT(a, b, acc) __smlabt((int32_t)(a), (int32_t)(b), (acc))
/* (k * 2^32 + a * b + 2^31) >> 32 in one instruction (ACLE has no intrinsic for SMMLAR) */
EDGEC_INLINE int32_t E_SMMLAR(int32_t a, int32_t b, int32_t k)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(k));
    return r;
}
/* SXTB16 with its free rotation (gcc 12 does not fuse a rotate into __sxtb16 by itself) */
EDGEC_INLINE uint32_t E_SXTB16_ROR8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
/* Two words at p + off in one LDRD (gcc 12 splits 64-bit loads into two LDRs in these loops). */
#define E_LDRD(lo, hi, p, off)                                                                     \
    __asm__("ldrd %0, %1, [%2, %3]"                                                                \
            : "=r"(lo), "=r"(hi)                                                                   \
            : "r"(p), "i"(4 * (off)), "m"(*(const edgec_d64 *)(const void *)((p) + (off))))
#elif defined(EDGEC_EMULATE_DSP)
#define EDGEC_DSP 1
EDGEC_INLINE int32_t e_lo(uint32_t x) { return (int32_t)(int16_t)(uint16_t)(x & 0xffffu); }
EDGEC_INLINE int32_t e_hi(uint32_t x) { return (int32_t)(int16_t)(uint16_t)(x >> 16); }
EDGEC_INLINE uint32_t E_SXTB16(uint32_t x)
{
    return ((uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(x & 0xffu)) |
           ((uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)((x >> 16) & 0xffu) << 16);
}
EDGEC_INLINE uint32_t E_SXTB16_ROR8(uint32_t x) { return E_SXTB16((x >> 8) | (x << 24)); }
EDGEC_INLINE int32_t E_SMLAD(uint32_t a, uint32_t b, int32_t acc)
{
    return acc + e_lo(a) * e_lo(b) + e_hi(a) * e_hi(b);
}
EDGEC_INLINE int32_t E_SMLABB(uint32_t a, uint32_t b, int32_t acc) { return acc + e_lo(a) * e_lo(b); }
EDGEC_INLINE int32_t E_SMLABT(uint32_t a, uint32_t b, int32_t acc) { return acc + e_lo(a) * e_hi(b); }
#endif
#ifndef E_LDRD
#define E_LDRD(lo, hi, p, off) ((lo) = (p)[(off)], (hi) = (p)[(off) + 1])
#endif
#ifndef EDGEC_DSP_NATIVE
#define EDGEC_BARRIER() ((void)0)
EDGEC_INLINE int32_t E_SMMLAR(int32_t a, int32_t b, int32_t k)
{
    return (int32_t)(((int64_t)k * 4294967296LL + (int64_t)a * b + 2147483648LL) >> 32);
}
#endif

/* ---------------------------------------------------------------- requantization and copies */
/* The output zero point and the rounding are folded into khi (see edgec_rq); `neg` (0 or -1) is the
 * correction for negative accumulators. `full` says the activation range is all of int8 (then one
 * saturation does the clamp). */
EDGEC_INLINE int32_t edgec_rq_value(int32_t acc, int32_t mult, int32_t khi, int32_t neg, int32_t shift)
{
    const int32_t t = acc * 2; /* |acc| < 2^30 */
    return (E_SMMLAR(t, mult, khi) + ((t >> 31) & neg)) >> shift;
}

#ifdef EDGEC_DSP_NATIVE
#define EDGEC_SAT8(v) __ssat((v), 8)
#else
#define EDGEC_SAT8(v) ((v) < -128 ? -128 : ((v) > 127 ? 127 : (v)))
#endif

EDGEC_INLINE int8_t edgec_clamp(int32_t v, int full, int32_t lo, int32_t hi)
{
    if (full) return (int8_t)EDGEC_SAT8(v);
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

EDGEC_INLINE int8_t edgec_out(int32_t acc, const edgec_rq *q, int full, int32_t lo, int32_t hi)
{
    return edgec_clamp(edgec_rq_value(acc, q->mult, q->khi, q->neg, q->shift), full, lo, hi);
}

static void edgec_fill(int8_t *dst, int8_t value, int32_t n)
{
    if ((((uintptr_t)dst | (uint32_t)n) & 3u) == 0) {
        const uint32_t v = (uint32_t)(uint8_t)value * 0x01010101u;
        edgec_w32 *d = (edgec_w32 *)(void *)dst;
        for (n >>= 2; n > 0; --n) *d++ = v;
    } else {
        for (; n > 0; --n) *dst++ = value;
    }
}

/* Word copies where the core allows unaligned words (Armv7-M and later, x86); else aligned ones. */
#if defined(__ARM_FEATURE_UNALIGNED) || defined(__x86_64__) || defined(__i386__)
#define EDGEC_UNALIGNED_OK 1
#endif
static void edgec_copy(int8_t *dst, const int8_t *src, int32_t n)
{
#ifdef EDGEC_UNALIGNED_OK
    for (; n >= 4; n -= 4, dst += 4, src += 4) {
        uint32_t v;
        memcpy(&v, src, 4); /* one LDR / STR */
        memcpy(dst, &v, 4);
    }
#else
    if ((((uintptr_t)dst | (uintptr_t)src) & 3u) == 0) {
        edgec_w32 *d = (edgec_w32 *)(void *)dst;
        const edgec_w32 *s = (const edgec_w32 *)(const void *)src;
        for (; n >= 4; n -= 4, dst += 4, src += 4) *d++ = *s++;
    }
#endif
    for (; n > 0; --n) *dst++ = *src++;
}

/* One 4-byte group of int8 values as the two int16-pair words the dot products read:
 * (x0, x2) and (x1, x3). The portable path stores the same int16 sequence x0, x2, x1, x3. */
EDGEC_INLINE void edgec_widen(uint32_t v, edgec_w32 *dst)
{
#ifdef EDGEC_DSP
    dst[0] = E_SXTB16(v);
    dst[1] = E_SXTB16_ROR8(v);
#else
    edgec_h16 *d = (edgec_h16 *)(void *)dst;
    d[0] = (int16_t)(int8_t)(uint8_t)(v & 0xffu);
    d[1] = (int16_t)(int8_t)(uint8_t)((v >> 16) & 0xffu);
    d[2] = (int16_t)(int8_t)(uint8_t)((v >> 8) & 0xffu);
    d[3] = (int16_t)(int8_t)(uint8_t)(v >> 24);
#endif
}

/* ---------------------------------------------------------------- convolution */
#define EDGEC_CONV_CHUNK 16 /* output channels accumulated before they are requantized */

/* The k4 int8 taps of output pixel (oy, ox) in weight order [ky][kx][ic]; padded taps hold the input
 * zero point (whose contribution the folded bias removes), taps past k_h*k_w*in_c hold 0. */
static const int8_t *edgec_conv_taps(const edgec_fast_conv_params *p, const int8_t *input, int32_t oy,
                                     int32_t ox, int8_t *row)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, k_w = p->k_w, span = k_w * in_c;
    const int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
    const int8_t zp = (int8_t)p->input_zp;
    int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = in_w - ix0 < k_w ? in_w - ix0 : k_w;
    int32_t ky, used;
    int8_t *r = row;
    if (p->k_h == 1 && k_w == 1 && (in_c & 3) == 0 && iy0 >= 0 && iy0 < p->in_h && ix0 >= 0 && ix0 < in_w) {
        return input + (iy0 * in_w + ix0) * in_c; /* a 1x1 tap is the input pixel itself */
    }
    if (kx1 < kx0) kx1 = kx0;
    for (ky = 0; ky < p->k_h; ++ky, r += span) {
        const int32_t iy = iy0 + ky;
        if (iy < 0 || iy >= p->in_h || kx1 == kx0) {
            edgec_fill(r, zp, span);
            continue;
        }
        if (kx0 > 0) edgec_fill(r, zp, kx0 * in_c);
        edgec_copy(r + kx0 * in_c, input + (iy * in_w + ix0 + kx0) * in_c, (kx1 - kx0) * in_c);
        if (kx1 < k_w) edgec_fill(r + kx1 * in_c, zp, (k_w - kx1) * in_c);
    }
    for (used = p->k_h * span; used < p->k4; ++used) row[used] = 0;
    return row;
}

/* Widen k4 int8 taps into pixel slot j of the 4-pixel im2col: [group][pixel][2 words]. */
static void edgec_conv_cols(const int8_t *taps, int32_t groups, edgec_w32 *cols)
{
    const edgec_w32 *t = (const edgec_w32 *)(const void *)taps;
    for (; groups > 0; --groups, cols += 8) edgec_widen(*t++, cols);
}

#ifdef EDGEC_DSP
#define EDGEC_CONV_PIX(acc, x, off)                                                                \
    do {                                                                                           \
        uint32_t l_, h_;                                                                           \
        E_LDRD(l_, h_, x, off);                                                                    \
        (acc) = E_SMLAD(wl_, l_, (acc));                                                           \
        (acc) = E_SMLAD(wh_, h_, (acc));                                                           \
    } while (0)
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const uint32_t wl_ = E_SXTB16(w), wh_ = E_SXTB16_ROR8(w);                                  \
        EDGEC_CONV_PIX(a0, x, (off));                                                              \
        EDGEC_CONV_PIX(a1, x, (off) + 2);                                                          \
        EDGEC_CONV_PIX(a2, x, (off) + 4);                                                          \
        EDGEC_CONV_PIX(a3, x, (off) + 6);                                                          \
    } while (0)
#else
#define EDGEC_CONV_PIX(acc, xs) (acc) += (xs)[0] * w0 + (xs)[1] * w2 + (xs)[2] * w1 + (xs)[3] * w3
#define EDGEC_CONV_GROUP(w, x, off)                                                                \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)((x) + (off));                     \
        const int32_t w0 = (int8_t)(uint8_t)((w) & 0xffu), w1 = (int8_t)(uint8_t)(((w) >> 8) & 0xffu); \
        const int32_t w2 = (int8_t)(uint8_t)(((w) >> 16) & 0xffu), w3 = (int8_t)(uint8_t)((w) >> 24); \
        EDGEC_CONV_PIX(a0, xs_);                                                                   \
        EDGEC_CONV_PIX(a1, xs_ + 4);                                                               \
        EDGEC_CONV_PIX(a2, xs_ + 8);                                                               \
        EDGEC_CONV_PIX(a3, xs_ + 12);                                                              \
    } while (0)
#endif

/* The accumulators of one block of 4 pixels for output channels [0, m): acc[4 * oc + pixel]. */
static EDGEC_HOT void edgec_conv_macs(const edgec_w32 *cols, int32_t groups, const edgec_w32 *w, const edgec_rq *q,
                                      int32_t m, int32_t *acc)
{
    for (; m > 0; --m, ++q, acc += 4) {
        const edgec_w32 *x = cols;
        int32_t a0 = q->bias, a1 = a0, a2 = a0, a3 = a0, g;
        for (g = groups >> 1; g > 0; --g, w += 2, x += 16) {
            const uint32_t wa = w[0], wb = w[1];
            EDGEC_CONV_GROUP(wa, x, 0);
            EDGEC_CONV_GROUP(wb, x, 8);
        }
        if (groups & 1) {
            const uint32_t wa = *w++;
            EDGEC_CONV_GROUP(wa, x, 0);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

/* o[pixel * out_c + oc] = the requantized acc[4 * oc + pixel], pixel < valid, oc < m. */
static EDGEC_NOINLINE void edgec_conv_requant(const int32_t *acc, int32_t m, const edgec_rq *q, int8_t *o,
                                              int32_t out_c, int32_t valid, int32_t lo, int32_t hi)
{
    int32_t i, j;
    if (valid == 4 && lo == -128 && hi == 127) {
        for (i = m; i > 0; --i, ++q, ++o, acc += 4) {
            const int32_t mult = q->mult, khi = q->khi, neg = q->neg, shift = q->shift;
            o[0] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[0], mult, khi, neg, shift));
            o[out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[1], mult, khi, neg, shift));
            o[2 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[2], mult, khi, neg, shift));
            o[3 * out_c] = (int8_t)EDGEC_SAT8(edgec_rq_value(acc[3], mult, khi, neg, shift));
        }
        return;
    }
    for (i = 0; i < m; ++i) {
        for (j = 0; j < valid; ++j) o[i + j * out_c] = edgec_out(acc[4 * i + j], q + i, lo == -128 && hi == 127, lo, hi);
    }
}

void edgec_fast_conv_s8(const edgec_fast_conv_params *p, const int8_t *input, const uint32_t *weights,
                        const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t k4 = p->k4, groups = k4 >> 2, out_c = p->out_c, out_w = p->out_w, in_c = p->in_c;
    const int32_t n = p->out_h * out_w;
    /* a 1x1, stride-1, unpadded convolution reads its taps straight from the input pixel */
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && (in_c & 3) == 0 && p->in_w == out_w;
    edgec_w32 *cols = (edgec_w32 *)(void *)scratch;
    int8_t *row = scratch + 8 * k4;
    int32_t *acc = (int32_t *)(void *)(scratch + 9 * k4);
    int32_t pix, j, oc;
    for (pix = 0; pix < n; pix += 4) {
        const int32_t valid = n - pix < 4 ? n - pix : 4;
        for (j = 0; j < 4; ++j) { /* a short last block repeats its last pixel */
            const int32_t q = pix + (j < valid ? j : valid - 1);
            edgec_conv_cols(pointwise ? input + q * in_c : edgec_conv_taps(p, input, q / out_w, q % out_w, row),
                            groups, cols + 2 * j);
        }
        for (oc = 0; oc < out_c; oc += EDGEC_CONV_CHUNK) {
            const int32_t m = out_c - oc < EDGEC_CONV_CHUNK ? out_c - oc : EDGEC_CONV_CHUNK;
            edgec_conv_macs(cols, groups, (const edgec_w32 *)weights + oc * groups, rq + oc, m, acc);
            edgec_conv_requant(acc, m, rq + oc, output + pix * out_c + oc, out_c, valid, p->act_min, p->act_max);
        }
    }
}

/* ---------------------------------------------------------------- depthwise 3x3 */
/* The window: for each strip column j and each of 4 channels, a record of four int16 values
 * (slot 0, slot 1, slot 2, unused), 8 bytes; column j's records are 32 bytes at 32 * j. Input row r
 * lives in slot r % 3 (a rolling window: going down one output row loads only the new rows), so the
 * kernel row each slot holds rotates, and the weights are packed for the rotation once per channel
 * and output row: P[kx] = (w[ky of slot 0][kx], w[ky of slot 1][kx]) for SMLAD on the word
 * (slot 0, slot 1), Q = w[ky of slot 2][kx] for SMLABB/SMLABT on the word (slot 2, unused). */

/* Input row r (or the zero point for a padded row) into slot `slot` of strip columns [x0, x1). */
static EDGEC_NOINLINE void edgec_dw_load_row(const edgec_fast_dw_params *p, const int8_t *src, int32_t x0, int32_t x1,
                              int32_t slot, int16_t *win, int valid)
{
    edgec_h16 *d = (edgec_h16 *)win + 16 * x0 + slot;
    const int32_t cs = p->in_col_step;
    int32_t j;
    if (!valid) {
        const int16_t zp = (int16_t)p->input_zp;
        for (j = x0; j < x1; ++j, d += 16) d[0] = d[4] = d[8] = d[12] = zp;
        return;
    }
    for (j = x0; j < x1; ++j, d += 16, src += cs) {
        d[0] = src[0];
        d[4] = src[1];
        d[8] = src[2];
        d[12] = src[3];
    }
}

/* The accumulators of one output row of one channel into acc[0..n), doubled (the weights are stored
 * times two, so requantization skips its doubling); x: the channel's record in strip column 0. */
#ifdef EDGEC_DSP
/* tap kx of one output from the column record (a_, b_) = ((slot 0, slot 1), (slot 2, -)) */
#define EDGEC_DW_K0(acc) ((acc) = E_SMLABB(b_, q01, E_SMLAD(a_, p0, (acc))))
#define EDGEC_DW_K1(acc) ((acc) = E_SMLABT(b_, q01, E_SMLAD(a_, p1, (acc))))
#define EDGEC_DW_K2(acc) ((acc) = E_SMLABB(b_, q2, E_SMLAD(a_, p2, (acc))))
#define EDGEC_DW_COL(col) E_LDRD(a_, b_, x, 8 * (col))

static EDGEC_HOT void edgec_dw_macs(const edgec_w32 *x, int32_t n, int32_t stride, const int16_t *wa, const int16_t *wb,
                          const int16_t *wc, int32_t bias, int32_t *acc)
{
    const uint32_t p0 = (uint16_t)wa[0] | (uint32_t)(uint16_t)wb[0] << 16;
    const uint32_t p1 = (uint16_t)wa[1] | (uint32_t)(uint16_t)wb[1] << 16;
    const uint32_t p2 = (uint16_t)wa[2] | (uint32_t)(uint16_t)wb[2] << 16;
    const uint32_t q01 = (uint16_t)wc[0] | (uint32_t)(uint16_t)wc[1] << 16, q2 = (uint16_t)wc[2];
    int32_t *const end = acc + (n & ~1);
    uint32_t a_, b_;
    if (stride == 1) {
        for (; acc < end; x += 16, acc += 2) {
            int32_t a0 = bias, a1 = bias;
            EDGEC_DW_COL(0);
            EDGEC_DW_K0(a0);
            EDGEC_DW_COL(1);
            EDGEC_DW_K1(a0);
            EDGEC_DW_K0(a1);
            EDGEC_DW_COL(2);
            EDGEC_DW_K2(a0);
            EDGEC_DW_K1(a1);
            EDGEC_DW_COL(3);
            EDGEC_DW_K2(a1);
            acc[0] = a0;
            acc[1] = a1;
        }
    } else {
        for (; acc < end; x += 32, acc += 2) {
            int32_t a0 = bias, a1 = bias;
            EDGEC_DW_COL(0);
            EDGEC_DW_K0(a0);
            EDGEC_DW_COL(1);
            EDGEC_DW_K1(a0);
            EDGEC_DW_COL(2);
            EDGEC_DW_K2(a0);
            EDGEC_DW_K0(a1);
            EDGEC_DW_COL(3);
            EDGEC_DW_K1(a1);
            EDGEC_DW_COL(4);
            EDGEC_DW_K2(a1);
            acc[0] = a0;
            acc[1] = a1;
        }
    }
    if (n & 1) {
        int32_t a0 = bias;
        EDGEC_DW_COL(0);
        EDGEC_DW_K0(a0);
        EDGEC_DW_COL(1);
        EDGEC_DW_K1(a0);
        EDGEC_DW_COL(2);
        EDGEC_DW_K2(a0);
        acc[0] = a0;
    }
}
#else
static EDGEC_HOT void edgec_dw_macs(const edgec_w32 *xw, int32_t n, int32_t stride, const int16_t *wa, const int16_t *wb,
                          const int16_t *wc, int32_t bias, int32_t *acc)
{
    const int32_t a0w = wa[0], a1w = wa[1], a2w = wa[2], b0w = wb[0], b1w = wb[1], b2w = wb[2];
    const int32_t c0w = wc[0], c1w = wc[1], c2w = wc[2], step = 16 * stride;
    const edgec_h16 *x = (const edgec_h16 *)(const void *)xw;
    for (; n > 0; --n, x += step) {
        *acc++ = bias + x[0] * a0w + x[1] * b0w + x[2] * c0w + x[16] * a1w + x[17] * b1w + x[18] * c1w +
                 x[32] * a2w + x[33] * b2w + x[34] * c2w;
    }
}
#endif

/* out[i * step] = the requantized, clamped t[i] (doubled accumulators), i < n. */
#define EDGEC_RQ_LOOP(fix, clamp)                                                                  \
    for (; n > 0; --n, out += step) {                                                              \
        const int32_t t_ = *t++;                                                                   \
        const int32_t v_ = (E_SMMLAR(t_, mult, khi) fix) >> shift;                                 \
        *out = (int8_t)(clamp);                                                                    \
    }
static EDGEC_NOINLINE void edgec_requant_doubled(const int32_t *t, int32_t n, const edgec_rq *q, int8_t *out, int32_t step,
                                  int32_t lo, int32_t hi)
{
    const int32_t mult = q->mult, khi = q->khi, shift = q->shift;
    if (lo == -128 && hi == 127) {
        if (q->neg) {
            EDGEC_RQ_LOOP(+(t_ >> 31), EDGEC_SAT8(v_))
        } else {
            EDGEC_RQ_LOOP(, EDGEC_SAT8(v_))
        }
    } else {
        EDGEC_RQ_LOOP(+(t_ >> 31 & q->neg), v_ < lo ? lo : (v_ > hi ? hi : v_))
    }
}

void edgec_fast_dw3x3_s8(const edgec_fast_dw_params *p, const int8_t *input, const uint32_t *weights,
                         const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t c = p->c, rows = p->rows, cols = p->cols, s = p->stride, n = p->out_cols;
    const int32_t width = (n - 1) * s + 3, pl = p->pad_left;
    /* strip columns [0, width) are input columns [-pl, width - pl); those in [x0, x1) are inside */
    const int32_t x0 = pl < width ? pl : width;
    const int32_t x1 = cols + pl < width ? (cols + pl < x0 ? x0 : cols + pl) : width;
    int16_t *win = (int16_t *)(void *)scratch;
    int32_t *acc = (int32_t *)(void *)(scratch + 32 * width);
    const edgec_h16 *w16 = (const edgec_h16 *)(const void *)weights;
    int32_t cg, oy, r, k;
    for (cg = 0; cg < c; cg += 4) {
        int32_t next = -p->pad_top; /* the next input row the window does not hold yet */
        for (k = 0; k < 3; ++k) {   /* padded columns hold the zero point */
            edgec_dw_load_row(p, input, 0, x0, k, win, 0);
            edgec_dw_load_row(p, input, x1, width, k, win, 0);
        }
        for (oy = 0; oy < p->out_rows; ++oy) {
            const int32_t r0 = oy * s - p->pad_top, rot = (r0 % 3 + 3) % 3;
            for (r = next > r0 ? next : r0; r < r0 + 3; ++r) {
                const int valid = r >= 0 && r < rows;
                const int8_t *src = valid ? input + r * p->in_row_step + (x0 - pl) * p->in_col_step + cg : input;
                edgec_dw_load_row(p, src, x0, x1, (r % 3 + 3) % 3, win, valid);
            }
            next = r0 + 3;
            for (k = 0; k < 4; ++k) {
                /* slot i holds kernel row (i - rot) mod 3 */
                const int16_t *wk = w16 + 9 * (cg + k);
                edgec_dw_macs((const edgec_w32 *)(const void *)win + 2 * k, n, s, wk + 3 * ((3 - rot) % 3),
                              wk + 3 * ((4 - rot) % 3), wk + 3 * ((5 - rot) % 3), 2 * rq[cg + k].bias, acc);
                edgec_requant_doubled(acc, n, rq + cg + k, output + oy * p->out_row_step + cg + k,
                                      p->out_col_step, p->act_min, p->act_max);
            }
        }
    }
}

/* ---------------------------------------------------------------- fully connected */

#ifdef EDGEC_DSP
#define EDGEC_FC_ROW(acc, w)                                                                       \
    do {                                                                                           \
        (acc) = E_SMLAD(E_SXTB16(w), xl, (acc));                                                   \
        (acc) = E_SMLAD(E_SXTB16_ROR8(w), xh, (acc));                                              \
    } while (0)
/* group `g` (4 inputs) of 4 rows: x words 2g, 2g + 1; weight words 4g .. 4g + 3 */
#define EDGEC_FC_GROUP(g)                                                                          \
    do {                                                                                           \
        uint32_t xl, xh, wa, wb;                                                                   \
        E_LDRD(xl, xh, x, 2 * (g));                                                                \
        E_LDRD(wa, wb, w, 4 * (g));                                                                \
        EDGEC_FC_ROW(a0, wa);                                                                      \
        EDGEC_FC_ROW(a1, wb);                                                                      \
        E_LDRD(wa, wb, w, 4 * (g) + 2);                                                            \
        EDGEC_FC_ROW(a2, wa);                                                                      \
        EDGEC_FC_ROW(a3, wb);                                                                      \
    } while (0)
#define EDGEC_FC_ONE(g)                                                                            \
    do {                                                                                           \
        uint32_t xl, xh;                                                                           \
        const uint32_t wa = w[g];                                                                  \
        E_LDRD(xl, xh, x, 2 * (g));                                                                \
        EDGEC_FC_ROW(a0, wa);                                                                      \
    } while (0)
#else
#define EDGEC_FC_ROW(acc, w)                                                                       \
    (acc) += xs[0] * (int8_t)(uint8_t)((w) & 0xffu) + xs[1] * (int8_t)(uint8_t)(((w) >> 16) & 0xffu) + \
             xs[2] * (int8_t)(uint8_t)(((w) >> 8) & 0xffu) + xs[3] * (int8_t)(uint8_t)((w) >> 24)
#define EDGEC_FC_GROUP(g)                                                                          \
    do {                                                                                           \
        const edgec_h16 *xs = (const edgec_h16 *)(const void *)(x + 2 * (g));                      \
        const uint32_t wa = w[4 * (g)], wb = w[4 * (g) + 1], wc = w[4 * (g) + 2], wd = w[4 * (g) + 3]; \
        EDGEC_FC_ROW(a0, wa);                                                                      \
        EDGEC_FC_ROW(a1, wb);                                                                      \
        EDGEC_FC_ROW(a2, wc);                                                                      \
        EDGEC_FC_ROW(a3, wd);                                                                      \
    } while (0)
#define EDGEC_FC_ONE(g)                                                                            \
    do {                                                                                           \
        const edgec_h16 *xs = (const edgec_h16 *)(const void *)(x + 2 * (g));                      \
        const uint32_t wa = w[g];                                                                  \
        EDGEC_FC_ROW(a0, wa);                                                                      \
    } while (0)
#endif

/* Blocks of 4 rows: out[r .. r+3] for every full block (weights in block layout, see edgec_fast.h). */
static EDGEC_HOT void edgec_fc_blocks(const edgec_w32 *xw, int32_t groups, int32_t blocks, const edgec_w32 *w,
                                      const edgec_rq *rq, int8_t *out, int32_t lo, int32_t hi)
{
    const int full = lo == -128 && hi == 127;
    for (; blocks > 0; --blocks, rq += 4, out += 4) {
        const edgec_w32 *x = xw;
        int32_t a0 = rq[0].bias, a1 = rq[1].bias, a2 = rq[2].bias, a3 = rq[3].bias, g;
        for (g = groups >> 2; g > 0; --g, x += 8, w += 16) {
            EDGEC_FC_GROUP(0);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(1);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(2);
            EDGEC_BARRIER();
            EDGEC_FC_GROUP(3);
        }
        for (g = groups & 3; g > 0; --g, x += 2, w += 4) EDGEC_FC_GROUP(0);
        out[0] = edgec_out(a0, rq, full, lo, hi);
        out[1] = edgec_out(a1, rq + 1, full, lo, hi);
        out[2] = edgec_out(a2, rq + 2, full, lo, hi);
        out[3] = edgec_out(a3, rq + 3, full, lo, hi);
    }
}

void edgec_fast_fc_s8(const edgec_fast_fc_params *p, const int8_t *input, const uint32_t *weights,
                      const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, n_out = p->out_features, groups = p->k4 >> 2;
    const int32_t blocks = n_out >> 2, whole = n_in >> 2, lo = p->act_min, hi = p->act_max;
    edgec_w32 *xw = (edgec_w32 *)(void *)scratch;
    const edgec_w32 *w = (const edgec_w32 *)weights + blocks * 4 * groups;
    int32_t g, r;
    if (((uintptr_t)input & 3u) == 0) {
        const edgec_w32 *in = (const edgec_w32 *)(const void *)input;
        for (g = 0; g < whole; ++g) edgec_widen(in[g], xw + 2 * g);
    } else {
        for (g = 0; g < whole; ++g) {
            const int8_t *b = input + 4 * g;
            edgec_widen((uint32_t)(uint8_t)b[0] | (uint32_t)(uint8_t)b[1] << 8 | (uint32_t)(uint8_t)b[2] << 16 |
                            (uint32_t)(uint8_t)b[3] << 24, xw + 2 * g);
        }
    }
    if (whole < groups) { /* the last, partial group: missing inputs are 0 (their weights are 0 too) */
        uint32_t v = 0;
        for (r = 0; 4 * whole + r < n_in; ++r) v |= (uint32_t)(uint8_t)input[4 * whole + r] << (8 * r);
        edgec_widen(v, xw + 2 * whole);
    }
    edgec_fc_blocks(xw, groups, blocks, (const edgec_w32 *)weights, rq, output, lo, hi);
    for (r = 4 * blocks; r < n_out; ++r) {
        const edgec_w32 *x = xw;
        int32_t a0 = rq[r].bias;
        for (g = groups; g > 0; --g, x += 2, ++w) EDGEC_FC_ONE(0);
        output[r] = edgec_out(a0, rq + r, lo == -128 && hi == 127, lo, hi);
    }
}

/* ---------------------------------------------------------------- add, pooling */

void edgec_fast_add_s8(const edgec_fast_add_params *p, const int32_t *lut1, const int32_t *lut2,
                       const edgec_rq *rq, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const int32_t *l1 = lut1 + 128, *l2 = lut2 + 128;
    const int32_t lo = p->act_min, hi = p->act_max, full = lo == -128 && hi == 127;
    int32_t i;
    for (i = 0; i < p->n; ++i) {
        output[i] = edgec_out(l1[input1[i]] + l2[input2[i]], rq, full, lo, hi);
    }
}

void edgec_fast_global_avg_pool_s8(int32_t pixels, int32_t c, int32_t act_min, int32_t act_max,
                                   const int8_t *input, int8_t *output)
{
    int32_t ch, i;
    for (ch = 0; ch < c; ++ch) {
        const int8_t *x = input + ch;
        int32_t sum = 0, avg;
        for (i = 0; i < pixels; ++i, x += c) sum += *x;
        avg = sum > 0 ? (sum + pixels / 2) / pixels : (sum - pixels / 2) / pixels;
        output[ch] = (int8_t)(avg < act_min ? act_min : (avg > act_max ? act_max : avg));
    }
}
