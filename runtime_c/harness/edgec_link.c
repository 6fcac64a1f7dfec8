/* edgec serial link, device side (see edgec_link.h and edgec/device/link.py). */
#include "edgec_link.h"

#include <setjmp.h>
#include <string.h>

#include "edgec_board.h"
#include "edgec_timed.h"

enum {
    T_SYNC = 0x01, T_HELLO = 0x02, T_WRITE_INPUT = 0x03, T_INVOKE = 0x04, T_READ_OUTPUT = 0x05,
    T_PROFILE = 0x06, T_CAPTURE = 0x07, T_READ = 0x08, T_RESET = 0x09,
    T_REPLY = 0x80, T_NAK = 0xEE
};
enum { REGION_OUTPUT = 0, REGION_ARENA = 1, REGION_LAYER_TICKS = 2 };
enum { NAK_CORRUPT = 1, NAK_UNKNOWN = 2, NAK_ARGS = 3, NAK_TOO_LONG = 4 };

#define FRAME_MAX (2 + EDGEC_LINK_MAX_PAYLOAD + 2)
#define WIRE_MAX (FRAME_MAX + FRAME_MAX / 254 + 2)

/* Two frame buffers in all (the harness's static RAM counts against the board's): a request is decoded in
 * place in `wire` (COBS never grows data when decoding), and a reply is encoded into `wire` too, after its
 * handler has read the request.  The last reply stays decoded in tx_frame and is re-encoded if the host
 * repeats its request. */
static uint8_t wire[WIRE_MAX];
static uint8_t tx_frame[FRAME_MAX];
static size_t tx_frame_len;        /* payload bytes of the last reply in tx_frame; 0: none to resend */
static uint8_t tx_frame_type;
static int last_seq = -1, last_type = -1;

static uint16_t crc16_update(uint16_t crc, const uint8_t *data, size_t n)
{
    while (n--) {
        crc ^= (uint16_t)(*data++) << 8;
        for (int i = 0; i < 8; i++) crc = (uint16_t)((crc & 0x8000u) ? ((unsigned)crc << 1) ^ 0x1021u : (unsigned)crc << 1);
    }
    return crc;
}

uint16_t edgec_link_crc16(const uint8_t *data, size_t n)
{
    return crc16_update(0xFFFF, data, n);
}

size_t edgec_link_cobs_encode(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t code_at = 0, o = 1;
    uint8_t code = 1;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == 0) {
            out[code_at] = code; code_at = o++; code = 1;
        } else {
            out[o++] = in[i];
            if (++code == 0xFF) { out[code_at] = code; code_at = o++; code = 1; }
        }
    }
    out[code_at] = code;
    return o;
}

size_t edgec_link_cobs_decode(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t code = in[i++];
        if (code == 0 || code - 1u > n - i) return (size_t)-1;
        /* byte by byte, front to back: out may be in (decoding in place; o never passes i). No memmove: it
         * brought 254 B of newlib into every firmware for a copy of at most 254 bytes. */
        for (uint8_t k = 1; k < code; k++) out[o++] = in[i++];
        if (code < 0xFF && i < n) out[o++] = 0;
    }
    return o;
}

static void put_u32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static uint32_t get_u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* header + CRC around payload[0..len) in frame, COBS-encode into wire, send; returns wire length */
static size_t send_frame(uint8_t *frame, uint8_t *wire, uint8_t type, uint8_t seq, size_t len)
{
    frame[0] = type;
    frame[1] = seq;
    uint16_t crc = edgec_link_crc16(frame, 2 + len);
    frame[2 + len] = (uint8_t)crc;
    frame[3 + len] = (uint8_t)(crc >> 8);
    size_t n = edgec_link_cobs_encode(frame, 4 + len, wire);
    wire[n++] = 0;
    edgec_uart_write(wire, n);
    edgec_uart_flush();
    return n;
}

/* reply with the payload in tx_frame[2..2+len); kept there in case the host repeats the request */
static void reply(uint8_t type, uint8_t seq, size_t len)
{
    send_frame(tx_frame, wire, type, seq, len);
    tx_frame_type = type;
    tx_frame_len = len + 1u;           /* + 1: a reply with an empty payload is still a reply */
}

/* NAKs use their own buffers so the cached reply survives them */
static void nak(uint8_t seq, uint8_t code, uint8_t type)
{
    uint8_t frame[6], wire[8];
    frame[2] = code;
    frame[3] = type;
    send_frame(frame, wire, T_NAK, seq, 2);
}

/* Stack high-water mark by painting: boards that can (the QEMU BSP) override these weak defaults. */
__attribute__((weak)) void edgec_stack_paint(void) { }
__attribute__((weak)) int32_t edgec_stack_used(void) { return -1; }
__attribute__((weak)) uint32_t edgec_stack_size(void) { return 0; }

/* ---- model runs: plain, profiled (ticks after every layer), or stopped after one layer ---- */
typedef struct { uint32_t *ticks; uint64_t prev; } profile_ctx;

static void profile_hook(uint32_t layer, void *ctx)
{
    profile_ctx *c = (profile_ctx *)ctx;
    uint64_t now = edgec_ticks();
    c->ticks[layer] = (uint32_t)(now - c->prev);
    c->prev = edgec_ticks();          /* the hook's own time is left out of the next layer's */
}

static jmp_buf capture_jump;
static uint32_t capture_layer;

static void capture_hook(uint32_t layer, void *ctx)
{
    (void)ctx;
    if (layer == capture_layer) longjmp(capture_jump, 1);   /* leave the arena as it is now */
}

/* Runs the model until after `layer` and stops: 0 stopped there, otherwise the invoke status or -1. */
static int run_until(const edgec_link_model *m, uint32_t layer)
{
    capture_layer = layer;
    if (setjmp(capture_jump) != 0) return 0;
    int status = m->info->invoke_with_hook(capture_hook, 0);
    return status != 0 ? status : -1;
}

/* The model's input (output) as the link sees it: one buffer, or the parts of a model with several, in order. */
static uint32_t parts_of(const edgec_link_model *m, int output, edgec_link_part *one, const edgec_link_part **parts)
{
    uint32_t count = output ? m->info->output_part_count : m->info->input_part_count;
    if (count) {
        *parts = output ? m->info->output_parts : m->info->input_parts;
        return count;
    }
    one->data = output ? (int8_t *)(uintptr_t)m->output : m->input;
    one->bytes = output ? m->output_bytes : m->input_bytes;
    *parts = one;
    return 1u;
}

static uint16_t crc_of(const edgec_link_model *m, int output)
{
    edgec_link_part one;
    const edgec_link_part *parts;
    uint32_t count = parts_of(m, output, &one, &parts);
    uint16_t crc = 0xFFFF;
    for (uint32_t i = 0; i < count; i++) crc = crc16_update(crc, (const uint8_t *)parts[i].data, parts[i].bytes);
    return crc;
}

/* Bytes [off, off + n) of the input (from `from` into the model) or of the output (into `to`); the caller
 * checked the range against the total. */
static void copy_at(const edgec_link_model *m, int output, uint32_t off, const uint8_t *from, uint8_t *to, uint32_t n)
{
    edgec_link_part one;
    const edgec_link_part *parts;
    uint32_t count = parts_of(m, output, &one, &parts);
    for (uint32_t i = 0; i < count && n; i++) {
        if (off >= parts[i].bytes) { off -= parts[i].bytes; continue; }
        uint32_t k = parts[i].bytes - off < n ? parts[i].bytes - off : n;
        if (from) { memcpy(parts[i].data + off, from, k); from += k; }
        else { memcpy(to, parts[i].data + off, k); to += k; }
        n -= k; off = 0;
    }
}

/* INVOKE and PROFILE reply: status i32, ticks u64, input crc16, output crc16, stack used i32 */
static size_t run_timed(const edgec_link_model *m, int profile, uint8_t *out)
{
    uint16_t in_crc = crc_of(m, 0);
    profile_ctx ctx;
    int status;
    uint64_t dt;
    edgec_stack_paint();
    if (profile) {
        int (*with_hook)(void (*)(uint32_t, void *), void *) = m->info->invoke_with_hook;
        ctx.ticks = m->info->layer_ticks;
        edgec_ticks_align();
        uint64_t t0 = edgec_ticks();
        ctx.prev = t0;
        status = with_hook(profile_hook, &ctx);
        dt = edgec_ticks() - t0;
    } else {       /* the same timed call as the dataset firmware's and the MLPerf runner's (edgec_timed.h) */
        edgec_timed_run run;
        run.invoke = m->invoke;
        edgec_timed_invoke(&run);
        status = run.status;
        dt = run.ticks;
    }
    int32_t stack = edgec_stack_used();
    uint16_t out_crc = crc_of(m, 1);
    put_u32(out, (uint32_t)status);
    put_u32(out + 4, (uint32_t)dt);
    put_u32(out + 8, (uint32_t)(dt >> 32));
    out[12] = (uint8_t)in_crc; out[13] = (uint8_t)(in_crc >> 8);
    out[14] = (uint8_t)out_crc; out[15] = (uint8_t)(out_crc >> 8);
    put_u32(out + 16, (uint32_t)stack);
    return 20;
}

/* arena bytes [off, off+n), or NULL if out of range */
static const int8_t *arena_bytes_at(const edgec_link_model *m, uint32_t off, uint32_t n)
{
    if (!m->arena || off > m->arena_bytes || n > m->arena_bytes - off) return 0;
    return m->info->arena_at ? m->info->arena_at(off, n) : m->arena + off;
}

/* READ: copy bytes [off, off+n) of a region into out; 0 if out of range */
static int read_region(const edgec_link_model *m, uint8_t region, uint32_t off, uint32_t n, uint8_t *out)
{
    if (n > EDGEC_LINK_MAX_PAYLOAD) return 0;
    if (region == REGION_OUTPUT) {
        if ((!m->output && !m->info->output_part_count) || off > m->output_bytes || n > m->output_bytes - off) return 0;
        copy_at(m, 1, off, 0, out, n);
        return 1;
    }
    if (region == REGION_ARENA) {
        const int8_t *at = arena_bytes_at(m, off, n);
        if (!at) return 0;
        memcpy(out, at, n);
        return 1;
    }
    if (region == REGION_LAYER_TICKS) {     /* u32 little-endian per layer, addressed in bytes */
        uint32_t size = m->info->layer_ticks ? 4u * m->info->layer_count : 0u;
        if (off > size || n > size - off) return 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t b = off + i;
            out[i] = (uint8_t)(m->info->layer_ticks[b / 4] >> (8 * (b % 4)));
        }
        return 1;
    }
    return 0;
}

static size_t put_str(uint8_t *p, size_t room, const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > room) n = room;
    memcpy(p, s, n);
    if (n) p[n - 1] = 0;
    return n;
}

static void handle(const edgec_link_model *m, uint8_t type, uint8_t seq, const uint8_t *p, size_t len)
{
    uint8_t *out = tx_frame + 2;
    if (type != T_SYNC && (int)seq == last_seq && (int)type == last_type && tx_frame_len) {
        send_frame(tx_frame, wire, tx_frame_type, seq, tx_frame_len - 1u);   /* the host lost our reply: resend it */
        return;
    }
    switch (type) {
    case T_SYNC:
        if (len > EDGEC_LINK_MAX_PAYLOAD) { nak(seq, NAK_ARGS, type); return; }
        memcpy(out, p, len);
        reply(T_SYNC | T_REPLY, seq, len);
        last_seq = last_type = -1;
        return;
    case T_HELLO: {
        size_t n = 0;
        out[n++] = EDGEC_LINK_PROTOCOL_VERSION;
        put_u32(out + n, m->input_bytes); n += 4;
        put_u32(out + n, m->output_bytes); n += 4;
        put_u32(out + n, edgec_tick_hz()); n += 4;
        put_u32(out + n, m->arena_bytes); n += 4;
        put_u32(out + n, m->info->invoke_with_hook ? m->info->layer_count : 0u); n += 4;
        put_u32(out + n, edgec_stack_size()); n += 4;
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->info->board_name);
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->info->model_name);
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->info->model_hash);
        reply(T_HELLO | T_REPLY, seq, n);
        break;
    }
    case T_WRITE_INPUT: {
        if (len < 4) { nak(seq, NAK_ARGS, type); return; }
        uint32_t off = get_u32(p), n = (uint32_t)(len - 4);
        if (off > m->input_bytes || n > m->input_bytes - off) { nak(seq, NAK_ARGS, type); return; }
        copy_at(m, 0, off, p + 4, 0, n);
        put_u32(out, off);
        out[4] = (uint8_t)n; out[5] = (uint8_t)(n >> 8);
        reply(T_WRITE_INPUT | T_REPLY, seq, 6);
        break;
    }
    case T_INVOKE:
    case T_PROFILE: {
        int profile = type == T_PROFILE;
        if (profile && (!m->info->invoke_with_hook || !m->info->layer_ticks)) { nak(seq, NAK_ARGS, type); return; }
        reply(type | T_REPLY, seq, run_timed(m, profile, out));
        break;
    }
    case T_RESET:        /* - -> -: the model's state as after init (a model without state: NAK_ARGS) */
        if (len != 0 || !m->info->reset) { nak(seq, NAK_ARGS, type); return; }
        m->info->reset();
        reply(T_RESET | T_REPLY, seq, 0);
        break;
    case T_CAPTURE: {    /* layer u32 -> status i32, input crc16, offset u32, bytes u32, crc16 of the layer output */
        if (len != 4 || !m->info->invoke_with_hook || get_u32(p) >= m->info->layer_count) { nak(seq, NAK_ARGS, type); return; }
        uint32_t layer = get_u32(p);
        uint16_t in_crc = crc_of(m, 0);
        int status = run_until(m, layer);
        uint32_t off = m->info->layer_output_offsets[layer], n = m->info->layer_output_bytes[layer];
        const int8_t *at = arena_bytes_at(m, off, n);
        uint16_t crc = at ? edgec_link_crc16((const uint8_t *)at, n) : 0u;
        put_u32(out, (uint32_t)status);
        out[4] = (uint8_t)in_crc; out[5] = (uint8_t)(in_crc >> 8);
        put_u32(out + 6, off);
        put_u32(out + 10, n);
        out[14] = (uint8_t)crc; out[15] = (uint8_t)(crc >> 8);
        reply(T_CAPTURE | T_REPLY, seq, 16);
        break;
    }
    case T_READ: {       /* region u8, offset u32, length u16 -> data */
        if (len != 7 || !read_region(m, p[0], get_u32(p + 1), p[5] | (uint32_t)p[6] << 8, out)) {
            nak(seq, NAK_ARGS, type);
            return;
        }
        reply(T_READ | T_REPLY, seq, p[5] | (size_t)p[6] << 8);
        break;
    }
    case T_READ_OUTPUT: {
        if (len != 6) { nak(seq, NAK_ARGS, type); return; }
        uint32_t off = get_u32(p), n = p[4] | (uint32_t)p[5] << 8;
        if (n > EDGEC_LINK_MAX_PAYLOAD || off > m->output_bytes || n > m->output_bytes - off) {
            nak(seq, NAK_ARGS, type);
            return;
        }
        copy_at(m, 1, off, 0, out, n);
        reply(T_READ_OUTPUT | T_REPLY, seq, n);
        break;
    }
    default:
        nak(seq, NAK_UNKNOWN, type);
        return;
    }
    last_seq = seq;
    last_type = type;
}

void edgec_link_serve(const edgec_link_model *m)
{
    size_t n = 0;
    int overflow = 0;
    for (;;) {
        uint8_t c = (uint8_t)edgec_uart_getc();
        if (c != 0) {
            if (n < sizeof wire) wire[n++] = c; else overflow = 1;
            continue;
        }
        if (n == 0 && !overflow) continue;            /* empty frame: resynchronisation only */
        if (overflow) {
            nak(0, NAK_TOO_LONG, 0);
        } else {
            uint8_t *frame = wire;
            size_t len = edgec_link_cobs_decode(wire, n, frame);
            int ok = len != (size_t)-1 && len >= 4 && len <= FRAME_MAX &&
                     edgec_link_crc16(frame, len - 2) == (uint16_t)(frame[len - 2] | frame[len - 1] << 8);
            if (ok) {
                handle(m, frame[0], frame[1], frame + 2, len - 4);
            } else {
                int some = len != (size_t)-1 && len >= 2;   /* best guess of what was rejected */
                nak(some ? frame[1] : 0, NAK_CORRUPT, some ? frame[0] : 0);
            }
        }
        n = 0;
        overflow = 0;
    }
}
