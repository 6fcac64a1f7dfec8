/* edgec fast convolutions' taps (private to fast/): the k4 int8 taps of one output pixel of an im2col convolution,
 * shared by fast/edgec_conv2d_im2col.c and fast/edgec_conv2d_blocked.c. Static: each kernel file gets its own
 * copy, inlined where the compiler likes (the generic kernel compiles to the same code as before the speed
 * variants existed, so `--optimize size` firmware is no bigger). */
#ifndef EDGEC_CONV_TAPS_H
#define EDGEC_CONV_TAPS_H

#include "edgec_fast_support.h"

#include <stddef.h>
#include <string.h>

/* ---------------------------------------------------------------- copies */
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

/* ---------------------------------------------------------------- convolution */

/* The k4 int8 taps of output pixel (oy, ox) in weight order [ky][kx][ic]; padded taps hold the input
 * zero point (whose contribution the folded bias removes), taps past k_h*k_w*in_c hold 0. */
static const int8_t *edgec_conv_taps(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t oy,
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

#endif /* EDGEC_CONV_TAPS_H */
