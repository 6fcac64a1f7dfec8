/* Fixed-point streaming log-mel front end (see edgec_audio_frontend.h; NumPy twin:
 * edgec/targets/audio_frontend.py, which documents the scaling). */
#include "edgec_audio_frontend.h"

#include <string.h>

void edgec_afe_reset(edgec_afe_state *s) { memset(s, 0, sizeof *s); }

static uint32_t bit_reverse10(uint32_t i)
{
    i = (i & 0x155u) << 1 | (i >> 1 & 0x155u);     /* swap bits 0<->1, 2<->3, ... of a 10-bit index */
    i = (i & 0x333u) << 2 | (i >> 2 & 0x333u);
    i = (i & 0x0F0Fu) << 4 | (i >> 4 & 0x0F0Fu);
    i = (i & 0x00FFu) << 8 | (i >> 8 & 0x00FFu);   /* now the 16-bit reversal of i */
    return i >> 6 & 0x3FFu;
}

/* radix-2 decimation in time, unscaled, Q30 twiddles rounded once per complex product; the twiddle 1 (k = 0)
 * is exact: (b * 2^30 + 2^29) >> 30 == b, so those butterflies skip the multiplies */
static void fft(int32_t *re, int32_t *im)
{
    for (uint32_t half = 1; half < EDGEC_AFE_WINDOW; half *= 2) {
        uint32_t step = EDGEC_AFE_WINDOW / (2 * half);
        for (uint32_t a = 0; a < EDGEC_AFE_WINDOW; a += 2 * half) {
            uint32_t b = a + half;
            int32_t tr = re[b], ti = im[b], ar = re[a], ai = im[a];
            re[a] = ar + tr; im[a] = ai + ti;
            re[b] = ar - tr; im[b] = ai - ti;
        }
        for (uint32_t k = 1; k < half; k++) {
            int64_t wr = edgec_afe_cos[k * step], wi = edgec_afe_sin[k * step];
            for (uint32_t a = k; a < EDGEC_AFE_WINDOW; a += 2 * half) {
                uint32_t b = a + half;
                int64_t br = re[b], bi = im[b];
                int32_t tr = (int32_t)((br * wr - bi * wi + (1 << 29)) >> 30);
                int32_t ti = (int32_t)((br * wi + bi * wr + (1 << 29)) >> 30);
                int32_t ar = re[a], ai = im[a];
                re[a] = ar + tr; im[a] = ai + ti;
                re[b] = ar - tr; im[b] = ai - ti;
            }
        }
    }
}

static int clz64(uint64_t v)   /* v > 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(v);
#else
    int n = 0;
    while (!(v & 0x8000000000000000ull)) { v <<= 1; n++; }
    return n;
#endif
}

/* log2 of v > 0 in Q16: the integer part from the leading zeros, the fraction from the table */
static int64_t log2_q16(uint64_t v)
{
    int n = 63 - clz64(v);
    uint64_t m = n >= 30 ? v >> (n - 30) : v << (30 - n);       /* [2^30, 2^31) */
    uint32_t idx = (uint32_t)(m >> 24) & 63u, rem = (uint32_t)(m >> 8) & 0xFFFFu;
    int64_t lo = edgec_afe_log2[idx], hi = edgec_afe_log2[idx + 1];
    return ((int64_t)n << 16) + lo + (((hi - lo) * (int64_t)rem) >> 16);
}

void edgec_afe_hop(edgec_afe_state *s, const int16_t *hop, int8_t *out)
{
    memmove(s->samples, s->samples + EDGEC_AFE_HOP, EDGEC_AFE_HOP * sizeof s->samples[0]);
    memcpy(s->samples + EDGEC_AFE_HOP, hop, EDGEC_AFE_HOP * sizeof s->samples[0]);
    int32_t prev = s->previous;
    s->previous = s->samples[EDGEC_AFE_HOP - 1];
    for (uint32_t i = 0; i < EDGEC_AFE_WINDOW; i++) {
        int32_t x = s->samples[i];
        int64_t e = 32 * (int64_t)x - 31 * (int64_t)prev;    /* 2^20 * pre-emphasized sample, exact */
        prev = x;
        s->re[bit_reverse10(i)] = (int32_t)((e * edgec_afe_window[i] + (1 << 14)) >> 15);
        s->im[i] = 0;
    }
    fft(s->re, s->im);
    uint32_t w = 0;
    for (int j = 0; j < EDGEC_AFE_MELS; j++) {
        uint64_t acc = 0;
        for (int k = edgec_afe_mel_start[j]; k < edgec_afe_mel_start[j] + edgec_afe_mel_len[j]; k++) {
            int64_t r = s->re[k], i = s->im[k];
            uint64_t power = (uint64_t)(r * r) + (uint64_t)(i * i);
            acc += (power >> 16) * (uint64_t)edgec_afe_mel_weights[w++];
        }
        int64_t y = 0;
        if (acc) y = ((edgec_afe_a_q24 * log2_q16(acc) + (1 << 23)) >> 24) + edgec_afe_b_q16;
        if (y < 0) y = 0;
        if (y > edgec_afe_y_max_q16) y = edgec_afe_y_max_q16;
        int64_t z = y - ((int64_t)128 << 16);
        int64_t q = z >= 0 ? z >> 16 : -((-z) >> 16);
        out[j] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
    }
}
