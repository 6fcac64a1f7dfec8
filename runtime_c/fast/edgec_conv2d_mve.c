/* edgec Helium (MVE) convolution (declared in edgec_nn.h, machinery in edgec_mve_support.h): int8 dot products
 * of 3 output pixels by 2 output channels (VMLADAVA, 16 taps per instruction, no widening) over kernel rows read
 * in place where they can be, then a vector requantization pass. Depthwise 3x3: edgec_depthwise_conv2d_3x3_mve.c.
 * Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
/* ---------------------------------------------------------------- convolution */
/* The k_h*k_w*in_c int8 taps of output pixel (oy, ox) in weight order [ky][kx][ic]: the input pixel itself
 * for a 1x1 kernel (unless the k4 bytes read from there would pass the input's end), else gathered into row
 * with padded taps holding the input zero point (which the folded bias removes). */
static const int8_t *edgec_mve_taps(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t oy,
                                    int32_t ox, int8_t *row)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, k_w = p->k_w, span = k_w * in_c;
    const int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
    const int8_t zp = (int8_t)p->input_zp;
    int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = in_w - ix0 < k_w ? in_w - ix0 : k_w;
    int32_t ky;
    int8_t *r = row;
    if (p->k_h == 1 && k_w == 1 && iy0 >= 0 && iy0 < p->in_h && ix0 >= 0 && ix0 < in_w &&
        (iy0 * in_w + ix0) * in_c + p->k4 <= p->in_h * in_w * in_c) {
        return input + (iy0 * in_w + ix0) * in_c; /* past in_c: the next pixel's values, times zero weights */
    }
    if (kx0 == 0 && kx1 == k_w && iy0 >= 0 && iy0 + p->k_h <= p->in_h) { /* inside: a copy per kernel row */
        const int8_t *src = input + (iy0 * in_w + ix0) * in_c;
        if (span <= 16) {
            const mve_pred16_t keep = vctp8q((uint32_t)span);
            for (ky = 0; ky < p->k_h; ++ky, r += span, src += in_w * in_c) {
                vstrbq_p_s8(r, vldrbq_z_s8(src, keep), keep);
            }
        } else {
            for (ky = 0; ky < p->k_h; ++ky, src += in_w * in_c) {
                const int8_t *s = src;
                int32_t n;
                for (n = span; n > 0; n -= 16, r += 16, s += 16) {
                    const mve_pred16_t keep = vctp8q((uint32_t)n);
                    vstrbq_p_s8(r, vldrbq_z_s8(s, keep), keep);
                }
                r += n; /* n <= 0: back to the end of this row's span */
            }
        }
        return row;
    }
    if (kx1 < kx0) kx1 = kx0;
    if (span <= 16) { /* short rows at the border: the inside part gathered, the zero point elsewhere */
        const mve_pred16_t keep = vctp8q((uint32_t)span);
        const mve_pred16_t in = (mve_pred16_t)(vctp8q((uint32_t)(kx1 * in_c)) & ~vctp8q((uint32_t)(kx0 * in_c)));
        const uint8x16_t offs = vsubq_n_u8(vidupq_n_u8(0u, 1), (uint8_t)(kx0 * in_c)); /* masked lanes wrap */
        const int8x16_t zv = vdupq_n_s8(zp);
        for (ky = 0; ky < p->k_h; ++ky, r += span) {
            const int32_t iy = iy0 + ky;
            if (iy < 0 || iy >= p->in_h || kx1 == kx0) {
                vstrbq_p_s8(r, zv, keep);
            } else {
                const int8_t *src = input + (iy * in_w + ix0 + kx0) * in_c;
                vstrbq_p_s8(r, vpselq_s8(vldrbq_gather_offset_z_s8(src, offs, in), zv, in), keep);
            }
        }
        return row;
    }
    for (ky = 0; ky < p->k_h; ++ky, r += span) {
        const int32_t iy = iy0 + ky;
        if (iy < 0 || iy >= p->in_h || kx1 == kx0) {
            edgec_mve_fill(r, zp, span);
            continue;
        }
        if (kx0 > 0) edgec_mve_fill(r, zp, kx0 * in_c);
        edgec_mve_copy(r + kx0 * in_c, input + (iy * in_w + ix0 + kx0) * in_c, (kx1 - kx0) * in_c);
        if (kx1 < k_w) edgec_mve_fill(r + kx1 * in_c, zp, (k_w - kx1) * in_c);
    }
    return row;
}

/* The dot products of output channel oc's weights with the taps of pixel j < 3, for the channel quads (oc < 4 *
 * quads), at acc[12 * (oc / 4) + 4 * j + oc % 4] (a quad's 3 pixels as 3 vectors of its 4 channels). The taps are
 * `rows` runs of nb * 16 bytes: run r of pixel j starts at tbl[4 * r + j] (a kernel row read in place from the
 * input, or built in scratch). Weights [pair][k16 / 16][2][16]: each 16-tap block of the two channels of a pair
 * side by side, so one pointer walks them. A block is 11 instructions per 96 products (two weight vectors, three
 * pixels' taps, six VMLADAVA). gcc 12 neither post-increments nor keeps this many pointers and accumulators in
 * registers, hence the fixed registers. */
#define EDGEC_MVE_BLOCK(op)                                                                                       \
    "vldrb.u8 q0, [r7], #16\n"                                                                                    \
    "vldrb.u8 q1, [r7], #16\n"                                                                                    \
    "vldrb.u8 q2, [r1], #16\n" op " r0, q2, q0\n" op " r6, q2, q1\n"                                             \
    "vldrb.u8 q3, [r3], #16\n" op " r2, q3, q0\n" op " r8, q3, q1\n"                                             \
    "vldrb.u8 q2, [r5], #16\n" op " r4, q2, q0\n" op " r10, q2, q1\n"
#define EDGEC_MVE_BLOCK2(op) EDGEC_MVE_BLOCK(op) EDGEC_MVE_BLOCK(op)
#define EDGEC_MVE_BLOCK8(op) EDGEC_MVE_BLOCK2(op) EDGEC_MVE_BLOCK2(op) EDGEC_MVE_BLOCK2(op) EDGEC_MVE_BLOCK2(op)
/* Runs of up to EDGEC_MVE_CHAIN blocks: no loop counter. A pair's first block (VMLADAV) is followed by a jump into
 * a straight chain of EDGEC_MVE_CHAIN blocks at its nb - 1 last ones; the chain ends with one LDM that loads the
 * next run's 3 pointers and the address to jump to: its first block of nb (tbl[4 * r + 3], EDGEC_MVE_BLOCK_BYTES
 * a block back from the chain's end), or, after the last run, the stores. So a pair costs 11 instructions a block
 * and 1 a run, plus 10 (the table, the first jump, the stores, the pair counter); the loop of
 * edgec_mve_conv_macs_loop costs 1 a block and 5 a run more. The two pairs of a quad store 8 and 40 bytes apart
 * (r11 toggles between them). With w NULL, nothing is computed: acc[0] and acc[1] get the addresses of the
 * chain's end and of the stores (without the Thumb bit), from which the table's jump words are made. */
#define EDGEC_MVE_CHAIN 16
#define EDGEC_MVE_BLOCK_BYTES 44 /* 11 MVE instructions, all 32-bit encodings */
static EDGEC_NOINLINE void edgec_mve_conv_macs(const int8_t *const *tbl, const int8_t *w, int32_t quads, int32_t *acc)
{
    const int32_t *const end = acc + 12 * quads;
    register const int8_t *wr __asm__("r7") = w;
    register int32_t *ar __asm__("r12") = acc;
    __asm__ volatile("cbnz r7, 1f\n"
                     "adr.w r0, 8f\n"
                     "str r0, [r12]\n"
                     "adr.w r0, 9f\n"
                     "str r0, [r12, #4]\n"
                     "b 2f\n"
                     "1:\n"
                     "ldr lr, %[end]\n"
                     "movs r11, #40\n"
                     "0:\n"
                     "ldr r9, %[tbl]\n"
                     "ldm r9!, {r1, r3, r5}\n" EDGEC_MVE_BLOCK("vmladav.s8") "ldr pc, [r9], #4\n"
                     EDGEC_MVE_BLOCK8("vmladava.s8") EDGEC_MVE_BLOCK8("vmladava.s8")
                     "8:\n"
                     "ldm r9!, {r1, r3, r5, pc}\n"
                     "9:\n"
                     "strd r0, r6, [r12]\n"
                     "strd r2, r8, [r12, #16]\n"
                     "strd r4, r10, [r12, #32]\n"
                     "eor r11, r11, #32\n"
                     "add r12, r11\n"
                     "cmp r12, lr\n"
                     "bne 0b\n"
                     "2:\n"
                     : [w] "+r"(wr), [acc] "+r"(ar)
                     : [tbl] "m"(tbl), [end] "m"(end)
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2",
                       "q3", "memory", "cc");
}
#undef EDGEC_MVE_BLOCK8
#undef EDGEC_MVE_BLOCK2

/* The same for runs of more than EDGEC_MVE_CHAIN blocks, in a counted loop (12 instructions a block). */
/* one pair of channels (labels L0..L3 local to it), its accumulators stored at byte offset `at` of the quad */
#define EDGEC_MVE_PAIR(L0, L1, L2, L3, at)                                                                        \
    "ldr r9, %[tbl]\n"                                                                                            \
    "ldr r11, %[rows]\n"                                                                                          \
    "ldm r9, {r1, r3, r5}\n"                                                                                      \
    "adds r9, #16\n"                                                                                              \
    "ldr lr, %[nb1]\n" EDGEC_MVE_BLOCK("vmladav.s8") "wls lr, lr, " L1 "f\n" L0 ":\n"                             \
    EDGEC_MVE_BLOCK("vmladava.s8") "le lr, " L0 "b\n" L1 ":\n"                                                    \
    "subs r11, #1\n"                                                                                              \
    "beq " L3 "f\n" L2 ":\n"                                                                                      \
    "ldm r9, {r1, r3, r5}\n"                                                                                      \
    "adds r9, #16\n"                                                                                              \
    "ldr lr, %[nb]\n"                                                                                             \
    "dls lr, lr\n"                                                                                                \
    "1:\n" EDGEC_MVE_BLOCK("vmladava.s8") "le lr, 1b\n"                                                           \
    "subs r11, #1\n"                                                                                              \
    "bne " L2 "b\n" L3 ":\n"                                                                                      \
    "strd r0, r6, [r12, #" at "]\n"                                                                               \
    "strd r2, r8, [r12, #" at " + 16]\n"                                                                          \
    "strd r4, r10, [r12, #" at " + 32]\n"
static EDGEC_NOINLINE void edgec_mve_conv_macs_loop(const int8_t *const *tbl, const int8_t *w, int32_t rows,
                                                    int32_t nb, int32_t quads, int32_t *acc)
{
    const int32_t nb1 = nb - 1;
    const int32_t *const end = acc + 12 * quads;
    register const int8_t *wr __asm__("r7") = w;
    register int32_t *ar __asm__("r12") = acc;
    __asm__ volatile("0:\n"
                     EDGEC_MVE_PAIR("2", "3", "4", "5", "0")
                     EDGEC_MVE_PAIR("6", "7", "8", "9", "8")
                     "adds r12, #48\n"
                     "ldr r11, %[end]\n"
                     "cmp r12, r11\n"
                     "bne 0b\n"
                     : [w] "+r"(wr), [acc] "+r"(ar)
                     : [tbl] "m"(tbl), [rows] "m"(rows), [nb] "m"(nb), [nb1] "m"(nb1), [end] "m"(end)
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2",
                       "q3", "memory", "cc");
}
#undef EDGEC_MVE_PAIR
#undef EDGEC_MVE_BLOCK

/* The requantized outputs of 3 pixels (o, o + out_c, o + 2 * out_c) of quads * 4 channels from the accumulators
 * of edgec_mve_conv_macs; rq4 holds the records of 4 channels at a time as vectors: [quad][bias, mult, khi, neg,
 * -shift][4] (edgec/ops/conv/im2col.py rq_vectors). edgec_mve_requant's steps (the negative accumulators' term
 * added under a VPT predicate), 11 instructions per pixel and quad, the quad's constants in q2-q7; the
 * narrowing byte stores take low registers). */
static EDGEC_NOINLINE void edgec_mve_conv_requant3(const int32_t *acc, const int32_t *rq4, int32_t quads,
                                                   int8_t *o, int32_t out_c, int32_t act_min, int32_t act_max)
{
    int8_t *o1 = o + out_c, *o2 = o + 2 * out_c;
    __asm__ volatile("vdup.32 q6, %[lo]\n"
                     "vdup.32 q7, %[hi]\n"
                     "dls lr, %[n]\n"
                     "1:\n"
                     "vldrw.u32 q2, [%[rq], #16]\n"
                     "vldrw.u32 q3, [%[rq], #32]\n"
                     "vldrw.u32 q4, [%[rq], #48]\n"
                     "vldrw.u32 q5, [%[rq], #64]\n"
#define EDGEC_MVE_RQ3(out, bias)                                                                                  \
    "vldrw.u32 q0, [%[acc]], #16\n"                                                                               \
    bias                                                                                                          \
    "vadd.i32 q0, q0, q1\n"                                                                                       \
    "vqrdmulh.s32 q1, q0, q2\n"                                                                                   \
    "vpt.s32 lt, q0, zr\n"                                                                                        \
    "vaddt.i32 q1, q1, q4\n"                                                                                      \
    "vadd.i32 q1, q1, q3\n"                                                                                       \
    "vshl.s32 q1, q1, q5\n"                                                                                       \
    "vmax.s32 q1, q1, q6\n"                                                                                       \
    "vmin.s32 q1, q1, q7\n"                                                                                       \
    "vstrb.32 q1, [%[" out "]], #4\n"
                     EDGEC_MVE_RQ3("o0", "vldrw.u32 q1, [%[rq]]\n") EDGEC_MVE_RQ3("o1", "vldrw.u32 q1, [%[rq]]\n")
                     EDGEC_MVE_RQ3("o2", "vldrw.u32 q1, [%[rq]], #80\n")
#undef EDGEC_MVE_RQ3
                     "le lr, 1b\n"
                     : [acc] "+r"(acc), [rq] "+r"(rq4), [o0] "+l"(o), [o1] "+l"(o1), [o2] "+l"(o2)
                     : [n] "r"(quads), [lo] "r"(act_min), [hi] "r"(act_max)
                     : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
}

/* The same for `valid` < 3 pixels or a last quad of 1-3 channels, in C. */
static EDGEC_NOINLINE void edgec_mve_conv_requant(const int32_t *acc, const int32_t *rq4, int32_t out_c, int8_t *o,
                                                  int32_t valid, int32_t act_min, int32_t act_max)
{
    const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
    int32_t oc, j;
    for (oc = 0; oc < out_c; oc += 4, acc += 12, rq4 += 20, o += 4) {
        const int32x4_t bias = vldrwq_s32(rq4);
        const mve_pred16_t keep = vctp32q((uint32_t)(out_c - oc < 4 ? out_c - oc : 4));
        edgec_mve_rq q;
        q.mult = vldrwq_s32(rq4 + 4);
        q.khi = vldrwq_s32(rq4 + 8);
        q.neg = vldrwq_s32(rq4 + 12);
        q.nshift = vldrwq_s32(rq4 + 16);
        for (j = 0; j < valid; ++j) {
            vstrbq_p_s32(o + j * out_c, edgec_mve_requant(vaddq_s32(vldrwq_s32(acc + 4 * j), bias), q, lo, hi), keep);
        }
    }
}

/* The k_w * in_c taps of kernel row iy of output pixel ix0 (its first input column) in run-of-taps order: in place
 * where the row lies inside the input, else the zero-point row zrow (a padding row), else built in `row` (the
 * columns past the border hold the input zero point, which the folded bias removes). */
static const int8_t *edgec_mve_run(const edgec_conv2d_im2col_params *p, const int8_t *input, int32_t iy,
                                   int32_t ix0, const int8_t *zrow, int8_t *row)
{
    const int32_t in_c = p->in_c, in_w = p->in_w, k_w = p->k_w;
    const int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = in_w - ix0 < k_w ? in_w - ix0 : k_w;
    if (iy < 0 || iy >= p->in_h || kx1 <= kx0) return zrow;
    if (kx0 == 0 && kx1 == k_w) return input + (iy * in_w + ix0) * in_c;
    if (kx0 > 0) edgec_mve_fill(row, (int8_t)p->input_zp, kx0 * in_c);
    edgec_mve_copy(row + kx0 * in_c, input + (iy * in_w + ix0 + kx0) * in_c, (kx1 - kx0) * in_c);
    if (kx1 < k_w) edgec_mve_fill(row + kx1 * in_c, (int8_t)p->input_zp, (k_w - kx1) * in_c);
    return row;
}

/* The jump words of the table of n_runs runs of nb blocks (edgec_mve_conv_macs): into the chain (the first run
 * after its first block), and after the last run out to the stores; acc: 8 bytes of scratch. */
static EDGEC_NOINLINE void edgec_mve_conv_jumps(const int8_t **x, int32_t n_runs, int32_t nb, int32_t *acc)
{
    uintptr_t chain_end, stores;
    int32_t r;
    edgec_mve_conv_macs(x, 0, 0, acc);
    chain_end = (uintptr_t)(uint32_t)acc[0];
    stores = (uintptr_t)(uint32_t)acc[1];
    x[3] = (const int8_t *)((chain_end - (uintptr_t)((nb - 1) * EDGEC_MVE_BLOCK_BYTES)) | 1u);
    for (r = 1; r < n_runs; ++r) {
        x[4 * r + 3] = (const int8_t *)((chain_end - (uintptr_t)(nb * EDGEC_MVE_BLOCK_BYTES)) | 1u);
    }
    x[4 * n_runs + 3] = (const int8_t *)(stores | 1u);
}

/* Short kernel rows (k_w * in_c <= 16: a first layer's few channels) of 3 pixels of one output row inside the
 * input, from src (the first pixel's top left tap): a predicated copy per row into rows (k4 bytes a pixel). */
static EDGEC_NOINLINE void edgec_mve_short_rows(const edgec_conv2d_im2col_params *p, const int8_t *src, int8_t *rows,
                                                const int8_t **x)
{
    const int32_t span = p->k_w * p->in_c, row_bytes = p->in_w * p->in_c, step = p->stride_w * p->in_c;
    const mve_pred16_t keep = vctp8q((uint32_t)span);
    int32_t j, ky;
    for (j = 0; j < 3; ++j, src += step, rows += p->k4) {
        const int8_t *s = src;
        int8_t *r = rows;
        x[j] = rows;
        for (ky = 0; ky < p->k_h; ++ky, s += row_bytes, r += span) vstrbq_p_s8(r, vldrbq_z_s8(s, keep), keep);
    }
}

/* Weights: see edgec_mve_conv_macs (k16 = p->k4: k_h*k_w*in_c rounded up to 16, zero padded). scratch: the
 * accumulators, 48 * ceil(out_c / 4) bytes (of the 64 * ceil(out_c / 4) reserved for them), then 3 pixels' taps (3
 * * k16) and a padding row (k_w * in_c <= k16). Where a kernel row's taps are a whole number of 16-byte blocks (k_w
 * * in_c a multiple of 16) and there are at most EDGEC_MVE_ROWS of them, the MAC kernel reads each kernel row in
 * place from the input (only the rows crossing the left or right border are built); else each pixel's taps are
 * gathered into one run. */
#define EDGEC_MVE_ROWS 7 /* the table of runs on the stack: 4 * 7 + 4 pointers */
void edgec_conv2d_mve_s8(const edgec_conv2d_im2col_params *p, const int8_t *input, const uint32_t *weights,
                         const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n = p->out_h * p->out_w, out_w = p->out_w, out_c = p->out_c, k16 = p->k4;
    const int32_t quads = (out_c + 3) / 4;
    const int32_t span = p->k_w * p->in_c, row_bytes = p->in_w * p->in_c;
    int32_t *acc = (int32_t *)(void *)scratch;
    int8_t *rows = scratch + 64 * ((out_c + 3) / 4), *zrow = rows + 3 * k16;
    const int runs = span % 16 == 0 && p->k_h <= EDGEC_MVE_ROWS;
    /* a pointwise layer reads its taps in place (past in_c: the next pixel's, times zero weights), except
     * where the k4 bytes would pass the input's end */
    const int pointwise = p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                          p->pad_left == 0 && p->in_w == out_w;
    const int32_t in_place = pointwise && n * p->in_c >= k16 ? (n * p->in_c - k16) / p->in_c : -1; /* last */
    const int8_t *x[4 * EDGEC_MVE_ROWS + 4]; /* per run 3 pointers and a jump (edgec_mve_conv_macs) */
    int32_t pix, j, ky;
    const int32_t n_runs = runs ? p->k_h : 1, nb = runs ? span / 16 : k16 / 16;
    if (runs) edgec_mve_fill(zrow, (int8_t)p->input_zp, span);
    if (nb <= EDGEC_MVE_CHAIN) edgec_mve_conv_jumps(x, n_runs, nb, acc);
    for (pix = 0; pix < n; pix += 3) {
        const int32_t valid = n - pix < 3 ? n - pix : 3;
        const int32_t oy = pix / out_w, ox = pix - oy * out_w;
        const int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
        if (runs && valid == 3 && pointwise) { /* 1x1: 3 consecutive pixels, in place across output rows */
            x[0] = input + pix * p->in_c;
            x[1] = x[0] + p->in_c;
            x[2] = x[1] + p->in_c;
            j = 3;
        } else if (runs && valid == 3 && ox + 2 < out_w && iy0 >= 0 && iy0 + p->k_h <= p->in_h && ix0 >= 0 &&
            ix0 + 2 * p->stride_w + p->k_w <= p->in_w) { /* 3 pixels of one output row, all inside */
            const int32_t step = p->stride_w * p->in_c;
            const int8_t *src = input + iy0 * row_bytes + ix0 * p->in_c;
            const int8_t **xr = x;
            for (ky = 0; ky < p->k_h; ++ky, src += row_bytes, xr += 4) {
                xr[0] = src;
                xr[1] = src + step;
                xr[2] = src + 2 * step;
            }
            j = 3;
        } else if (!runs && span <= 16 && p->k_h * p->k_w > 1 && valid == 3 && ox + 2 < out_w && iy0 >= 0 &&
                   iy0 + p->k_h <= p->in_h && ix0 >= 0 && ix0 + 2 * p->stride_w + p->k_w <= p->in_w) {
            edgec_mve_short_rows(p, input + iy0 * row_bytes + ix0 * p->in_c, rows, x);
            j = 3;
        } else {
            j = 0;
        }
        for (; j < valid; ++j) {
            const int32_t py = (pix + j) / out_w, px = (pix + j) - py * out_w;
            if (runs) {
                const int32_t y0 = py * p->stride_h - p->pad_top, x0 = px * p->stride_w - p->pad_left;
                if (y0 >= 0 && y0 + p->k_h <= p->in_h && x0 >= 0 && x0 + p->k_w <= p->in_w) { /* inside */
                    const int8_t *src = input + y0 * row_bytes + x0 * p->in_c;
                    for (ky = 0; ky < p->k_h; ++ky, src += row_bytes) x[4 * ky + j] = src;
                } else {
                    for (ky = 0; ky < p->k_h; ++ky) {
                        x[4 * ky + j] = edgec_mve_run(p, input, y0 + ky, x0, zrow, rows + j * k16 + ky * span);
                    }
                }
            } else if (pix + j <= in_place) {
                x[j] = input + (pix + j) * p->in_c;
            } else {
                x[j] = edgec_mve_taps(p, input, py, px, rows + j * k16);
            }
        }
        for (; j < 3; ++j) { /* a short last block repeats its last pixel */
            for (ky = 0; ky < (runs ? p->k_h : 1); ++ky) x[4 * ky + j] = x[4 * ky + valid - 1];
        }
        if (nb <= EDGEC_MVE_CHAIN) {
            edgec_mve_conv_macs(x, (const int8_t *)(const void *)weights, quads, acc);
        } else {
            edgec_mve_conv_macs_loop(x, (const int8_t *)(const void *)weights, n_runs, nb, quads, acc);
        }
        if (valid == 3 && out_c % 4 == 0) {
            edgec_mve_conv_requant3(acc, (const int32_t *)(const void *)rq, quads, output + pix * out_c, out_c,
                                    p->act_min, p->act_max);
        } else {
            edgec_mve_conv_requant(acc, (const int32_t *)(const void *)rq, out_c, output + pix * out_c, valid,
                                   p->act_min, p->act_max);
        }
    }
}
#undef EDGEC_MVE_ROWS
#undef EDGEC_MVE_CHAIN
#undef EDGEC_MVE_BLOCK_BYTES

#endif /* EDGEC_MVE */
