/* edgec fast kernels' shared machinery (private to fast/; the kernels are declared in ../edgec_nn.h): the Arm
 * DSP intrinsics they use (or C emulations of them), the one-multiply requantization and the int8 -> int16
 * widening of the dot products. C99; GCC/Clang attributes where available.
 * Right shifts of negative values are arithmetic (as on every compiler edgec supports: gcc, clang,
 * arm-none-eabi-gcc); signed accumulators never overflow (edgec/ops/fast.py checks the bound). */
#ifndef EDGEC_FAST_SUPPORT_H
#define EDGEC_FAST_SUPPORT_H

#include "../edgec_nn_support.h"

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
/* EDGEC_NOCLONE: a static helper of several kernel files compiled to the same body in each, whatever constant
 * arguments one file's calls pass (gcc would otherwise clone or specialize a file's copy for them) */
#if defined(__GNUC__) && !defined(__clang__)
#define EDGEC_NOCLONE __attribute__((noclone, used))
#else
#define EDGEC_NOCLONE
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
#define E_SMLATT(a, b, acc) __smlatt((int32_t)(a), (int32_t)(b), (acc))
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
/* SXTAB16: the same two bytes added to the two int16 lanes of a (no carry between lanes) */
#define E_SXTAB16(a, x) ((uint32_t)__sxtab16((int32_t)(a), (int32_t)(x)))
EDGEC_INLINE uint32_t E_SXTAB16_ROR8(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
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
EDGEC_INLINE uint32_t E_SXTAB16(uint32_t a, uint32_t x)
{
    const uint32_t w = E_SXTB16(x);
    return ((a + w) & 0xffffu) | ((((a >> 16) + (w >> 16)) & 0xffffu) << 16);
}
EDGEC_INLINE uint32_t E_SXTAB16_ROR8(uint32_t a, uint32_t x) { return E_SXTAB16(a, (x >> 8) | (x << 24)); }
EDGEC_INLINE int32_t E_SMLAD(uint32_t a, uint32_t b, int32_t acc)
{
    return acc + e_lo(a) * e_lo(b) + e_hi(a) * e_hi(b);
}
EDGEC_INLINE int32_t E_SMLABB(uint32_t a, uint32_t b, int32_t acc) { return acc + e_lo(a) * e_lo(b); }
EDGEC_INLINE int32_t E_SMLABT(uint32_t a, uint32_t b, int32_t acc) { return acc + e_lo(a) * e_hi(b); }
EDGEC_INLINE int32_t E_SMLATT(uint32_t a, uint32_t b, int32_t acc) { return acc + e_hi(a) * e_hi(b); }
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

/* ---------------------------------------------------------------- requantization */
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

EDGEC_INLINE int8_t edgec_clamp_act(int32_t v, int full, int32_t lo, int32_t hi)
{
    if (full) return (int8_t)EDGEC_SAT8(v);
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

EDGEC_INLINE int8_t edgec_out(int32_t acc, const edgec_rq *q, int full, int32_t lo, int32_t hi)
{
    return edgec_clamp_act(edgec_rq_value(acc, q->mult, q->khi, q->neg, q->shift), full, lo, hi);
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

/* int4 weights, 8 nibbles a word (edgec/ops/fast.py PERM8 order) */
EDGEC_INLINE uint32_t edgec_ror(uint32_t v, int s) { return (v >> s) | (v << (32 - s)); }
#ifdef EDGEC_DSP
/* nibbles 0 and 4 (LO) or 1 and 5 (HI) of v as two int16 lanes; v ror 8 gives 2, 6 and 3, 7 */
#define EDGEC_NIBBLES_LO(v) E_SXTB16(edgec_ror(E_SXTB16((v) << 4), 4))
#define EDGEC_NIBBLES_HI(v) E_SXTB16(edgec_ror(E_SXTB16(v), 4))
#endif
/* nibble k of v as a signed value in [-8, 7] */
#define EDGEC_NIBBLE(v, k) ((int32_t)((((v) >> (4 * (k))) & 15u) ^ 8u) - 8)

/* acc + the 8 int4 weights of word v (PERM8 order) times the 8 inputs of x, 4 words of int16 pairs as
 * edgec_widen lays them out */
EDGEC_INLINE int32_t edgec_dot_nibbles(uint32_t v, const edgec_w32 *x, int32_t acc)
{
#ifdef EDGEC_DSP
    const uint32_t u = edgec_ror(v, 8);
    acc = E_SMLAD(EDGEC_NIBBLES_LO(v), x[0], acc);
    acc = E_SMLAD(EDGEC_NIBBLES_HI(v), x[1], acc);
    acc = E_SMLAD(EDGEC_NIBBLES_LO(u), x[2], acc);
    return E_SMLAD(EDGEC_NIBBLES_HI(u), x[3], acc);
#else
    const edgec_h16 *xs = (const edgec_h16 *)(const void *)x;
    int32_t k;
    for (k = 0; k < 4; ++k) { /* input word k meets nibbles k and k + 4 */
        acc += xs[2 * k] * EDGEC_NIBBLE(v, k) + xs[2 * k + 1] * EDGEC_NIBBLE(v, k + 4);
    }
    return acc;
#endif
}

#endif /* EDGEC_FAST_SUPPORT_H */
