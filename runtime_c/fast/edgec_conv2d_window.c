/* edgec speed-optimized convolution without im2col (declared in edgec_nn.h; chosen by `--optimize speed`, the
 * default, for kernels larger than 1x1). The input rows a window covers are widened to int16 once each, into a
 * ring in scratch, pixel by pixel in pairs: entry i holds, for each of the window's k_h rows top to bottom, the c4
 * channels of pixel i and of pixel i + stride_w, group of 4 channels by group (the two pixels of an output pair;
 * the channels padded to c4, a multiple of 4; pixels outside the image hold the input zero point, whose
 * contribution the folded bias removes). The taps of both output pixels are then k_w entries side by side, read in
 * place with one pointer as fast/edgec_conv2d_blocked.c reads its im2col columns: 2 output pixels x 2 output
 * channels in registers, per 4 taps 4 LDRD and 8 SMLAD, and no copy of the taps per output pixel. Weights: the
 * blocked kernel's order with each channel's taps as [kx][ky][c4] (edgec/ops/conv/im2col.py). The requantization
 * follows each block directly, from registers. */
#include <string.h>

#include "edgec_conv_block2x2.h"
#include "edgec_conv_block2x4.h"
#include "edgec_fast_support.h"

/* The dot products of the n words of taps from x (a multiple of 4) with the weights at w (both advanced). */
#define EDGEC_WIN_TAPS                                                                             \
    do {                                                                                           \
        const edgec_w32 *const end = x + (n & ~15);                                                \
        for (; x < end; x += 16, w += 16) {                                                        \
            EDGEC_2X2_GROUP(0);                                                                    \
            EDGEC_2X2_GROUP(4);                                                                    \
            EDGEC_2X2_GROUP(8);                                                                    \
            EDGEC_2X2_GROUP(12);                                                                   \
        }                                                                                          \
        if (n & 8) {                                                                               \
            EDGEC_2X2_GROUP(0);                                                                    \
            EDGEC_2X2_GROUP(4);                                                                    \
            x += 8;                                                                                \
            w += 8;                                                                                \
        }                                                                                          \
        if (n & 4) {                                                                               \
            EDGEC_2X2_GROUP(0);                                                                    \
            w += 4;                                                                                \
        }                                                                                          \
    } while (0)
/* 3 or 4 input channels and a 3x3 kernel (the first layer of an image model): the 9 groups, unrolled. On the
 * native DSP path each LDRD declares that it reads the whole block of 36 words at its base (taps or one channel
 * pair's weights), not its own 2 words: with E_LDRD's per-load memory operand gcc kept 18 addresses x0 + off
 * alive across the channel loop, spilled them to the stack and reloaded one before most loads. */
#ifdef EDGEC_DSP_NATIVE
struct edgec_win_block36 {
    edgec_w32 v[36];
};
#define EDGEC_WIN_LDRD(lo, hi, p, off)                                                             \
    __asm__("ldrd %0, %1, [%2, %3]"                                                                \
            : "=r"(lo), "=r"(hi)                                                                   \
            : "r"(p), "i"(4 * (off)), "m"(*(const struct edgec_win_block36 *)(const void *)(p)))
#define EDGEC_WIN_GROUP36(off)                                                                     \
    do {                                                                                           \
        EDGEC_WIN_LDRD(xa, xb, x, (off));                                                          \
        EDGEC_WIN_LDRD(wa, wb, w, (off));                                                          \
        EDGEC_WIN_LDRD(xc, xd, x, (off) + 2);                                                      \
        a00 = E_SMLAD(xa, wa, a00);                                                                \
        a00 = E_SMLAD(xb, wb, a00);                                                                \
        a10 = E_SMLAD(xc, wa, a10);                                                                \
        a10 = E_SMLAD(xd, wb, a10);                                                                \
        EDGEC_WIN_LDRD(wa, wb, w, (off) + 2);                                                      \
        a01 = E_SMLAD(xa, wa, a01);                                                                \
        a01 = E_SMLAD(xb, wb, a01);                                                                \
        a11 = E_SMLAD(xc, wa, a11);                                                                \
        a11 = E_SMLAD(xd, wb, a11);                                                                \
    } while (0)
#else
#define EDGEC_WIN_GROUP36 EDGEC_2X2_GROUP
#endif
#define EDGEC_WIN_TAPS_RGB                                                                         \
    do {                                                                                           \
        EDGEC_WIN_GROUP36(0);                                                                      \
        EDGEC_WIN_GROUP36(4);                                                                      \
        EDGEC_WIN_GROUP36(8);                                                                      \
        EDGEC_WIN_GROUP36(12);                                                                     \
        EDGEC_WIN_GROUP36(16);                                                                     \
        EDGEC_WIN_GROUP36(20);                                                                     \
        EDGEC_WIN_GROUP36(24);                                                                     \
        EDGEC_WIN_GROUP36(28);                                                                     \
        EDGEC_WIN_GROUP36(32);                                                                     \
        w += 36;                                                                                   \
    } while (0)

/* All output channels of 2 pixels whose taps (2 words of pixel 0 then 2 of pixel 1 per group of 4) are the n words
 * from x0; `taps` is one of the two above. */
#define EDGEC_WIN_PIXELS(name, clamp, taps)                                                        \
    static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, const edgec_w32 *w, const edgec_rq *q,          \
                               int32_t out_c, int8_t *o0, int8_t *o1, int32_t lo, int32_t hi)      \
    {                                                                                              \
        for (; out_c > 0; out_c -= 2, q += 2, o0 += 2, o1 += 2) {                                  \
            const int32_t d1 = out_c > 1; /* channel c + 1 goes to o + 1, a copy to o + 0 */       \
            int32_t a00 = q[0].bias, a01 = q[d1].bias, a10 = a00, a11 = a01;                       \
            const edgec_w32 *x = x0;                                                               \
            EDGEC_2X2_REGS                                                                         \
            taps;                                                                                  \
            EDGEC_2X2_STORE(a10 * 2, o1, a00 * 2, o0, q, 0, clamp, EDGEC_NEG_ANY);                                        \
            EDGEC_2X2_STORE(a11 * 2, o1, a01 * 2, o0, q + d1, d1, clamp, EDGEC_NEG_ANY);                                        \
        }                                                                                          \
        (void)n;                                                                                   \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
#define EDGEC_WIN_CLAMP (v_ < lo ? lo : (v_ > hi ? hi : v_))
EDGEC_WIN_PIXELS(edgec_window_pixels_full, EDGEC_SAT8(v_), EDGEC_WIN_TAPS)
EDGEC_WIN_PIXELS(edgec_window_pixels_clamped, EDGEC_WIN_CLAMP, EDGEC_WIN_TAPS)
#ifdef EDGEC_DSP /* the portable path's unrolled copy would cost more code than it saves time */
EDGEC_WIN_PIXELS(edgec_window_pixels_rgb_full, EDGEC_SAT8(v_), EDGEC_WIN_TAPS_RGB)
EDGEC_WIN_PIXELS(edgec_window_pixels_rgb_clamped, EDGEC_WIN_CLAMP, EDGEC_WIN_TAPS_RGB)
#else
#define edgec_window_pixels_rgb_full edgec_window_pixels_full
#define edgec_window_pixels_rgb_clamped edgec_window_pixels_clamped
#endif

typedef void (*edgec_window_pixels_fn)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, int32_t,
                                       int8_t *, int8_t *, int32_t, int32_t);

/* Block moves: LDM/STM move 8 or 4 words in one instruction each (fixed registers: the list must ascend). */
#ifdef EDGEC_DSP_NATIVE
EDGEC_INLINE void edgec_win_move8(edgec_w32 **dst, const edgec_w32 **src)
{
    register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");
    register uint32_t r10 __asm__("r10"), r11 __asm__("r11"), r12 __asm__("r12"), r14 __asm__("r14");
    __asm__ volatile("ldmia %[s]!, {%[a], %[b], %[c], %[d], %[e], %[f], %[g], %[h]}\n\t"
                     "stmia %[o]!, {%[a], %[b], %[c], %[d], %[e], %[f], %[g], %[h]}"
                     : [s] "+r"(*src), [o] "+r"(*dst), [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), [d] "=&r"(r8),
                       [e] "=&r"(r10), [f] "=&r"(r11), [g] "=&r"(r12), [h] "=&r"(r14)
                     :
                     : "memory");
}
EDGEC_INLINE void edgec_win_move4(edgec_w32 **dst, const edgec_w32 **src)
{
    register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");
    __asm__ volatile("ldmia %[s]!, {%[a], %[b], %[c], %[d]}\n\t"
                     "stmia %[o]!, {%[a], %[b], %[c], %[d]}"
                     : [s] "+r"(*src), [o] "+r"(*dst), [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), [d] "=&r"(r8)
                     :
                     : "memory");
}
/* the int8 words x, y (4 channels of the pair's two pixels) widened: 4 words stored at *dst (advanced) */
EDGEC_INLINE void edgec_win_widen2(edgec_w32 **dst, uint32_t x, uint32_t y)
{
    register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");
    __asm__ volatile("sxtb16 %[a], %[x]\n\tsxtb16 %[b], %[x], ror #8\n\t"
                     "sxtb16 %[c], %[y]\n\tsxtb16 %[d], %[y], ror #8\n\t"
                     "stmia %[o]!, {%[a], %[b], %[c], %[d]}"
                     : [o] "+r"(*dst), [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), [d] "=&r"(r8)
                     : [x] "r"(x), [y] "r"(y)
                     : "memory");
}
/* the same for the 2x4 block (edgec_conv2d_window4_s8): (x0, x2) of both pixels, then (x1, x3) of both */
EDGEC_INLINE void edgec_win_widen2x(edgec_w32 **dst, uint32_t x, uint32_t y)
{
    register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");
    __asm__ volatile("sxtb16 %[a], %[x]\n\tsxtb16 %[b], %[y]\n\t"
                     "sxtb16 %[c], %[x], ror #8\n\tsxtb16 %[d], %[y], ror #8\n\t"
                     "stmia %[o]!, {%[a], %[b], %[c], %[d]}"
                     : [o] "+r"(*dst), [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), [d] "=&r"(r8)
                     : [x] "r"(x), [y] "r"(y)
                     : "memory");
}
#else
EDGEC_INLINE void edgec_win_move4(edgec_w32 **dst, const edgec_w32 **src)
{
    edgec_w32 *d = *dst;
    const edgec_w32 *s = *src;
    d[0] = s[0];
    d[1] = s[1];
    d[2] = s[2];
    d[3] = s[3];
    *dst = d + 4;
    *src = s + 4;
}
EDGEC_INLINE void edgec_win_move8(edgec_w32 **dst, const edgec_w32 **src)
{
    edgec_win_move4(dst, src);
    edgec_win_move4(dst, src);
}
EDGEC_INLINE void edgec_win_widen2(edgec_w32 **dst, uint32_t x, uint32_t y)
{
    edgec_widen(x, *dst);
    edgec_widen(y, *dst + 2);
    *dst += 4;
}
EDGEC_INLINE void edgec_win_widen2x(edgec_w32 **dst, uint32_t x, uint32_t y)
{
    edgec_w32 a[2], b[2];
    edgec_widen(x, a);
    edgec_widen(y, b);
    (*dst)[0] = a[0];
    (*dst)[1] = b[0];
    (*dst)[2] = a[1];
    (*dst)[3] = b[1];
    *dst += 4;
}
#endif

/* Input channels c..c+3 of pixel (iy, ix) as one int8 word: the zero point outside the image, 0 past in_c. */
static uint32_t edgec_window_word(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy, int32_t ix,
                                  int32_t c)
{
    const int8_t *s;
    uint32_t v = 0;
    int32_t j;
    if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) return (uint32_t)(uint8_t)(int8_t)p->input_zp * 0x01010101u;
    s = input + (iy * p->in_w + ix) * p->in_c + c; /* only for a pixel inside the image */
#ifdef EDGEC_DSP_NATIVE
    if (c + 4 <= p->in_c) { /* a whole group: one LDR (little-endian, unaligned words allowed) */
        memcpy(&v, s, 4);
        return v;
    }
#endif
    for (j = 3; j >= 0; --j) v = (v << 8) | (c + j < p->in_c ? (uint8_t)s[j] : 0u);
    return v;
}

/* The 3 channels of the pixel at s as an int8 word (the 4th 0). */
static uint32_t edgec_window_rgb(const int8_t *s)
{
    return (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[1] << 8 | (uint32_t)(uint8_t)s[2] << 16;
}

/* The same where a 4th byte follows the pixel inside the input: on the native DSP path (little-endian, unaligned
 * words allowed) one LDR, the 4th byte the next pixel's first channel, which the padded channel's zero weights
 * multiply by 0. */
#ifdef EDGEC_DSP_NATIVE
EDGEC_INLINE uint32_t edgec_window_rgb_word(const int8_t *s)
{
    uint32_t v;
    memcpy(&v, s, 4);
    return v;
}
#else
#define edgec_window_rgb_word edgec_window_rgb
#endif

/* A 3-channel input row iy (inside the image) widened into dst in pairs, as edgec_window_row_as below (x2: the
 * 2x4 block's layout; a constant where it is inlined). */
EDGEC_INLINE void edgec_window_row_rgb(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy,
                                       int32_t x0, int32_t wp, edgec_w32 *dst, int32_t gap, const int x2)
{
    const int32_t in_w = p->in_w, s = p->stride_w, last = p->in_h * in_w - 1;
    int32_t i;
    for (i = 0; i < wp; ++i, dst += gap) {
        const int32_t ix = x0 + i;
        if (ix >= 0 && ix + s < in_w) { /* both pixels inside */
            const int8_t *u8 = input + (iy * in_w + ix) * 3, *v8 = u8 + s * 3;
            /* a byte follows pixel ix + s unless it is the image's last */
            const uint32_t a = edgec_window_rgb_word(u8);
            const uint32_t b = iy * in_w + ix + s < last ? edgec_window_rgb_word(v8) : edgec_window_rgb(v8);
            if (x2) {
                edgec_win_widen2x(&dst, a, b);
            } else {
                edgec_win_widen2(&dst, a, b);
            }
        } else {
            const uint32_t a = edgec_window_word(p, input, iy, ix, 0), b = edgec_window_word(p, input, iy, ix + s, 0);
            if (x2) {
                edgec_win_widen2x(&dst, a, b);
            } else {
                edgec_win_widen2(&dst, a, b);
            }
        }
    }
}

/* `count` pixel pairs whose both pixels are inside the image, widened into dst (each entry's c4 words, then gap words
 * skipped): pixel i's c4 channels at u + i * c4 (bytes; in_c == c4), its partner's vo bytes further (x2: the 2x4
 * block's layout; a constant where it is inlined). On the native DSP path one block of assembly: per group of 4
 * channels 2 LDR, 4 SXTB16, STM, CMP, BNE (gcc's loop kept its operands in other registers than the fixed ones of
 * the widening and moved them: 11 a group, and about 40 a pixel around them). */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* clang's allocation of the fixed registers: its C path */
#define EDGEC_WIN_WIDEN_RUN(name, order)                                                                             \
    EDGEC_INLINE void name(edgec_w32 *dst, const int8_t *u, int32_t count, int32_t c4, int32_t vo, int32_t gap)       \
    {                                                                                                                  \
        register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");                      \
        const int32_t gapb = 4 * gap;                                                                                  \
        const int8_t *end;                                                                                             \
        uint32_t x, y;                                                                                                 \
        if (count <= 0) return;                                                                                        \
        __asm__ volatile("1:\n\t"                                                                                       \
                         "add %[e], %[u], %[c4]\n\t"                                                                   \
                         "2:\n\t"                                                                                       \
                         "ldr %[y], [%[u], %[vo]]\n\t"                                                                 \
                         "ldr %[x], [%[u]], #4\n\t" order "stmia %[o]!, {%[a], %[b], %[c], %[d]}\n\t"                 \
                         "cmp %[u], %[e]\n\t"                                                                          \
                         "bne 2b\n\t"                                                                                  \
                         "ldr %[x], %[gapb]\n\t"                                                                       \
                         "add %[o], %[o], %[x]\n\t"                                                                    \
                         "subs %[k], %[k], #1\n\t"                                                                     \
                         "bne 1b"                                                                                     \
                         : [o] "+r"(dst), [u] "+r"(u), [k] "+r"(count), [e] "=&r"(end), [x] "=&r"(x), [y] "=&r"(y),   \
                           [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), [d] "=&r"(r8)                                  \
                         : [c4] "r"(c4), [vo] "r"(vo), [gapb] "m"(gapb)                                                \
                         : "cc", "memory");                                                                            \
    }
#define EDGEC_WIN_WIDEN_ORDER(x, y)                                                                                  \
    "sxtb16 %[a], %[" #x "]\n\tsxtb16 %[b], %[" #x "], ror #8\n\tsxtb16 %[c], %[" #y "]\n\tsxtb16 %[d], %[" #y          \
    "], ror #8\n\t"
#define EDGEC_WIN_WIDEN_ORDER_X2(x, y)                                                                               \
    "sxtb16 %[a], %[" #x "]\n\tsxtb16 %[b], %[" #y "]\n\tsxtb16 %[c], %[" #x "], ror #8\n\tsxtb16 %[d], %[" #y          \
    "], ror #8\n\t"
EDGEC_WIN_WIDEN_RUN(edgec_window_widen_run1, EDGEC_WIN_WIDEN_ORDER(x, y))
EDGEC_WIN_WIDEN_RUN(edgec_window_widen_run1_x2, EDGEC_WIN_WIDEN_ORDER_X2(x, y))
/* The same 2 groups a pass (c4 a multiple of 8): LDRD of both pixels' 8 channels, per group 4 SXTB16 and STM */
#define EDGEC_WIN_WIDEN_RUN8(name, order)                                                                            \
    EDGEC_INLINE void name(edgec_w32 *dst, const int8_t *u, int32_t count, int32_t c4, int32_t vo, int32_t gap)       \
    {                                                                                                                  \
        register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");                      \
        const int32_t gapb = 4 * gap;                                                                                  \
        const int8_t *end, *v;                                                                                         \
        uint32_t x, y, x1, y1;                                                                                         \
        if (count <= 0) return;                                                                                        \
        __asm__ volatile("1:\n\t"                                                                                       \
                         "ldr %[e], %[c4]\n\t"                                                                         \
                         "add %[e], %[u], %[e]\n\t"                                                                    \
                         "ldr %[v], %[vo]\n\t"                                                                         \
                         "add %[v], %[u], %[v]\n\t"                                                                    \
                         "2:\n\t"                                                                                       \
                         "ldrd %[x], %[x1], [%[u]], #8\n\t"                                                            \
                         "ldrd %[y], %[y1], [%[v]], #8\n\t" order(x, y) "stmia %[o]!, {%[a], %[b], %[c], %[d]}\n\t"    \
                         order(x1, y1) "stmia %[o]!, {%[a], %[b], %[c], %[d]}\n\t"                                      \
                         "cmp %[u], %[e]\n\t"                                                                          \
                         "bne 2b\n\t"                                                                                  \
                         "ldr %[x], %[gapb]\n\t"                                                                       \
                         "add %[o], %[o], %[x]\n\t"                                                                    \
                         "subs %[k], %[k], #1\n\t"                                                                     \
                         "bne 1b"                                                                                     \
                         : [o] "+r"(dst), [u] "+r"(u), [k] "+r"(count), [e] "=&r"(end), [v] "=&r"(v), [x] "=&r"(x),   \
                           [y] "=&r"(y), [x1] "=&r"(x1), [y1] "=&r"(y1), [a] "=&r"(r4), [b] "=&r"(r5), [c] "=&r"(r6), \
                           [d] "=&r"(r8)                                                                               \
                         : [c4] "m"(c4), [vo] "m"(vo), [gapb] "m"(gapb)                                                \
                         : "cc", "memory");                                                                            \
    }
EDGEC_WIN_WIDEN_RUN8(edgec_window_widen_run8, EDGEC_WIN_WIDEN_ORDER)
EDGEC_WIN_WIDEN_RUN8(edgec_window_widen_run8_x2, EDGEC_WIN_WIDEN_ORDER_X2)
static void edgec_window_widen_run(edgec_w32 *dst, const int8_t *u, int32_t count, int32_t c4, int32_t vo, int32_t gap)
{
    if ((c4 & 7) == 0 && (vo & 3) == 0 && ((uintptr_t)u & 3) == 0) {
        edgec_window_widen_run8(dst, u, count, c4, vo, gap);
    } else {
        edgec_window_widen_run1(dst, u, count, c4, vo, gap);
    }
}
EDGEC_INLINE void edgec_window_widen_run_x2(edgec_w32 *dst, const int8_t *u, int32_t count, int32_t c4, int32_t vo,
                                           int32_t gap) /* (inlined in each window4 entry, as in the one before) */
{
    if ((c4 & 7) == 0 && (vo & 3) == 0 && ((uintptr_t)u & 3) == 0) {
        edgec_window_widen_run8_x2(dst, u, count, c4, vo, gap);
    } else {
        edgec_window_widen_run1_x2(dst, u, count, c4, vo, gap);
    }
}
#else
#define EDGEC_WIN_WIDEN_RUN(name, x2)                                                                                \
    static void name(edgec_w32 *dst, const int8_t *u8, int32_t count, int32_t c4, int32_t vo, int32_t gap)            \
    {                                                                                                                  \
        int32_t c;                                                                                                     \
        for (; count > 0; --count, u8 += c4, dst += gap) {                                                             \
            const edgec_w32 *u = (const edgec_w32 *)(const void *)u8;                                                  \
            const edgec_w32 *v = (const edgec_w32 *)(const void *)(u8 + vo);                                          \
            for (c = c4; c > 0; c -= 4) {                                                                              \
                const uint32_t a = *u++, b = *v++;                                                                     \
                if (x2) {                                                                                              \
                    edgec_win_widen2x(&dst, a, b);                                                                     \
                } else {                                                                                               \
                    edgec_win_widen2(&dst, a, b);                                                                      \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }
EDGEC_WIN_WIDEN_RUN(edgec_window_widen_run, 0)
EDGEC_WIN_WIDEN_RUN(edgec_window_widen_run_x2, 1)
#endif

/* The pixel pair of entry ix (either pixel may be outside the image or the row iy a padding row) widened into dst
 * word by word (x2: the 2x4 block's layout; a constant where it is inlined). */
EDGEC_INLINE void edgec_window_edge(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy, int32_t ix,
                                    int32_t c4, edgec_w32 *dst, const int x2)
{
    int32_t c;
    for (c = 0; c < c4; c += 4) {
        const uint32_t a = edgec_window_word(p, input, iy, ix, c), b = edgec_window_word(p, input, iy, ix + p->stride_w, c);
        if (x2) {
            edgec_win_widen2x(&dst, a, b);
        } else {
            edgec_win_widen2(&dst, a, b);
        }
    }
}

/* Input row iy widened into dst in pairs: for i < wp, pixel x0 + i and pixel x0 + i + stride_w (x0: the band's
 * first column, -pad_left for the first band), group of 4 channels by group, 2 words each, then gap words skipped
 * (x2: the 2x4 block's layout, edgec_win_widen2x; a constant where it is inlined). The pairs inside the image of a
 * row inside it in one run (edgec_window_widen_run), the others word by word. */
EDGEC_INLINE void edgec_window_row_as(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy,
                                      int32_t x0, int32_t wp, int32_t c4, edgec_w32 *dst, int32_t gap, const int x2)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, s = p->stride_w, entry = c4 + gap;
    const int row = iy >= 0 && iy < p->in_h;
    int32_t i, lo = 0, hi = 0;
    if (row && in_c == 3) {
        edgec_window_row_rgb(p, input, iy, x0, wp, dst, gap, x2);
        return;
    }
    if (row && (in_c & 3) == 0) { /* the pairs lo..hi - 1 are inside */
        lo = x0 < 0 ? -x0 : 0;
        hi = in_w - s - x0 < wp ? in_w - s - x0 : wp;
        if (hi < lo) hi = lo;
        if (hi > lo && x2) {
            edgec_window_widen_run_x2(dst + lo * entry, input + (iy * in_w + x0 + lo) * in_c, hi - lo, c4, s * in_c, gap);
        } else if (hi > lo) {
            edgec_window_widen_run(dst + lo * entry, input + (iy * in_w + x0 + lo) * in_c, hi - lo, c4, s * in_c, gap);
        }
    }
    for (i = 0; i < wp; ++i) {
        if (i == lo) i = hi;
        if (i < wp) edgec_window_edge(p, input, iy, x0 + i, c4, dst + i * entry, x2);
    }
}
static void edgec_window_row(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy, int32_t x0,
                             int32_t wp, int32_t c4, edgec_w32 *dst, int32_t gap)
{
    edgec_window_row_as(p, input, iy, x0, wp, c4, dst, gap, 0);
}
/* The 2x4 block's row widening, inlined in each window4 entry (as gcc inlined it into the one entry there was before
 * they were named); on the Cortex-M7 (EDGEC_CPU_CORTEX_M7, which the firmware build defines: edgec/targets/firmware.py
 * core_define) the entries of the blocks in assembly call it out of line instead (edgec_window_row_x2_call, in
 * edgec_window_run): gcc schedules it inlined there for -mcpu=cortex-m7 into more instructions than the M4's (IC on
 * qemu-cortex-m7 +0.5 %), on the M4 out of line costs more (docs/performance.md, h47-flash and h48-m7). */
EDGEC_INLINE void edgec_window_row_x2(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy, int32_t x0,
                                      int32_t wp, int32_t c4, edgec_w32 *dst, int32_t gap)
{
    edgec_window_row_as(p, input, iy, x0, wp, c4, dst, gap, 1);
}
#if defined(EDGEC_CPU_CORTEX_M7)
static EDGEC_NOINLINE void edgec_window_row_x2_call(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy,
                                                    int32_t x0, int32_t wp, int32_t c4, edgec_w32 *dst, int32_t gap)
{
    edgec_window_row_as(p, input, iy, x0, wp, c4, dst, gap, 1);
}
#endif

/* Drop the first k_h - keep rows of every entry of the ring (entries x k_h slots of c4 words): each entry's last
 * keep slots move to its first (forward word copies: the destination is below the source). On the native DSP
 * path, where they are whole blocks of 8 words, one block of assembly: per 8 words LDM and STM, per 8 or 16 a CMP
 * and BNE, per entry 7 (gcc's loop around the fixed registers of edgec_win_move8 spent about 25 an entry). */
static void edgec_window_shift(edgec_w32 *ring, int32_t entries, int32_t c4, int32_t k_h, int32_t keep)
{
    const int32_t n = keep * c4, span = k_h * c4;
    edgec_w32 *dst = ring;
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
#define EDGEC_WIN_SHIFT8                                                                           \
    "ldmia %[s]!, {%[a], %[b], %[c], %[f], %[g], %[h], %[i], %[j]}\n\t"                           \
    "stmia %[d]!, {%[a], %[b], %[c], %[f], %[g], %[h], %[i], %[j]}\n\t"
#define EDGEC_WIN_SHIFT_ASM(moves)                                                                 \
    __asm__ volatile("1:\n\t"                                                                     \
                     "ldr %[s], %[skip]\n\t"                                                     \
                     "add %[s], %[d], %[s]\n\t"                                                  \
                     "ldr %[e], %[bytes]\n\t"                                                    \
                     "add %[e], %[d], %[e]\n\t"                                                  \
                     "2:\n\t" moves "cmp %[d], %[e]\n\t"                                         \
                     "bne 2b\n\t"                                                                \
                     "mov %[d], %[s]\n\t" /* the source ended at the next entry */               \
                     "subs %[k], %[k], #1\n\t"                                                   \
                     "bne 1b"                                                                     \
                     : [d] "+r"(dst), [k] "+r"(entries), [s] "=&r"(src), [e] "=&r"(end), [a] "=&r"(r4), \
                       [b] "=&r"(r5), [c] "=&r"(r6), [f] "=&r"(r8), [g] "=&r"(r10), [h] "=&r"(r11),   \
                       [i] "=&r"(r12), [j] "=&r"(r14)                                              \
                     : [skip] "m"(skip), [bytes] "m"(bytes)                                        \
                     : "cc", "memory")
    if ((n & 7) == 0 && entries > 0) {
        register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");
        register uint32_t r10 __asm__("r10"), r11 __asm__("r11"), r12 __asm__("r12"), r14 __asm__("r14");
        const int32_t skip = 4 * (span - n), bytes = 4 * n;
        const edgec_w32 *src;
        const edgec_w32 *end;
        if ((n & 15) == 0) { /* 16 words a pass */
            EDGEC_WIN_SHIFT_ASM(EDGEC_WIN_SHIFT8 EDGEC_WIN_SHIFT8);
        } else {
            EDGEC_WIN_SHIFT_ASM(EDGEC_WIN_SHIFT8);
        }
        return;
    }
#endif
    for (; entries > 0; --entries, dst += span) {
        edgec_w32 *d = dst;
        const edgec_w32 *src = dst + span - n;
        int32_t m = n;
        for (; m >= 8; m -= 8) edgec_win_move8(&d, &src);
        if (m) edgec_win_move4(&d, &src);
    }
}

/* 2x4 block (edgec_conv2d_window4_s8): `blocks` blocks of 4 output channels of 2 pixels whose taps are the n words
 * from x0 (n a multiple of 4), each block's weights its 4 doubled biases then 2 * n words; `clamp` of v_. */
#define EDGEC_WIN4_PIXELS(name, clamp)                                                             \
    static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, const edgec_w32 *w, const edgec_rq *q,  \
                               int32_t blocks, int8_t *o0, int8_t *o1, int32_t lo, int32_t hi)     \
    {                                                                                              \
        const edgec_w32 *const end16 = x0 + (n & ~15);                                             \
        for (; blocks > 0; --blocks, q += 4, o0 += 4, o1 += 4) {                                   \
            int32_t a0 = (int32_t)w[0], a1 = (int32_t)w[1], a2 = (int32_t)w[2], a3 = (int32_t)w[3];    \
            int32_t b0 = a0, b1 = a1, b2 = a2, b3 = a3;                                            \
            const edgec_w32 *x = x0;                                                               \
            EDGEC_B24_REGS                                                                         \
            w += 4;                                                                                \
            EDGEC_B24_CHUNKS16(end16);                                                             \
            if (n & 8) {                                                                           \
                EDGEC_B24_GROUP(0);                                                                \
                EDGEC_B24_GROUP(1);                                                                \
                x += 8;                                                                            \
                w += 16;                                                                           \
            }                                                                                      \
            if (n & 4) {                                                                           \
                EDGEC_B24_GROUP(0);                                                                \
                w += 8;                                                                            \
            }                                                                                      \
            EDGEC_B24_STORE(a0, b0, 0, clamp);                                                     \
            EDGEC_B24_STORE(a1, b1, 1, clamp);                                                     \
            EDGEC_B24_STORE(a2, b2, 2, clamp);                                                     \
            EDGEC_B24_STORE(a3, b3, 3, clamp);                                                     \
        }                                                                                          \
        (void)lo;                                                                                  \
        (void)hi;                                                                                  \
    }
EDGEC_WIN4_PIXELS(edgec_window4_pixels_full, EDGEC_SAT8(v_))
EDGEC_WIN4_PIXELS(edgec_window4_pixels_clamped, EDGEC_WIN_CLAMP)

/* A row of pixel pairs on the 2x4 block (EDGEC_WIN4_ASM_ROW): (columns, column words, weights, records, blocks, o0,
 * out_c, pairs, column bytes a pair) */
typedef void (*edgec_win4_row_fn)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, int32_t, int8_t *,
                                  int32_t, int32_t, int32_t);

/* The full-range 2x4 block on the Arm build: one block of assembly for the whole loop over the blocks
 * (EDGEC_B24_ASM_PIXELS, fast/edgec_conv_block2x4.h): n a multiple of 16, or 4 or 8 more (a tail of 2 or 4 k-steps);
 * `_all` where every record's neg is -1. */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16, EDGEC_B24_ASM_LOOP16, "", EDGEC_B24_RQ_ANY)
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16_all, EDGEC_B24_ASM_LOOP16, "", EDGEC_B24_RQ_ALL)

/* EDGEC_B24_ASM_PIXELS (fast/edgec_conv_block2x4.h) with EDGEC_B24_RQ_ALL over `pairs` pixel pairs of one output
 * row in one block of assembly: after a pair's blocks (the last one's weights end at wend), the columns move on by
 * xstep bytes, the outputs by out_c bytes more than the blocks' 4 each, and the weights and records start again
 * (per pair about 20 instructions instead of the C loop's call with its 9 arguments and the function's entry).
 * Every pair has both pixels (pixel 1's word stored out_c bytes after pixel 0's) and out_c is a multiple of 4; the
 * records' neg all -1 (the requantization leaves w alone: no save of it). */
/* The block's start: EDGEC_WIN_ASM_FIRST's SMLADs write pixel 1's sums from pixel 0's, which hold the biases (as
 * blocked4's EDGEC_B4_FIRST; row48 copied them with 4 MOVs before its loop until h50-margin) */
#define EDGEC_WIN_ASM_FIRST                                                                        \
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
#define EDGEC_WIN4_ASM_ROW(name, init, loop, tail)                                                                          \
static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, const edgec_w32 *w0, const edgec_rq *q0, int32_t blocks,    \
                           int8_t *o0, int32_t out_c, int32_t pairs, int32_t xstep)                                    \
{                                                                                                                      \
    const edgec_w32 *end16 = x0 + (n & ~15), *x, *w;                                                                   \
    const edgec_w32 *const wend = w0 + blocks * (4 + 2 * n);                                                           \
    const edgec_w32 *const x0end = (const edgec_w32 *)(const void *)((const char *)x0 + pairs * xstep);               \
    const edgec_rq *q = q0;                                                                                            \
    uint32_t a0, a1, a2, a3, b0, b1, b2, b3, xa, xb, wa, wb;                                                           \
    if (blocks <= 0 || pairs <= 0) return;                                                                             \
    __asm__ volatile("ldr %[w], %[w0]\n\t"                                                                             \
                     "ldr %[x], %[x0]\n\t" /* x0 in x at each block's start (reloaded before its BNE) */               \
                     "2:\n\t"                                                                                          \
                     "ldrd %[a0], %[a1], [%[w]], #8\n\t"                                                               \
                     "ldrd %[a2], %[a3], [%[w]], #8\n\t"                                                               \
                     init                                                                                              \
                     loop tail                                                                                         \
                     "ldr %[x], %[q]\n\t"                                                                              \
                     EDGEC_B24_RQ_ALL(a0, b0, 0) EDGEC_B24_RQ_ALL(a1, b1, 20) EDGEC_B24_RQ_ALL(a2, b2, 40)             \
                     EDGEC_B24_RQ_ALL(a3, b3, 60)                                                                      \
                     "add %[x], %[x], #80\n\t"                                                                         \
                     "ldr %[xa], %[o0]\n\t" /* the loads in a row, then the stores in a row: each pipelines */        \
                     "ldr %[xb], %[outc]\n\t"                                                                          \
                     "ldr %[wa], %[wend]\n\t"                                                                          \
                     "cmp %[w], %[wa]\n\t" /* the flags stay until the BNE: nothing below sets them */                 \
                     "bfi %[b0], %[b1], #8, #8\n\t" /* the 4 bytes of a pixel in one word */                           \
                     "bfi %[b0], %[b2], #16, #8\n\t"                                                                   \
                     "bfi %[b0], %[b3], #24, #8\n\t"                                                                   \
                     "bfi %[a0], %[a1], #8, #8\n\t"                                                                    \
                     "bfi %[a0], %[a2], #16, #8\n\t"                                                                   \
                     "bfi %[a0], %[a3], #24, #8\n\t"                                                                   \
                     "str %[b0], [%[xa], %[xb]]\n\t"                                                                   \
                     "str %[a0], [%[xa]], #4\n\t"                                                                      \
                     "str %[xa], %[o0]\n\t"                                                                            \
                     "str %[x], %[q]\n\t"                                                                              \
                     "ldr %[x], %[x0]\n\t" /* the next block's columns: after the stores */                           \
                     "bne 2b\n\t"                                                                                      \
                     "ldr %[xb], %[xstep]\n\t" /* the next pair */                                                     \
                     "ldr %[xa], %[end]\n\t"                                                                           \
                     "add %[xa], %[xa], %[xb]\n\t"                                                                     \
                     "str %[xa], %[end]\n\t"                                                                           \
                     "add %[x], %[x], %[xb]\n\t"                                                                       \
                     "str %[x], %[x0]\n\t"                                                                             \
                     "ldr %[wa], %[x0end]\n\t"                                                                         \
                     "cmp %[x], %[wa]\n\t"                                                                             \
                     "beq 3f\n\t"                                                                                      \
                     "ldr %[w], %[w0]\n\t"                                                                             \
                     "ldr %[xa], %[q0]\n\t"                                                                            \
                     "str %[xa], %[q]\n\t"                                                                             \
                     "ldr %[xb], %[outc]\n\t"                                                                          \
                     "ldr %[xa], %[o0]\n\t"                                                                            \
                     "add %[xa], %[xa], %[xb]\n\t"                                                                     \
                     "str %[xa], %[o0]\n\t"                                                                            \
                     "b 2b\n\t"                                                                                        \
                     "3:"                                                                                              \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [b0] "=&r"(b0),                 \
                       [b1] "=&r"(b1), [b2] "=&r"(b2), [b3] "=&r"(b3), [x] "=&r"(x), [w] "=&r"(w), [xa] "=&r"(xa),     \
                       [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb), [q] "+m"(q), [o0] "+m"(o0), [x0] "+m"(x0),      \
                       [end] "+m"(end16)                                                                               \
                     : [w0] "m"(w0), [q0] "m"(q0), [wend] "m"(wend), [xstep] "m"(xstep), [outc] "m"(out_c),           \
                       [x0end] "m"(x0end)                                                                              \
                     : "cc", "memory");                                                                                \
}
/* row48's taps, n a multiple of 48 (a 3x3 kernel over a multiple of 16 channels: IC's layers): 48 words a pass,
 * one check of the end for 24 k-steps instead of 8 (IC on qemu-cortex-m4: 184 k instructions less). The block starts
 * with EDGEC_WIN_ASM_FIRST (pixel 1's sums start from pixel 0's biases in its SMLADs: no copy of them), then jumps
 * into the loop past its first k-step (4 MOVs replaced by one branch: 3 instructions and about
 * a cycle a block fewer; IC on qemu-cortex-m4 -21.5 k instructions; the loop itself unchanged, so the code that a
 * part's 1 KB instruction cache holds stays as it was: a straight first pass, 1 KB more, cost the NUCLEO-L4R5ZI
 * estimate of code in flash 4.7 % on IC) */
#define EDGEC_WIN_ASM_FIRST48                                                                      \
    EDGEC_WIN_ASM_FIRST "b 4f\n\t"                                                                   \
    "1:\n\t" EDGEC_B24_ASM_STEP "4:\n\t" EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP       \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
        "ldr %[xa], %[end]\n\t"                                                                    \
        "cmp %[x], %[xa]\n\t"                                                                      \
        "bne 1b\n\t"
EDGEC_WIN4_ASM_ROW(edgec_window4_row48_all, "", EDGEC_WIN_ASM_FIRST48, "")
/* n = 36 (3 or 4 input channels, 3x3: an image model's first layer): the 18 k-steps without a loop */
#define EDGEC_WIN_ASM_STEPS36                                                                      \
    EDGEC_WIN_ASM_FIRST EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP      \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
            EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP                 \
                EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP
EDGEC_WIN4_ASM_ROW(edgec_window4_row36_all, "", EDGEC_WIN_ASM_STEPS36, "")
/* n = 16k + 4 (an image model's 3-channel first layer: 36 taps a pixel): a group of 4 taps after the passes */
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16t4, EDGEC_B24_ASM_LOOP16, EDGEC_B24_ASM_TAIL4, EDGEC_B24_RQ_ANY)
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16t4_all, EDGEC_B24_ASM_LOOP16, EDGEC_B24_ASM_TAIL4, EDGEC_B24_RQ_ALL)
/* n = 16k + 8 */
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16t8, EDGEC_B24_ASM_LOOP16, EDGEC_B24_ASM_TAIL8, EDGEC_B24_RQ_ANY)
EDGEC_B24_ASM_PIXELS(edgec_window4_pixels_full16t8_all, EDGEC_B24_ASM_LOOP16, EDGEC_B24_ASM_TAIL8, EDGEC_B24_RQ_ALL)
#else
#define edgec_window4_pixels_full16 edgec_window4_pixels_full
#define edgec_window4_pixels_full16t4 edgec_window4_pixels_full
#define edgec_window4_pixels_full16t8 edgec_window4_pixels_full
#define edgec_window4_pixels_full16_all edgec_window4_pixels_full
#define edgec_window4_pixels_full16t4_all edgec_window4_pixels_full
#define edgec_window4_pixels_full16t8_all edgec_window4_pixels_full
#endif

/* The loop a window4 call runs on, named by the entry the generated code calls (edgec/ops/conv/im2col.py
 * window4_loop, from the layer's params and records, as edgec_window4_pick and edgec_window4_pick_row choose at run
 * time): a clamped range's C pixels; the full range's C pixels (n not one the assembly takes); the assembly by n's
 * rest modulo 16 (0, 4, 8) and whether every record's neg is -1 (`_ALL`); the row assembly over a row's pairs (n a
 * multiple of 48 or 36; out_c a multiple of 4, every neg -1) with the pixels it leaves to the 16-word (tail 4)
 * assembly. A constant where edgec_window_run is inlined, so a firmware links only the blocks its layers name
 * (--gc-sections drops the others: up to 7 kB); EDGEC_W4_CHOOSE: chosen at run time (edgec_conv2d_window4_s8). */
enum {
    EDGEC_W4_CHOOSE,
    EDGEC_W4_CLAMPED,
    EDGEC_W4_FULL,
    EDGEC_W4_K16,
    EDGEC_W4_K16_ALL,
    EDGEC_W4_K16T4,
    EDGEC_W4_K16T4_ALL,
    EDGEC_W4_K16T8,
    EDGEC_W4_K16T8_ALL,
    EDGEC_W4_ROW48,
    EDGEC_W4_ROW36
};

/* The 2x4 block function for a layer: the assembly where the range is full int8 and n suits it, `_all` where every
 * record's neg is -1 (checked once a call); `loop` the named one, or EDGEC_W4_CHOOSE */
EDGEC_INLINE edgec_b24_pixels_fn edgec_window4_pick(const edgec_conv2d_im2col_params *p, const edgec_rq *rq,
                                                    int32_t n, const int loop)
{
    int negs = 1;
    int32_t j;
    switch (loop) {
    case EDGEC_W4_CLAMPED: return edgec_window4_pixels_clamped;
    case EDGEC_W4_FULL: return edgec_window4_pixels_full;
    case EDGEC_W4_K16: return edgec_window4_pixels_full16;
    case EDGEC_W4_K16_ALL:
    case EDGEC_W4_ROW48: return edgec_window4_pixels_full16_all;
    case EDGEC_W4_K16T4: return edgec_window4_pixels_full16t4;
    case EDGEC_W4_K16T4_ALL:
    case EDGEC_W4_ROW36: return edgec_window4_pixels_full16t4_all;
    case EDGEC_W4_K16T8: return edgec_window4_pixels_full16t8;
    case EDGEC_W4_K16T8_ALL: return edgec_window4_pixels_full16t8_all;
    default: break;
    }
    if (p->act_min != -128 || p->act_max != 127) return edgec_window4_pixels_clamped;
    for (j = 0; j < p->out_c && negs; ++j) negs = rq[j].neg == -1; /* stops at the first 0 */
    if ((n & 15) == 0) return negs ? edgec_window4_pixels_full16_all : edgec_window4_pixels_full16;
    if ((n & 15) == 4) return negs ? edgec_window4_pixels_full16t4_all : edgec_window4_pixels_full16t4;
    if ((n & 15) == 8 && n > 16) return negs ? edgec_window4_pixels_full16t8_all : edgec_window4_pixels_full16t8;
    return edgec_window4_pixels_full;
}

/* The row function for a layer (EDGEC_WIN4_ASM_ROW): the assembly over a row's pairs where the range is full int8,
 * out_c a multiple of 4 and n suits it; else 0 (every pair through edgec_window4_pair); `loop` as above */
EDGEC_INLINE edgec_win4_row_fn edgec_window4_pick_row(const edgec_conv2d_im2col_params *p, const edgec_rq *rq,
                                                      int32_t n, const int loop)
{
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
    int negs = 1;
    int32_t j;
    if (loop == EDGEC_W4_ROW48) return edgec_window4_row48_all;
    if (loop == EDGEC_W4_ROW36) return edgec_window4_row36_all;
    if (loop != EDGEC_W4_CHOOSE) return 0;
    if (p->act_min != -128 || p->act_max != 127 || (p->out_c & 3) != 0) return 0;
    for (j = 0; j < p->out_c && negs; ++j) negs = rq[j].neg == -1; /* stops at the first 0 */
    if (!negs) return 0;
    if (n % 48 == 0) return edgec_window4_row48_all;
    if (n == 36) return edgec_window4_row36_all;
#else
    (void)p;
    (void)rq;
    (void)n;
    (void)loop;
#endif
    return 0;
}

/* All output channels of one pixel pair on the 2x4 block (`pixels`: edgec_window4_pick's); the last out_c % 4
 * channels (their block padded with copies of the last channel) through a buffer. Inlined in both its callers
 * (window4's loop and rgb3x3's): a call of its own (gcc's choice once it had two) was one more frame on the stack
 * (72 B) and a call a pair. */
EDGEC_INLINE void edgec_window4_pair(const edgec_conv2d_im2col_params *p, edgec_b24_pixels_fn pixels, const edgec_w32 *cols,
                                     int32_t n, const edgec_w32 *w, const edgec_rq *rq, int8_t *o0, int8_t *o1)
{
    const int32_t out_c = p->out_c, blocks = out_c >> 2, rest = out_c & 3, lo = p->act_min, hi = p->act_max;
    int32_t i;
    pixels(cols, n, w, rq, blocks, o0, o1, lo, hi);
    if (rest) {
        int8_t t[8];
        pixels(cols, n, w + blocks * (4 + 2 * n), rq + 4 * blocks, 1, t, t + 4, lo, hi);
        for (i = rest - 1; i >= 0; --i) { /* pixel 1 first: a lone last pixel's o1 is o0 */
            o1[4 * blocks + i] = t[4 + i];
            o0[4 * blocks + i] = t[i];
        }
    }
}

/* The kernels' loop over column bands, output rows and pixel pairs: x2 (a constant where it is inlined) the 2x4
 * block and its layout of the widened rows, else the 2x2 block. A band is band_w output columns (the last one what
 * is left; band_w out_w: whole rows, every input row widened once): the ring holds the band's input columns only,
 * and the k_w - stride_w columns where two bands meet are widened twice (edgec/ops/conv/im2col.py
 * window_band: the plan narrows the band where the ring would raise the arena's peak). The ring is entry by entry
 * (entry e: the band's pixel pair e), each entry the k_h rows of the window top to bottom, c4 words a row: the
 * taps of an output pixel pair are then k_w * k_h * c4 contiguous words from its first entry, in the weights'
 * order [kx][ky][c4], read in place. A new output row moves the rows it keeps to the front of each entry
 * (edgec_window_shift) and widens the new ones behind them. */
EDGEC_INLINE void edgec_window_run(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                   const edgec_rq *rq, int8_t *scratch, int8_t *output, const int x2, const int loop)
{
    const int32_t c4 = (p->in_c + 3) & ~3, k_h = p->k_h, out_w = p->out_w, out_c = p->out_c, sh = p->stride_h;
    const int32_t bw = p->band_w < 1 ? 1 : (p->band_w < out_w ? p->band_w : out_w);
    const int32_t span = k_h * c4, step = p->stride_w * span, gap = span - c4, n = p->k_w * span;
    const int full = p->act_min == -128 && p->act_max == 127;
    const edgec_window_pixels_fn pixels = n == 36 ? (full ? edgec_window_pixels_rgb_full
                                                          : edgec_window_pixels_rgb_clamped)
                                                  : (full ? edgec_window_pixels_full : edgec_window_pixels_clamped);
    const edgec_b24_pixels_fn pixels4 = x2 ? edgec_window4_pick(p, rq, n, loop) : 0;
    const edgec_win4_row_fn row4 = x2 ? edgec_window4_pick_row(p, rq, n, loop) : 0;
    edgec_w32 *ring = (edgec_w32 *)(void *)scratch;
    int32_t bx, oy, ox, j;
    for (bx = 0; bx < out_w; bx += bw) {
        const int32_t bn = out_w - bx < bw ? out_w - bx : bw; /* the band's output columns */
        const int32_t x0 = bx * p->stride_w - p->pad_left, wb = (bn - 1) * p->stride_w + p->k_w;
        int32_t next = 0; /* after the first output row: the ring holds input rows next - k_h .. next - 1 */
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t iy0 = oy * sh - p->pad_top;
            int32_t keep = oy == 0 ? 0 : next - iy0;
            if (keep < 0) keep = 0;
            if (keep > 0) edgec_window_shift(ring, wb, c4, k_h, keep);
            for (j = keep; j < k_h; ++j) {
#if defined(EDGEC_CPU_CORTEX_M7) /* out of line for the assembly's entries; the C pixels' (full, clamped) inline it:
                                   * out of line, keras_old_quantizer_har_cnn ran 205 instructions more */
                if (x2 && loop != EDGEC_W4_FULL && loop != EDGEC_W4_CLAMPED) {
                    edgec_window_row_x2_call(p, input, iy0 + j, x0, wb, c4, ring + j * c4, gap);
                } else
#endif
                if (x2) {
                    edgec_window_row_x2(p, input, iy0 + j, x0, wb, c4, ring + j * c4, gap);
                } else {
                    edgec_window_row(p, input, iy0 + j, x0, wb, c4, ring + j * c4, gap);
                }
            }
            next = iy0 + k_h;
            ox = 0;
            if (row4) { /* the pairs with both pixels in one call */
                row4(ring, n, (const edgec_w32 *)weights, rq, out_c >> 2, output + (oy * out_w + bx) * out_c, out_c,
                     bn >> 1, 8 * step);
                ox = bn & ~1;
            }
            for (; ox < bn; ox += 2) {
                const int two = bn - ox > 1; /* a lone last pixel is computed twice and stored once */
                int8_t *o = output + (oy * out_w + bx + ox) * out_c;
                const edgec_w32 *cols = ring + ox * step;
                if (x2) {
                    edgec_window4_pair(p, pixels4, cols, n, (const edgec_w32 *)weights, rq, o, o + two * out_c);
                } else {
                    pixels(cols, n, (const edgec_w32 *)weights, rq, out_c, o, o + two * out_c, p->act_min,
                           p->act_max);
                }
            }
        }
    }
}

void edgec_conv2d_window_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_window_run(p, input, weights, rq, scratch, output, 0, EDGEC_W4_CHOOSE);
}

void edgec_conv2d_window4_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                             const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_window_run(p, input, weights, rq, scratch, output, 1, EDGEC_W4_CHOOSE);
}

/* The entries the generated code calls (edgec/ops/conv/im2col.py window4_entry): one a loop (the enum above), decided
 * when the model is built from the layer's params and records, each computing what edgec_conv2d_window4_s8 computes
 * for params and records of its kind and linking only its own blocks. */
#define EDGEC_W4_ARGS \
    const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights, const edgec_rq *rq, \
        int8_t *scratch, int8_t *output
#define EDGEC_W4_ENTRY_RUN(loop) edgec_window_run(p, input, weights, rq, scratch, output, 1, loop)
void edgec_conv2d_window4_clamped_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_CLAMPED); }
void edgec_conv2d_window4_full_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_FULL); }
void edgec_conv2d_window4_k16_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16); }
void edgec_conv2d_window4_k16_all_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16_ALL); }
void edgec_conv2d_window4_k16t4_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16T4); }
void edgec_conv2d_window4_k16t4_all_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16T4_ALL); }
void edgec_conv2d_window4_k16t8_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16T8); }
void edgec_conv2d_window4_k16t8_all_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_K16T8_ALL); }
void edgec_conv2d_window4_row48_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_ROW48); }
void edgec_conv2d_window4_row36_s8(EDGEC_W4_ARGS) { EDGEC_W4_ENTRY_RUN(EDGEC_W4_ROW36); }

/* ---- edgec_conv2d_rgb3x3_s8: a 3x3 convolution of a 3-channel input (an image model's first layer; packing in
 * edgec/ops/conv/rgb3x3.py). A kernel row of an output pixel is 9 contiguous input bytes (3 pixels x 3 channels),
 * so the window's 27 taps are read straight from the input as 6 unaligned words (bytes 0-3 and 4-7 of each kernel
 * row) and the 3 bytes 8, widened as the 2x4 block reads them (edgec_win_widen2x): 28 taps a pixel (one zero
 * weight), 14 k-steps, not window4's 36 taps of channels padded to 4 (18 k-steps) and its ring of widened rows.
 * The taps of an output row's pixel pairs go to scratch, 28 words a pair, and one call of the 2x4 block's row
 * assembly runs all the row's pairs (edgec_window4_row28_all; elsewhere edgec_window4_pair pair by pair); with
 * band_w below out_w (the plan's narrowing: edgec/ops/conv/rgb3x3.py rgb3x3_band), a column band's pairs at a time
 * (edgec_conv2d_rgb3x3_banded_s8), the same numbers with (band_w + 1) / 2 pairs' taps in scratch. Kernel
 * rows outside the image read a row of zero points (after the pairs' taps in scratch); pixels whose window crosses
 * the left or right edge are copied with zero points into a 9-byte row each first. */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
#define EDGEC_WIN_ASM_STEPS28                                                                      \
    EDGEC_WIN_ASM_FIRST EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP      \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP  \
            EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP
EDGEC_WIN4_ASM_ROW(edgec_window4_row28_all, "", EDGEC_WIN_ASM_STEPS28, "")
#endif

/* the 4 bytes at s as a little-endian word (unaligned) */
EDGEC_INLINE uint32_t edgec_rgb_word(const int8_t *s)
{
#ifdef EDGEC_DSP_NATIVE
    uint32_t v;
    memcpy(&v, s, 4);
    return v;
#else
    return (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[1] << 8 | (uint32_t)(uint8_t)s[2] << 16 |
           (uint32_t)(uint8_t)s[3] << 24;
#endif
}

/* int16 a in the low half, b in the high half */
EDGEC_INLINE uint32_t edgec_rgb_halves(int32_t a, int32_t b)
{
    return (uint32_t)(uint16_t)(int16_t)a | (uint32_t)(uint16_t)(int16_t)b << 16;
}

/* The 28 words of taps of a pixel pair: pixel 0's kernel rows at a0, a1, a2, pixel 1's at b0, b1, b2 (9 bytes each):
 * per row the groups of bytes 0-3 and 4-7, then the group (row 0's byte 8, row 1's, row 2's, 0), as the 2x4 block
 * reads a group: (t0, t2) of both pixels, then (t1, t3) of both (the 4th tap is junk that a zero weight meets). */
EDGEC_INLINE void edgec_rgb_pair(const int8_t *a0, const int8_t *a1, const int8_t *a2, const int8_t *b0,
                                 const int8_t *b1, const int8_t *b2, edgec_w32 *dst)
{
    edgec_win_widen2x(&dst, edgec_rgb_word(a0), edgec_rgb_word(b0));
    edgec_win_widen2x(&dst, edgec_rgb_word(a0 + 4), edgec_rgb_word(b0 + 4));
    edgec_win_widen2x(&dst, edgec_rgb_word(a1), edgec_rgb_word(b1));
    edgec_win_widen2x(&dst, edgec_rgb_word(a1 + 4), edgec_rgb_word(b1 + 4));
    edgec_win_widen2x(&dst, edgec_rgb_word(a2), edgec_rgb_word(b2));
    edgec_win_widen2x(&dst, edgec_rgb_word(a2 + 4), edgec_rgb_word(b2 + 4));
    dst[0] = edgec_rgb_halves(a0[8], a2[8]);
    dst[1] = edgec_rgb_halves(b0[8], b2[8]);
    dst[2] = (uint32_t)(int32_t)a1[8];
    dst[3] = (uint32_t)(int32_t)b1[8];
}

/* `count` pixel pairs whose windows are inside the image columns, pair by pair as edgec_rgb_pair lays them out: pixel
 * 0's kernel rows at a, b, c (advanced by 2t bytes a pair), pixel 1's t = 3 * stride_w bytes further. On the Arm
 * build one block of assembly for strides 1 and 2 (the offsets immediates): 56 instructions a pair, gcc's C about
 * 100 (it kept the 6 row pointers on the stack). */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
#define EDGEC_RGB_KROW(r, t)                                                                                          \
    "ldr %[x], [%[" #r "]]\n\t"                                                                                      \
    "ldr %[y], [%[" #r "], #" #t "]\n\t"                                                                              \
    "sxtb16 %[d0], %[x]\n\tsxtb16 %[d1], %[y]\n\tsxtb16 %[d2], %[x], ror #8\n\tsxtb16 %[d3], %[y], ror #8\n\t"      \
    "stmia %[o]!, {%[d0], %[d1], %[d2], %[d3]}\n\t"                                                                   \
    "ldr %[x], [%[" #r "], #4]\n\t"                                                                                   \
    "ldr %[y], [%[" #r "], #" #t "+4]\n\t"                                                                            \
    "sxtb16 %[d0], %[x]\n\tsxtb16 %[d1], %[y]\n\tsxtb16 %[d2], %[x], ror #8\n\tsxtb16 %[d3], %[y], ror #8\n\t"      \
    "stmia %[o]!, {%[d0], %[d1], %[d2], %[d3]}\n\t"
#define EDGEC_RGB_PAIRS(name, t)                                                                                      \
    static void name(const int8_t *a, const int8_t *b, const int8_t *c, edgec_w32 *dst, int32_t count)                 \
    {                                                                                                                  \
        register uint32_t r4 __asm__("r4"), r5 __asm__("r5"), r6 __asm__("r6"), r8 __asm__("r8");                      \
        uint32_t x, y;                                                                                                 \
        if (count <= 0) return;                                                                                        \
        __asm__ volatile("1:\n\t" EDGEC_RGB_KROW(a, t) EDGEC_RGB_KROW(b, t) EDGEC_RGB_KROW(c, t)                        \
                         "ldrsb %[d0], [%[a], #8]\n\t" /* (row 0's byte 8, row 2's) of both, row 1's of both */      \
                         "ldrsb %[d2], [%[c], #8]\n\t"                                                                \
                         "pkhbt %[d0], %[d0], %[d2], lsl #16\n\t"                                                     \
                         "ldrsb %[d1], [%[a], #" #t "+8]\n\t"                                                         \
                         "ldrsb %[d3], [%[c], #" #t "+8]\n\t"                                                         \
                         "pkhbt %[d1], %[d1], %[d3], lsl #16\n\t"                                                     \
                         "ldrsb %[d2], [%[b], #8]\n\t"                                                                \
                         "ldrsb %[d3], [%[b], #" #t "+8]\n\t"                                                         \
                         "stmia %[o]!, {%[d0], %[d1], %[d2], %[d3]}\n\t"                                              \
                         "add %[a], %[a], #2*" #t "\n\t"                                                              \
                         "add %[b], %[b], #2*" #t "\n\t"                                                              \
                         "add %[c], %[c], #2*" #t "\n\t"                                                              \
                         "subs %[k], %[k], #1\n\t"                                                                    \
                         "bne 1b"                                                                                     \
                         : [o] "+r"(dst), [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [k] "+r"(count), [x] "=&r"(x),      \
                           [y] "=&r"(y), [d0] "=&r"(r4), [d1] "=&r"(r5), [d2] "=&r"(r6), [d3] "=&r"(r8)                \
                         :                                                                                             \
                         : "cc", "memory");                                                                            \
    }
EDGEC_RGB_PAIRS(edgec_rgb_pairs_s1, 3)
EDGEC_RGB_PAIRS(edgec_rgb_pairs_s2, 6)
#endif
EDGEC_INLINE void edgec_rgb_pairs(const int8_t *a, const int8_t *b, const int8_t *c, int32_t t, edgec_w32 *dst,
                                 int32_t count)
{
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
    if (t == 3) {
        edgec_rgb_pairs_s1(a, b, c, dst, count);
        return;
    }
    if (t == 6) {
        edgec_rgb_pairs_s2(a, b, c, dst, count);
        return;
    }
#endif
    for (; count > 0; --count, a += 2 * t, b += 2 * t, c += 2 * t, dst += 28) {
        edgec_rgb_pair(a, b, c, a + t, b + t, c + t, dst);
    }
}

/* The 9 bytes of kernel row `row` (input columns ix..ix + 2, 3 channels each) of a window crossing the left or
 * right edge, the columns outside the image the zero point zp */
static void edgec_rgb_edge_row(const int8_t *row, int32_t ix, int32_t in_w, int8_t zp, int8_t *dst)
{
    int32_t j, c;
    for (j = 0; j < 3; ++j) {
        for (c = 0; c < 3; ++c) dst[3 * j + c] = ix + j >= 0 && ix + j < in_w ? row[3 * (ix + j) + c] : zp;
    }
}

/* edgec_rgb_pair of a pair whose windows cross the left or right edge (pixels ix0, ix1 of the kernel rows r), through
 * 9-byte rows with zero points (a function of its own: its rows are on the stack only while it runs) */
static EDGEC_NOINLINE void edgec_rgb_edge_pair(const int8_t *const r[3], int32_t ix0, int32_t ix1, int32_t in_w,
                                               int8_t zp, edgec_w32 *dst)
{
    int8_t e[6][9];
    int32_t ky;
    for (ky = 0; ky < 3; ++ky) {
        edgec_rgb_edge_row(r[ky], ix0, in_w, zp, e[ky]);
        edgec_rgb_edge_row(r[ky], ix1, in_w, zp, e[3 + ky]);
    }
    edgec_rgb_pair(e[0], e[1], e[2], e[3], e[4], e[5], dst);
}

/* rgb3x3's loops (edgec/ops/conv/rgb3x3.py rgb3x3_entry): a clamped range's C pixels, the full range's, the full
 * range's row assembly (out_c a multiple of 4, every record's neg -1; a lone last pixel on the C pixels); a
 * constant where edgec_rgb3x3_run is inlined, or EDGEC_RGB_CHOOSE (edgec_conv2d_rgb3x3_s8) */
enum { EDGEC_RGB_CHOOSE, EDGEC_RGB_CLAMPED, EDGEC_RGB_FULL, EDGEC_RGB_ROW28 };
EDGEC_INLINE void edgec_rgb3x3_run(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                   const edgec_rq *rq, int8_t *scratch, int8_t *output, const int loop)
{
    const int32_t in_w = p->in_w, in_h = p->in_h, out_w = p->out_w, out_c = p->out_c, s = p->stride_w;
    const int32_t pairs = (out_w + 1) >> 1;
    const int8_t zp = (int8_t)p->input_zp;
    edgec_w32 *const cols = (edgec_w32 *)(void *)scratch;
    int8_t *const zprow = scratch + 112 * pairs;
    const int full = loop == EDGEC_RGB_CHOOSE ? p->act_min == -128 && p->act_max == 127 : loop != EDGEC_RGB_CLAMPED;
    /* edgec_window4_pick's choice for 28 words (not the function: it would link window4's other assembly) */
    const edgec_b24_pixels_fn pixels4 = full ? edgec_window4_pixels_full : edgec_window4_pixels_clamped;
    edgec_win4_row_fn row4 = 0;
    int32_t oy, i, ky, lo = 0, hi;
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
    if (loop == EDGEC_RGB_ROW28) row4 = edgec_window4_row28_all;
    if (loop == EDGEC_RGB_CHOOSE && full && (out_c & 3) == 0) { /* the row assembly where every record's neg is -1
                                                                  * (edgec_window4_pick_row's test) */
        for (i = 0; i < out_c && rq[i].neg == -1; ++i) {
        }
        if (i == out_c) row4 = edgec_window4_row28_all;
    }
#endif
    /* the pairs lo..hi - 1: both pixels' windows inside the image columns (every row alike) */
    while (lo < out_w >> 1 && 2 * lo * s - p->pad_left < 0) ++lo;
    hi = lo;
    while (hi < out_w >> 1 && (2 * hi + 1) * s - p->pad_left + 3 <= in_w) ++hi;
    memset(zprow, zp, (size_t)(3 * in_w));
    for (oy = 0; oy < p->out_h; ++oy) {
        const int8_t *r[3];
        int8_t *const o = output + oy * out_w * out_c;
        int32_t first = 0;
        for (ky = 0; ky < 3; ++ky) {
            const int32_t iy = oy * p->stride_h - p->pad_top + ky;
            r[ky] = iy >= 0 && iy < in_h ? input + iy * 3 * in_w : zprow;
        }
        if (hi > lo) {
            const int32_t x0 = 3 * (2 * lo * s - p->pad_left);
            edgec_rgb_pairs(r[0] + x0, r[1] + x0, r[2] + x0, 3 * s, cols + 28 * lo, hi - lo);
        }
        for (i = 0; i < pairs; ++i) {
            int32_t ix0, ix1;
            edgec_w32 *dst;
            if (i == lo) i = hi; /* the pairs edgec_rgb_pairs read */
            if (i >= pairs) break;
            ix0 = 2 * i * s - p->pad_left;
            ix1 = 2 * i + 1 < out_w ? ix0 + s : ix0;
            dst = cols + 28 * i;
            if (ix0 >= 0 && ix1 + 3 <= in_w) {
                edgec_rgb_pair(r[0] + 3 * ix0, r[1] + 3 * ix0, r[2] + 3 * ix0, r[0] + 3 * ix1, r[1] + 3 * ix1,
                               r[2] + 3 * ix1, dst);
            } else {
                edgec_rgb_edge_pair(r, ix0, ix1, in_w, zp, dst);
            }
        }
        if (row4) { /* the pairs with both pixels in one call */
            row4(cols, 28, (const edgec_w32 *)weights, rq, out_c >> 2, o, out_c, out_w >> 1, 112);
            first = out_w >> 1;
        }
        for (i = first; i < pairs; ++i) {
            int8_t *const o0 = o + 2 * i * out_c;
            edgec_window4_pair(p, pixels4, cols + 28 * i, 28, (const edgec_w32 *)weights, rq, o0,
                               2 * i + 1 < out_w ? o0 + out_c : o0);
        }
    }
}

/* edgec_rgb3x3_run on column bands (band_w below out_w: the plan's narrowing, edgec/ops/conv/rgb3x3.py rgb3x3_band):
 * per output row, a band's pixel pairs at a time, (band_w + 1) / 2 pairs' taps in scratch; the same numbers. A loop
 * of its own, so that the whole-row loops above keep their code, frame and instructions. */
EDGEC_INLINE void edgec_rgb3x3_bands(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                     const edgec_rq *rq, int8_t *scratch, int8_t *output, const int loop)
{
    const int32_t in_w = p->in_w, in_h = p->in_h, out_w = p->out_w, out_c = p->out_c, s = p->stride_w;
    const int32_t pairs = (out_w + 1) >> 1;
    /* a column band's pairs (band_w clamped to 1..out_w, as edgec_conv2d_rgb3x3_s8_get_buffer_size reads it) */
    const int32_t bp = ((p->band_w < 1 ? 1 : (p->band_w < out_w ? p->band_w : out_w)) + 1) >> 1;
    const int8_t zp = (int8_t)p->input_zp;
    edgec_w32 *const cols = (edgec_w32 *)(void *)scratch;
    int8_t *const zprow = scratch + 112 * bp;
    const int full = loop == EDGEC_RGB_CHOOSE ? p->act_min == -128 && p->act_max == 127 : loop != EDGEC_RGB_CLAMPED;
    /* edgec_window4_pick's choice for 28 words (not the function: it would link window4's other assembly) */
    const edgec_b24_pixels_fn pixels4 = full ? edgec_window4_pixels_full : edgec_window4_pixels_clamped;
    edgec_win4_row_fn row4 = 0;
    int32_t oy, i, ky, lo = 0, hi;
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__)
    if (loop == EDGEC_RGB_ROW28) row4 = edgec_window4_row28_all;
    if (loop == EDGEC_RGB_CHOOSE && full && (out_c & 3) == 0) { /* the row assembly where every record's neg is -1
                                                                  * (edgec_window4_pick_row's test) */
        for (i = 0; i < out_c && rq[i].neg == -1; ++i) {
        }
        if (i == out_c) row4 = edgec_window4_row28_all;
    }
#endif
    /* the pairs lo..hi - 1: both pixels' windows inside the image columns (every row alike) */
    while (lo < out_w >> 1 && 2 * lo * s - p->pad_left < 0) ++lo;
    hi = lo;
    while (hi < out_w >> 1 && (2 * hi + 1) * s - p->pad_left + 3 <= in_w) ++hi;
    memset(zprow, zp, (size_t)(3 * in_w));
    for (oy = 0; oy < p->out_h; ++oy) {
        const int8_t *r[3];
        int8_t *const o = output + oy * out_w * out_c;
        int32_t b0;
        for (ky = 0; ky < 3; ++ky) {
            const int32_t iy = oy * p->stride_h - p->pad_top + ky;
            r[ky] = iy >= 0 && iy < in_h ? input + iy * 3 * in_w : zprow;
        }
        for (b0 = 0; b0 < pairs; b0 += bp) { /* the band of pairs b0..b1 - 1: its taps at cols */
            const int32_t b1 = pairs - b0 < bp ? pairs : b0 + bp, in0 = lo > b0 ? lo : b0, in1 = hi < b1 ? hi : b1;
            int32_t first = b0;
            if (in1 > in0) {
                const int32_t x0 = 3 * (2 * in0 * s - p->pad_left);
                edgec_rgb_pairs(r[0] + x0, r[1] + x0, r[2] + x0, 3 * s, cols + 28 * (in0 - b0), in1 - in0);
            }
            for (i = b0; i < b1; ++i) {
                int32_t ix0, ix1;
                edgec_w32 *dst;
                if (i == in0 && in1 > in0) i = in1; /* the pairs edgec_rgb_pairs read */
                if (i >= b1) break;
                ix0 = 2 * i * s - p->pad_left;
                ix1 = 2 * i + 1 < out_w ? ix0 + s : ix0;
                dst = cols + 28 * (i - b0);
                if (ix0 >= 0 && ix1 + 3 <= in_w) {
                    edgec_rgb_pair(r[0] + 3 * ix0, r[1] + 3 * ix0, r[2] + 3 * ix0, r[0] + 3 * ix1, r[1] + 3 * ix1,
                                   r[2] + 3 * ix1, dst);
                } else {
                    edgec_rgb_edge_pair(r, ix0, ix1, in_w, zp, dst);
                }
            }
            if (row4) { /* the band's pairs with both pixels in one call */
                const int32_t both = (b1 < out_w >> 1 ? b1 : out_w >> 1) - b0;
                if (both > 0) {
                    row4(cols, 28, (const edgec_w32 *)weights, rq, out_c >> 2, o + 2 * b0 * out_c, out_c, both, 112);
                    first = b0 + both;
                }
            }
            for (i = first; i < b1; ++i) {
                int8_t *const o0 = o + 2 * i * out_c;
                edgec_window4_pair(p, pixels4, cols + 28 * (i - b0), 28, (const edgec_w32 *)weights, rq, o0,
                                   2 * i + 1 < out_w ? o0 + out_c : o0);
            }
        }
    }
}

void edgec_conv2d_rgb3x3_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                            const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    if (p->band_w < p->out_w) {
        edgec_conv2d_rgb3x3_banded_s8(p, input, weights, rq, scratch, output);
        return;
    }
    edgec_rgb3x3_run(p, input, weights, rq, scratch, output, EDGEC_RGB_CHOOSE);
}

/* the entries the generated code calls (edgec/ops/conv/rgb3x3.py rgb3x3_entry), each linking only its own loop */
void edgec_conv2d_rgb3x3_clamped_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                    const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_rgb3x3_run(p, input, weights, rq, scratch, output, EDGEC_RGB_CLAMPED);
}

void edgec_conv2d_rgb3x3_full_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                 const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_rgb3x3_run(p, input, weights, rq, scratch, output, EDGEC_RGB_FULL);
}

void edgec_conv2d_rgb3x3_row28_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                  const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_rgb3x3_run(p, input, weights, rq, scratch, output, EDGEC_RGB_ROW28);
}

void edgec_conv2d_rgb3x3_banded_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                                   const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    edgec_rgb3x3_bands(p, input, weights, rq, scratch, output, EDGEC_RGB_CHOOSE);
}
