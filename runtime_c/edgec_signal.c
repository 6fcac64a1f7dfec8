/* TensorFlow Lite Micro's signal-library kernels (tflite-micro signal/src, signal/micro/kernels), bit-identical with
 * TFLM and with their NumPy twins (edgec/ops/signal/twins.py, edgec/ops/signal/kissfft.py): the audio front end
 * of TFLM's micro_speech preprocessor. Written from TFLM's documented integer scheme; C99, no allocation. Where
 * TFLM's C++ relies on a signed overflow or an int16 store wrapping around, the same value is computed here in
 * unsigned arithmetic or stored through an explicit two's-complement wrap. */
#include "edgec_nn_support.h"     /* (edgec_nn.h with it, as every kernel file) */

static int16_t s16(int32_t v)                         /* a store into int16: wraps around as TFLM's builds do */
{
    uint32_t u = ((uint32_t)v + 32768u) & 0xFFFFu;
    return (int16_t)((int32_t)u - 32768);
}

static int32_t msb32(uint32_t x)                      /* TFLM's MostSignificantBit32 with GCC: 32 for 0 */
{
    int32_t n = 0;
    if (x == 0u) return 32;
    while (x) { x >>= 1; ++n; }
    return n;
}

static int32_t asr(int32_t v, int32_t s)              /* arithmetic shift right (floor), as GCC's >> */
{
    return v >= 0 ? v >> s : -(int32_t)(((uint32_t)(-(v + 1)) >> s) + 1u);
}

void edgec_signal_window_s16(int32_t n, int32_t frame, int32_t shift, const int16_t *x, const int16_t *w, int16_t *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        int32_t raw = asr((int32_t)x[i] * w[i % frame], shift);
        y[i] = (int16_t)(raw < -32768 ? -32768 : raw > 32767 ? 32767 : raw);
    }
}

void edgec_signal_fft_auto_scale_s16(int32_t n, const int16_t *x, int16_t *y)
{
    int16_t mx = 0;
    int32_t i, bits;
    for (i = 0; i < n; ++i) {
        if (x[i] > mx) mx = x[i];
        else if (-(int32_t)x[i] > mx) mx = s16(-(int32_t)x[i]);
    }
    bits = 16 - msb32((uint32_t)(int32_t)mx) - 1;
    if (bits < 0) bits = 0;
    for (i = 0; i < n; ++i) y[i] = s16((int32_t)((uint32_t)(int32_t)x[i] << bits));
    y[n] = (int16_t)bits;
}

/* ---- KISS FFT, FIXED_POINT=16 -------------------------------------------------------------------------- */
static int16_t sround(int32_t x) { return s16(asr(x + (1 << 14), 15)); }

static void fixdiv(int16_t *c, int32_t k)
{
    c[0] = sround(c[0] * (32767 / k));
    c[1] = sround(c[1] * (32767 / k));
}

static void cmul(int16_t *m, const int16_t *a, const int16_t *b)
{
    int16_t r = sround(a[0] * b[0] - a[1] * b[1]);
    m[1] = sround(a[0] * b[1] + a[1] * b[0]);
    m[0] = r;
}

static void bfly2(int16_t *f, int32_t fstride, const int16_t *tw, int32_t m)
{
    int32_t k;
    int16_t t[2];
    for (k = 0; k < m; ++k) {
        int16_t *a = f + 2 * k, *b = f + 2 * (k + m);
        fixdiv(a, 2);
        fixdiv(b, 2);
        cmul(t, b, tw + 2 * k * fstride);
        b[0] = s16(a[0] - t[0]);
        b[1] = s16(a[1] - t[1]);
        a[0] = s16(a[0] + t[0]);
        a[1] = s16(a[1] + t[1]);
    }
}

/* radix-4 butterfly; inverse (kiss_fftri) turns the odd outputs the other way: f1 and f3 trade places */
static void bfly4(int16_t *f, int32_t fstride, const int16_t *tw, int32_t m, int32_t inverse)
{
    int32_t k;
    int16_t s[6][2];
    for (k = 0; k < m; ++k) {
        int16_t *f0 = f + 2 * k, *f1 = f + 2 * (k + m), *f2 = f + 2 * (k + 2 * m), *f3 = f + 2 * (k + 3 * m);
        int16_t *fa = inverse ? f3 : f1, *fb = inverse ? f1 : f3;
        fixdiv(f0, 4);
        fixdiv(f1, 4);
        fixdiv(f2, 4);
        fixdiv(f3, 4);
        cmul(s[0], f1, tw + 2 * k * fstride);
        cmul(s[1], f2, tw + 4 * k * fstride);
        cmul(s[2], f3, tw + 6 * k * fstride);
        s[5][0] = s16(f0[0] - s[1][0]);
        s[5][1] = s16(f0[1] - s[1][1]);
        f0[0] = s16(f0[0] + s[1][0]);
        f0[1] = s16(f0[1] + s[1][1]);
        s[3][0] = s16(s[0][0] + s[2][0]);
        s[3][1] = s16(s[0][1] + s[2][1]);
        s[4][0] = s16(s[0][0] - s[2][0]);
        s[4][1] = s16(s[0][1] - s[2][1]);
        f2[0] = s16(f0[0] - s[3][0]);
        f2[1] = s16(f0[1] - s[3][1]);
        f0[0] = s16(f0[0] + s[3][0]);
        f0[1] = s16(f0[1] + s[3][1]);
        fa[0] = s16(s[5][0] + s[4][1]);
        fa[1] = s16(s[5][1] - s[4][0]);
        fb[0] = s16(s[5][0] - s[4][1]);
        fb[1] = s16(s[5][1] + s[4][0]);
    }
}

/* kf_work: out[0..n) (complex) = the DFT of the n complex inputs in[0], in[stride], ...; radix 4, a last 2 */
static void kf_work(int16_t *out, const int16_t *in, int32_t fstride, int32_t n, const int16_t *tw, int32_t inverse)
{
    int32_t p = n % 4 == 0 ? 4 : 2, m = n / p, q;
    if (m == 1) {
        for (q = 0; q < p; ++q) {
            out[2 * q] = in[2 * q * fstride];
            out[2 * q + 1] = in[2 * q * fstride + 1];
        }
    } else {
        for (q = 0; q < p; ++q) kf_work(out + 2 * q * m, in + 2 * q * fstride, fstride * p, m, tw, inverse);
    }
    if (p == 4) bfly4(out, fstride, tw, m, inverse);
    else bfly2(out, fstride, tw, m);
}

void edgec_signal_rfft_s16(const edgec_signal_rfft_params *p, const int16_t *x, const int16_t *twiddles,
                           const int16_t *super_twiddles, int16_t *scratch, int16_t *y)
{
    const int32_t fft_length = p->fft_length, input_length = p->input_length, frames = p->frames;
    int32_t n = fft_length / 2, f, k, i;
    int16_t *frame = scratch, *buf = scratch + fft_length;
    for (f = 0; f < frames; ++f) {
        int16_t *out = y + f * 2 * (n + 1), tdc[2];
        for (i = 0; i < fft_length; ++i) frame[i] = i < input_length ? x[f * input_length + i] : 0;
        kf_work(buf, frame, 1, n, twiddles, 0);
        tdc[0] = buf[0];
        tdc[1] = buf[1];
        fixdiv(tdc, 2);
        out[0] = s16(tdc[0] + tdc[1]);
        out[2 * n] = s16(tdc[0] - tdc[1]);
        out[1] = out[2 * n + 1] = 0;
        for (k = 1; k <= n / 2; ++k) {
            int16_t fpk[2], fpnk[2], f1k[2], f2k[2], tw[2];
            fpk[0] = buf[2 * k];
            fpk[1] = buf[2 * k + 1];
            fpnk[0] = buf[2 * (n - k)];
            fpnk[1] = s16(-(int32_t)buf[2 * (n - k) + 1]);
            fixdiv(fpk, 2);
            fixdiv(fpnk, 2);
            f1k[0] = s16(fpk[0] + fpnk[0]);
            f1k[1] = s16(fpk[1] + fpnk[1]);
            f2k[0] = s16(fpk[0] - fpnk[0]);
            f2k[1] = s16(fpk[1] - fpnk[1]);
            cmul(tw, f2k, super_twiddles + 2 * (k - 1));
            out[2 * k] = s16(asr(f1k[0] + tw[0], 1));
            out[2 * k + 1] = s16(asr(f1k[1] + tw[1], 1));
            out[2 * (n - k)] = s16(asr(f1k[0] - tw[0], 1));
            out[2 * (n - k) + 1] = s16(asr(tw[1] - f1k[1], 1));
        }
    }
}

/* ---- energies and the filter bank ----------------------------------------------------------------------- */
void edgec_signal_energy_s16(int32_t bins, int32_t start, int32_t end, const int16_t *spectrum, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < bins; ++i) {
        int32_t re = spectrum[2 * i], im = spectrum[2 * i + 1];
        y[i] = i >= start && i < end ? (uint32_t)(re * re) + (uint32_t)(im * im) : 0u;
    }
}

void edgec_signal_filter_bank_u32(int32_t channels, const uint32_t *x, const int16_t *weights,
                                  const int16_t *unweights, const int16_t *freq_starts, const int16_t *weight_starts,
                                  const int16_t *widths, uint64_t *y)
{
    uint64_t acc = 0, uacc = 0;
    int32_t i, j;
    for (i = 0; i < channels + 1; ++i) {
        const int32_t f0 = freq_starts[i], w0 = weight_starts[i];
        for (j = 0; j < widths[i]; ++j) {
            acc += (uint64_t)(int64_t)weights[w0 + j] * x[f0 + j];
            uacc += (uint64_t)(int64_t)unweights[w0 + j] * x[f0 + j];
        }
        if (i > 0) y[i - 1] = acc;
        acc = uacc;
        uacc = 0;
    }
}

static uint32_t msb64(uint64_t x)
{
    uint32_t n = 0;
    while (x) { x >>= 1; ++n; }
    return n;
}

static uint16_t sqrt32(uint32_t num)
{
    uint32_t res = 0, bit;
    int32_t top, it;
    if (num == 0u) return 0;
    top = (32 - msb32(num)) | 1;
    bit = 1u << (31 - top);
    for (it = (31 - top) / 2 + 1; it > 0; --it) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    if (num > res && res != 0xFFFFu) ++res;
    return (uint16_t)res;
}

static uint32_t sqrt64(uint64_t num)
{
    uint64_t res = 0, bit;
    int32_t top, it;
    if ((num >> 32) == 0u) return sqrt32((uint32_t)num);
    top = (int32_t)(64u - msb64(num)) | 1;
    bit = (uint64_t)1 << (63 - top);
    for (it = (63 - top) / 2 + 1; it > 0; --it) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    if (num > res && res != 0xFFFFFFFFu) ++res;
    return (uint32_t)res;
}

void edgec_signal_filter_bank_square_root_u64(int32_t channels, const uint64_t *x, int32_t scale_bits, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < channels; ++i) y[i] = sqrt64(x[i]) >> scale_bits;
}

void edgec_signal_spectral_subtraction_u32(const edgec_signal_spectral_subtraction_params *p, const uint32_t *x,
                                           uint32_t *noise, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < p->num_channels; ++i) {
        const uint32_t s = (uint32_t)(i % 2 == 0 ? p->smoothing : p->alternate_smoothing);
        const uint32_t oms = (uint32_t)(i % 2 == 0 ? p->one_minus_smoothing : p->alternate_one_minus_smoothing);
        const uint32_t up = x[i] << p->smoothing_bits;
        uint32_t est, floor_, sub;
        noise[i] = (uint32_t)(((uint64_t)up * s + (uint64_t)noise[i] * oms) >> p->spectral_subtraction_bits);
        est = noise[i];
        if (est > up) {
            est = up;
            if (p->clamping) noise[i] = est;
        }
        floor_ = (uint32_t)(((uint64_t)x[i] * (uint32_t)p->min_signal_remaining) >> p->spectral_subtraction_bits);
        sub = (up - est) >> p->smoothing_bits;
        y[i] = sub > floor_ ? sub : floor_;
    }
}

/* ---- PCAN and the log --------------------------------------------------------------------------------- */
static int16_t wide_dynamic(uint32_t x, const int16_t *lut)
{
    int32_t interval, frac, r;
    if (x <= 2u) return lut[x];
    interval = msb32(x);
    lut += 4 * interval - 6;
    frac = (int32_t)((interval < 11 ? x << (11 - interval) : x >> (interval - 11)) & 0x3FFu);
    r = asr(lut[2] * frac, 5);
    r = (int32_t)((uint32_t)r + ((uint32_t)(int32_t)lut[1] << 5));
    r = (int32_t)((uint32_t)r * (uint32_t)frac);
    r = asr((int32_t)((uint32_t)r + (1u << 14)), 15);
    return s16(r + lut[0]);
}

void edgec_signal_pcan_u32(int32_t channels, const uint32_t *x, const uint32_t *noise, const int16_t *gain_lut,
                           int32_t snr_shift, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < channels; ++i) {
        const uint32_t gain = (uint32_t)(int32_t)wide_dynamic(noise[i], gain_lut);
        const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> snr_shift);
        y[i] = snr < (2u << 12) ? (snr * snr) >> (2 + 2 * 12 - 6) : (snr >> (12 - 6)) - (1u << 6);
    }
}

static const uint16_t LOG_LUT[130] = {
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087, 3224,
    3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001,
    5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631,
    5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332,
    5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264,
    4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549,
    2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142, 0,
    0};

static uint32_t log32(uint32_t x, uint32_t out_scale)
{
    const int32_t integer = msb32(x) - 1;
    int32_t frac = (int32_t)(x - (1u << integer)), c0, c1, rel;
    uint32_t seg, log2, loge;
    if (integer < 16) frac <<= 16 - integer;
    else frac >>= integer - 16;
    seg = (uint32_t)frac >> 9;
    c0 = LOG_LUT[seg];
    c1 = LOG_LUT[seg + 1];
    rel = asr((c1 - c0) * (frac - (int32_t)(512u * seg)), 16);
    log2 = ((uint32_t)integer << 16) + (uint32_t)(frac + c0 + rel);
    loge = (uint32_t)(((uint64_t)45426 * log2 + 32768u) >> 16);
    return (out_scale * loge + 32768u) >> 16;
}

void edgec_signal_filter_bank_log_u32(int32_t channels, const uint32_t *x, int32_t output_scale,
                                      int32_t correction_bits, int16_t *y)
{
    int32_t i;
    for (i = 0; i < channels; ++i) {
        const uint32_t scaled = x[i] << correction_bits;
        if (scaled > 1u) {
            const uint32_t v = log32(scaled, (uint32_t)output_scale);
            y[i] = (int16_t)(v < 32767u ? v : 32767u);
        } else {
            y[i] = 0;
        }
    }
}

/* ---- TFLite's builtin operators on the front end's plain integers (not quantized) ------------------------- */
void edgec_signal_cast(int32_t n, int32_t from, int32_t to, const void *x, void *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        uint64_t v;                      /* the value's two's-complement bits, sign-extended from its type */
        switch (from) {
        case EDGEC_SIGNAL_INT8: v = (uint64_t)(int64_t)((const int8_t *)x)[i]; break;
        case EDGEC_SIGNAL_INT16: v = (uint64_t)(int64_t)((const int16_t *)x)[i]; break;
        case EDGEC_SIGNAL_INT32: v = (uint64_t)(int64_t)((const int32_t *)x)[i]; break;
        case EDGEC_SIGNAL_UINT32: v = ((const uint32_t *)x)[i]; break;
        default: v = ((const uint64_t *)x)[i]; break;
        }
        switch (to) {                    /* C's conversion: the low bits (two's complement) */
        case EDGEC_SIGNAL_INT8:
            ((int8_t *)y)[i] = (int8_t)((int32_t)((uint32_t)v & 0xFFu) - ((v & 0x80u) ? 256 : 0));
            break;
        case EDGEC_SIGNAL_INT16: ((int16_t *)y)[i] = s16((int32_t)((uint32_t)v & 0xFFFFu)); break;
        case EDGEC_SIGNAL_INT32: ((int32_t *)y)[i] = (int32_t)(uint32_t)v; break;
        case EDGEC_SIGNAL_UINT32: ((uint32_t *)y)[i] = (uint32_t)v; break;
        default: ((uint64_t *)y)[i] = v; break;
        }
    }
}

void edgec_signal_slice_u32(int32_t begin, int32_t stride, int32_t n, const uint32_t *x, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) y[i] = x[begin + i * stride];
}

void edgec_signal_concat_u32(int32_t before, int32_t n, int32_t after, const uint32_t *pre, const uint32_t *x,
                             const uint32_t *post, uint32_t *y)
{
    int32_t i;
    for (i = 0; i < before; ++i) y[i] = pre[i];
    for (i = 0; i < n; ++i) y[before + i] = x[i];
    for (i = 0; i < after; ++i) y[before + n + i] = post[i];
}

void edgec_signal_arith_s32(int32_t n, int32_t code, int32_t b_size, const int32_t *x, const int32_t *b, int32_t *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t a = x[i], c = b[b_size == 1 ? 0 : i];
        int32_t v;
        switch (code) {
        case EDGEC_SIGNAL_ADD: v = (int32_t)((uint32_t)a + (uint32_t)c); break;
        case EDGEC_SIGNAL_MUL: v = (int32_t)((uint32_t)a * (uint32_t)c); break;
        case EDGEC_SIGNAL_DIV: v = (c == -1) ? (int32_t)(0u - (uint32_t)a) : a / c; break;
        case EDGEC_SIGNAL_MIN: v = a < c ? a : c; break;
        default: v = a > c ? a : c; break;
        }
        y[i] = v;
    }
}

/* int32 comparisons with a constant (one value, or one per element): bool bytes 0 / 1 (TFLite Micro's comparisons) */
void edgec_signal_compare_s32(int32_t n, int32_t code, int32_t b_size, const int32_t *x, const int32_t *b, uint8_t *y)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t a = x[i], c = b[b_size == 1 ? 0 : i];
        int v;
        switch (code) {
        case 0: v = a == c; break;
        case 1: v = a != c; break;
        case 2: v = a < c; break;
        case 3: v = a <= c; break;
        case 4: v = a > c; break;
        default: v = a >= c; break;
        }
        y[i] = (uint8_t)v;
    }
}

/* SELECT_V2 of int32 values of one size: x where the condition is true, else y */
void edgec_signal_select_s32(int32_t n, const uint8_t *cond, const int32_t *x, const int32_t *y, int32_t *out)
{
    int32_t i;
    for (i = 0; i < n; ++i) out[i] = cond[i] ? x[i] : y[i];
}

/* ---- the inverse real FFT (kiss_fftri, FIXED_POINT=16) ----------------------------------------------------- */
void edgec_signal_irfft_s16(const edgec_signal_rfft_params *p, const int16_t *x, const int16_t *twiddles,
                            const int16_t *super_twiddles, int16_t *scratch, int16_t *y)
{
    const int32_t n = p->fft_length / 2;
    int32_t f, k;
    for (f = 0; f < p->frames; ++f) {
        const int16_t *s = x + f * 2 * p->input_length;
        int16_t *buf = scratch;
        buf[0] = s16(s[0] + s[2 * n]);
        buf[1] = s16(s[0] - s[2 * n]);
        fixdiv(buf, 2);
        for (k = 1; k <= n / 2; ++k) {
            int16_t fk[2], fnkc[2], fek[2], tmp[2], fok[2];
            fk[0] = s[2 * k];
            fk[1] = s[2 * k + 1];
            fnkc[0] = s[2 * (n - k)];
            fnkc[1] = s16(-(int32_t)s[2 * (n - k) + 1]);
            fixdiv(fk, 2);
            fixdiv(fnkc, 2);
            fek[0] = s16(fk[0] + fnkc[0]);
            fek[1] = s16(fk[1] + fnkc[1]);
            tmp[0] = s16(fk[0] - fnkc[0]);
            tmp[1] = s16(fk[1] - fnkc[1]);
            cmul(fok, tmp, super_twiddles + 2 * (k - 1));
            buf[2 * k] = s16(fek[0] + fok[0]);
            buf[2 * k + 1] = s16(fek[1] + fok[1]);
            buf[2 * (n - k)] = s16(fek[0] - fok[0]);
            buf[2 * (n - k) + 1] = s16(-(int32_t)s16(fek[1] - fok[1]));
        }
        kf_work(y + f * p->fft_length, buf, 1, n, twiddles, 1);
    }
}

/* ---- streaming: framer, stacker, delay, overlap-add (their state in the caller's static arrays) ------------ */
static void fifo_discard(int16_t *fifo, int32_t *count, int32_t n)
{
    int32_t i;
    if (n > *count) n = *count;
    for (i = n; i < *count; ++i) fifo[i - n] = fifo[i];
    *count -= n;
}

void edgec_signal_framer_s16(const edgec_signal_framer_params *p, const int16_t *x, int16_t *fifo, int32_t *count,
                             int16_t *y)
{
    int32_t i, f, k, valid = 1;
    for (i = 0; i < p->outer; ++i) {
        int16_t *q = fifo + i * p->capacity;
        for (f = 0; f < p->n_frames; ++f) {
            int16_t *out = y + (i * p->n_frames + f) * p->frame_size;
            for (k = 0; k < p->frame_step; ++k) q[count[i] + k] = x[(i * p->n_frames + f) * p->frame_step + k];
            count[i] += p->frame_step;
            if (count[i] >= p->frame_size) {
                for (k = 0; k < p->frame_size; ++k) out[k] = q[k];
                fifo_discard(q, &count[i], p->frame_step);
            } else {
                for (k = 0; k < p->frame_size; ++k) out[k] = 0;
                valid = 0;
            }
        }
    }
    y[p->outer * p->n_frames * p->frame_size] = (int16_t)valid;
}

void edgec_signal_stacker_s16(const edgec_signal_stacker_params *p, const int16_t *x, int16_t *fifo, int32_t *state,
                              int16_t *y)
{
    const int32_t ch = p->num_channels, size = ch * (p->left + p->right + 1);
    int32_t k, r;
    for (k = 0; k < ch; ++k) fifo[state[0] + k] = x[k];
    state[0] += ch;
    if (!state[1]) {                      /* the first frame, repeated left more times */
        for (r = 0; r < p->left; ++r)
            for (k = 0; k < ch; ++k) fifo[state[0] + r * ch + k] = x[k];
        state[0] += p->left * ch;
        state[1] = 1;
    }
    if (state[0] >= size) {
        for (k = 0; k < size; ++k) y[k] = fifo[k];
        fifo_discard(fifo, &state[0], ch * p->step);
        y[size] = 1;
    } else {
        for (k = 0; k < size; ++k) y[k] = 0;
        y[size] = 0;
    }
}

void edgec_signal_delay_s16(int32_t outer, int32_t frame, int32_t delay, const int16_t *x, int16_t *line, int16_t *y)
{
    int32_t i, k;
    for (i = 0; i < outer; ++i) {
        const int16_t *xi = x + i * frame;
        int16_t *li = line + i * delay;
        for (k = 0; k < frame; ++k) y[i * frame + k] = k < delay ? li[k] : xi[k - delay];
        for (k = 0; k < delay; ++k) li[k] = frame + k < delay ? li[frame + k] : xi[frame + k - delay];
    }
}

void edgec_signal_overlap_add_s16(int32_t outer, int32_t n_frames, int32_t frame_size, int32_t frame_step,
                                  const int16_t *x, int16_t *buffer, int16_t *y)
{
    int32_t i, f, k;
    for (i = 0; i < outer; ++i) {
        int16_t *b = buffer + i * frame_size;
        for (f = 0; f < n_frames; ++f) {
            const int16_t *xf = x + (i * n_frames + f) * frame_size;
            int16_t *out = y + (i * n_frames + f) * frame_step;
            for (k = 0; k < frame_size; ++k) {
                const int32_t v = (int32_t)b[k] + xf[k];
                b[k] = (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
            }
            for (k = 0; k < frame_step; ++k) out[k] = b[k];
            for (k = 0; k < frame_size - frame_step; ++k) b[k] = b[k + frame_step];
            for (k = frame_size - frame_step; k < frame_size; ++k) b[k] = 0;
        }
    }
}

/* ---- a training pipeline's MFCC / log-mel front end in fixed point (edgec/ops/signal/mfcc.py, its twin) ---- */
static int64_t asr64(int64_t v, int32_t s)            /* arithmetic shift right (floor) of an int64 */
{
    return v >= 0 ? v >> s : -(int64_t)(((uint64_t)(-(v + 1)) >> s) + 1u);
}

static uint64_t isqrt64(uint64_t v)                   /* floor(sqrt(v)) */
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) { v -= r + bit; r = (r >> 1) + bit; }
        else r >>= 1;
        bit >>= 2;
    }
    return r;
}

static int32_t log2_q16(uint64_t a)                   /* log2(a >= 1) in Q16, LOG_LUT's correction */
{
    int32_t i = 63, frac, seg, c0, c1;
    uint64_t m;
    while (!(a >> i)) --i;
    m = i >= 31 ? a >> (i - 31) : a << (31 - i);
    frac = (int32_t)((m - ((uint64_t)1 << 31)) >> 15);
    seg = frac >> 9;
    c0 = LOG_LUT[seg];
    c1 = LOG_LUT[seg + 1];
    return (i << 16) + frac + c0 + asr((c1 - c0) * (frac - 512 * seg), 16);
}

/* in-order radix-2 decimation in time, unscaled, Q30 twiddles, each product rounded once */
static void mfcc_fft(int32_t n, int32_t *re, int32_t *im, const int32_t *cs, const int32_t *sn)
{
    int32_t half, a0, k;
    for (half = 1; half < n; half *= 2) {
        const int32_t step = n / (2 * half);
        for (a0 = 0; a0 < n; a0 += 2 * half) {
            for (k = 0; k < half; ++k) {
                const int32_t a = a0 + k, b = a + half;
                const int64_t wr = cs[k * step], wi = sn[k * step];
                const int32_t tr = (int32_t)asr64((int64_t)re[b] * wr - (int64_t)im[b] * wi + (1 << 29), 30);
                const int32_t ti = (int32_t)asr64((int64_t)re[b] * wi + (int64_t)im[b] * wr + (1 << 29), 30);
                re[b] = re[a] - tr; im[b] = im[a] - ti;
                re[a] = re[a] + tr; im[a] = im[a] + ti;
            }
        }
    }
}

static int32_t bit_reverse(int32_t i, int32_t n)
{
    int32_t r = 0, m;
    for (m = n >> 1; m; m >>= 1, i >>= 1) r = (r << 1) | (i & 1);
    return r;
}

void edgec_signal_mfcc_s16(const edgec_signal_mfcc_params *p, const int16_t *x, const int16_t *window,
                           const int16_t *mel, const int16_t *mel_lo, const int16_t *mel_hi, const int64_t *eps,
                           const int32_t *log2_unit, const int16_t *dct, const int32_t *cos_q30,
                           const int32_t *sin_q30, int32_t *scratch, int32_t *y)
{
    const int32_t n = p->fft_length, bins = n / 2 + 1;
    int32_t *re = scratch, *im = scratch + n, *logmel = scratch + 2 * n;
    int16_t *scaled = (int16_t *)(void *)im;          /* the auto-scaled frame, before the FFT needs im */
    int32_t f, i, m, c;
    int32_t top = INT32_MIN;
    for (f = 0; f < p->frames; ++f) {
        int32_t s;
        edgec_signal_fft_auto_scale_s16(p->frame_length, x + f * p->hop, scaled);
        s = scaled[p->frame_length];
        for (i = 0; i < n; ++i) re[i] = 0;
        for (i = 0; i < p->frame_length; ++i)
            re[bit_reverse(i, n)] = asr((int32_t)scaled[i] * window[i] + (1 << (p->window_shift - 1)), p->window_shift);
        for (i = 0; i < n; ++i) im[i] = 0;
        mfcc_fft(n, re, im, cos_q30, sin_q30);
        for (i = 0; i < bins; ++i) {          /* the power (or magnitude) of bin i, over re[i] */
            const uint64_t pw = (uint64_t)((int64_t)re[i] * re[i]) + (uint64_t)((int64_t)im[i] * im[i]);
            const uint64_t v = (p->power == 2 ? pw : isqrt64(pw)) >> p->value_shift;
            re[i] = (int32_t)(v & 0xFFFFFFFFu);     /* low half in re, high half in im */
            im[i] = (int32_t)(v >> 32);
        }
        for (m = 0; m < p->mels; ++m) {
            uint64_t acc = 0;
            int64_t l2;
            for (i = mel_lo[m]; i < mel_hi[m]; ++i)
                acc += (uint64_t)mel[m * bins + i] * ((uint64_t)(uint32_t)im[i] << 32 | (uint32_t)re[i]);
            acc <<= p->headroom;
            acc = p->clamp ? (acc > (uint64_t)eps[s] ? acc : (uint64_t)eps[s]) : acc + (uint64_t)eps[s];
            l2 = (int64_t)log2_q16(acc ? acc : 1u) + log2_unit[s];
            logmel[f * p->mels + m] = (int32_t)asr64(l2 * p->log_mult + (1 << 23), 24);
            if (logmel[f * p->mels + m] > top) top = logmel[f * p->mels + m];
        }
    }
    for (f = 0; f < p->frames; ++f) {
        for (m = 0; m < p->mels && p->top_db; ++m)
            if (logmel[f * p->mels + m] < top - p->top_db) logmel[f * p->mels + m] = top - p->top_db;
        for (c = 0; c < p->coeffs; ++c) {
            int64_t acc = 0;
            for (m = 0; m < p->mels; ++m) acc += (int64_t)logmel[f * p->mels + m] * dct[m * p->coeffs + c];
            y[p->transposed ? c * p->frames + f : f * p->coeffs + c] =
                (int32_t)asr64(acc + ((int64_t)1 << (p->dct_shift - 1)), p->dct_shift);
        }
    }
}
