/* edgec serial link, device side (see edgec_link.h and edgec/link.py). */
#include "edgec_link.h"

#include <string.h>

#include "edgec_board.h"

enum {
    T_SYNC = 0x01, T_HELLO = 0x02, T_WRITE_INPUT = 0x03, T_INVOKE = 0x04, T_READ_OUTPUT = 0x05,
    T_REPLY = 0x80, T_NAK = 0xEE
};
enum { NAK_CORRUPT = 1, NAK_UNKNOWN = 2, NAK_ARGS = 3, NAK_TOO_LONG = 4 };

#define FRAME_MAX (2 + EDGEC_LINK_MAX_PAYLOAD + 2)
#define WIRE_MAX (FRAME_MAX + FRAME_MAX / 254 + 2)

static uint8_t rx_wire[WIRE_MAX];
static uint8_t rx_frame[WIRE_MAX];    /* decoding never grows data */
static uint8_t tx_frame[FRAME_MAX];
static uint8_t tx_wire[WIRE_MAX + 1];
static size_t tx_wire_len;         /* the last reply, resent if the host repeats its request */
static int last_seq = -1, last_type = -1;

uint16_t edgec_link_crc16(const uint8_t *data, size_t n)
{
    uint16_t crc = 0xFFFF;
    while (n--) {
        crc ^= (uint16_t)(*data++) << 8;
        for (int i = 0; i < 8; i++) crc = (uint16_t)((crc & 0x8000u) ? ((unsigned)crc << 1) ^ 0x1021u : (unsigned)crc << 1);
    }
    return crc;
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
        uint8_t code = in[i];
        if (code == 0 || i + code > n) return (size_t)-1;
        memcpy(out + o, in + i + 1, (size_t)code - 1u);
        o += (size_t)code - 1u;
        i += code;
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

/* reply with the payload in tx_frame[2..2+len); kept in tx_wire in case the host repeats the request */
static void reply(uint8_t type, uint8_t seq, size_t len)
{
    tx_wire_len = send_frame(tx_frame, tx_wire, type, seq, len);
}

/* NAKs use their own buffers so the cached reply survives them */
static void nak(uint8_t seq, uint8_t code, uint8_t type)
{
    uint8_t frame[6], wire[8];
    frame[2] = code;
    frame[3] = type;
    send_frame(frame, wire, T_NAK, seq, 2);
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
    if (type != T_SYNC && (int)seq == last_seq && (int)type == last_type && tx_wire_len) {
        edgec_uart_write(tx_wire, tx_wire_len);      /* the host lost our reply: resend it */
        edgec_uart_flush();
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
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->board_name);
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->model_name);
        n += put_str(out + n, EDGEC_LINK_MAX_PAYLOAD - n, m->model_hash);
        reply(T_HELLO | T_REPLY, seq, n);
        break;
    }
    case T_WRITE_INPUT: {
        if (len < 4) { nak(seq, NAK_ARGS, type); return; }
        uint32_t off = get_u32(p), n = (uint32_t)(len - 4);
        if (off > m->input_bytes || n > m->input_bytes - off) { nak(seq, NAK_ARGS, type); return; }
        memcpy(m->input + off, p + 4, n);
        put_u32(out, off);
        out[4] = (uint8_t)n; out[5] = (uint8_t)(n >> 8);
        reply(T_WRITE_INPUT | T_REPLY, seq, 6);
        break;
    }
    case T_INVOKE: {
        edgec_ticks_align();
        uint64_t t0 = edgec_ticks();
        int status = m->invoke();
        uint64_t t1 = edgec_ticks();
        uint64_t dt = t1 - t0;
        put_u32(out, (uint32_t)status);
        put_u32(out + 4, (uint32_t)dt);
        put_u32(out + 8, (uint32_t)(dt >> 32));
        reply(T_INVOKE | T_REPLY, seq, 12);
        break;
    }
    case T_READ_OUTPUT: {
        if (len != 6) { nak(seq, NAK_ARGS, type); return; }
        uint32_t off = get_u32(p), n = p[4] | (uint32_t)p[5] << 8;
        if (n > EDGEC_LINK_MAX_PAYLOAD || off > m->output_bytes || n > m->output_bytes - off) {
            nak(seq, NAK_ARGS, type);
            return;
        }
        memcpy(out, m->output + off, n);
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
            if (n < sizeof rx_wire) rx_wire[n++] = c; else overflow = 1;
            continue;
        }
        if (n == 0 && !overflow) continue;            /* empty frame: resynchronisation only */
        if (overflow) {
            nak(0, NAK_TOO_LONG, 0);
        } else {
            size_t len = edgec_link_cobs_decode(rx_wire, n, rx_frame);
            int ok = len != (size_t)-1 && len >= 4 && len <= FRAME_MAX &&
                     edgec_link_crc16(rx_frame, len - 2) == (uint16_t)(rx_frame[len - 2] | rx_frame[len - 1] << 8);
            if (ok) {
                handle(m, rx_frame[0], rx_frame[1], rx_frame + 2, len - 4);
            } else {
                int some = len != (size_t)-1 && len >= 2;   /* best guess of what was rejected */
                nak(some ? rx_frame[1] : 0, NAK_CORRUPT, some ? rx_frame[0] : 0);
            }
        }
        n = 0;
        overflow = 0;
    }
}
