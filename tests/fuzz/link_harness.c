/* Host harness for the device's frame parser (runtime_c/harness/edgec_link.c): one fuzz input is a byte stream the
 * "UART" delivers to edgec_link_serve(); when it runs dry the harness jumps out of the serve loop.
 *
 *   input[0] bit 0 = 0: the rest of the input is the raw stream (framing, COBS and CRC errors);
 *   input[0] bit 0 = 1: the rest is a list of requests [len u8][type u8][seq u8][payload len][crc ok u8], which
 *                       the harness frames properly (valid COBS, CRC right or wrong): the command handlers.
 * Every byte the device sends back is checked: whole COBS frames, a right CRC, type = request | 0x80 or NAK;
 * in the framed mode, exactly one reply per request.  A violation abort()s (a crash for the fuzzer).
 * The model behind the link is a stub whose buffers are heap blocks of their exact sizes, so ASan sees any
 * access outside them.
 *
 * Built with -DEDGEC_LIBFUZZER it is a libFuzzer target (scripts/fuzz_parsers.sh); otherwise main() reads
 * inputs from stdin as [u32 LE length][bytes]... (tests/test_harness_parsers.py). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_board.h"   /* the fake UART over the fuzz input */
#include "edgec_link.h"

#define IN_BYTES 300u
#define OUT_BYTES 10u
#define ARENA_BYTES 600u
#define LAYERS 3u

static uint8_t reply[4096];
static size_t reply_len, replies;

static void fail(const char *why) { fprintf(stderr, "link harness: %s\n", why); abort(); }

uint64_t edgec_ticks(void) { static uint64_t t; return t += 7; }

/* a reply frame ended: it must decode, be long enough, carry a right CRC and a reply or NAK type */
static void check_reply(void)
{
    uint8_t frame[sizeof reply];
    size_t n = edgec_link_cobs_decode(reply, reply_len, frame);
    if (n == (size_t)-1 || n < 4 || n > 4 + EDGEC_LINK_MAX_PAYLOAD) fail("malformed reply frame");
    if (edgec_link_crc16(frame, n - 2) != (uint16_t)(frame[n - 2] | frame[n - 1] << 8)) fail("reply CRC wrong");
    if (!(frame[0] & 0x80u)) fail("reply type without the reply bit");
    replies++;
    reply_len = 0;
}

void edgec_uart_putc(uint8_t c)
{
    if (c == 0) { check_reply(); return; }
    if (reply_len == sizeof reply) fail("reply frame too long");
    reply[reply_len++] = c;
}
void edgec_uart_write(const void *buf, size_t n)
{
    const uint8_t *p = (const uint8_t *)buf;
    while (n--) edgec_uart_putc(*p++);
}

/* ---- the stub model ---- */
static int8_t *arena;
static void hook_noop(uint32_t layer, void *ctx) { (void)layer; (void)ctx; }
static int invoke_with_hook(void (*after)(uint32_t, void *), void *ctx)
{
    for (uint32_t i = 0; i < LAYERS; i++) {
        memset(arena + 100u * i, (int)i, 100u);
        (after ? after : hook_noop)(i, ctx);
    }
    return 0;
}
static int invoke(void) { return invoke_with_hook(0, 0); }
static const uint32_t offsets[LAYERS] = {0u, 100u, 590u};
static const uint32_t sizes[LAYERS] = {100u, 100u, 10u};

static int serve(const uint8_t *stream, size_t n)
{
    edgec_link_model m;
    edgec_link_info info;
    int8_t *input = malloc(IN_BYTES);
    arena = malloc(ARENA_BYTES);
    uint32_t *ticks = malloc(LAYERS * sizeof *ticks);
    memset(input, 0, IN_BYTES);
    memset(arena, 0, ARENA_BYTES);
    memset(ticks, 0, LAYERS * sizeof *ticks);
    info.model_name = "stub"; info.model_hash = "0123456789abcdef"; info.board_name = "host";
    info.reset = 0; info.arena_at = 0; info.layer_count = LAYERS;
    info.layer_output_offsets = offsets; info.layer_output_bytes = sizes;
    info.invoke_with_hook = invoke_with_hook; info.layer_ticks = ticks;
    info.input_parts = info.output_parts = 0; info.input_part_count = info.output_part_count = 0;
    m.info = &info;
    m.input = input; m.input_bytes = IN_BYTES;
    m.output = arena + 590; m.output_bytes = OUT_BYTES;
    m.invoke = invoke; m.arena = arena; m.arena_bytes = ARENA_BYTES;
    feed = stream; feed_len = n; feed_pos = 0; reply_len = 0; replies = 0;
    if (!setjmp(dry)) edgec_link_serve(&m);
    free(input); free(arena); free(ticks);
    return 0;
}

/* framed mode: build a well-framed stream from [len][type][seq][payload][crc ok] records */
static int fuzz_framed(const uint8_t *data, size_t n)
{
    uint8_t *stream = malloc(n * 3 + 16), frame[600];
    size_t s = 0, i = 0, requests = 0;
    while (i < n) {
        uint8_t b = data[i++];
        size_t len = b + (b > 200u && (b & 1u) ? 60u : 0u);   /* up to 315 B: payloads above 256 B too */
        if (i + 2 > n) break;
        frame[0] = data[i]; frame[1] = data[i + 1];
        i += 2;
        if (len > n - i) len = n - i;
        memcpy(frame + 2, data + i, len);
        i += len;
        int crc_ok = i < n ? (data[i++] & 7u) != 0 : 1;
        uint16_t crc = (uint16_t)(edgec_link_crc16(frame, 2 + len) ^ (crc_ok ? 0u : 0x1234u));
        frame[2 + len] = (uint8_t)crc; frame[3 + len] = (uint8_t)(crc >> 8);
        uint8_t *wire = realloc(stream, s + 700);
        stream = wire;
        s += edgec_link_cobs_encode(frame, 4 + len, stream + s);
        stream[s++] = 0;
        requests++;
    }
    serve(stream, s);
    if (replies != requests) {
        fprintf(stderr, "link harness: %zu requests, %zu replies\n", requests, replies);
        abort();
    }
    free(stream);
    return 0;
}

static int fuzz_one(const uint8_t *data, size_t n)
{
    if (n == 0) return 0;
    if (data[0] & 1u) return fuzz_framed(data + 1, n - 1);
    uint8_t *copy = malloc(n - 1 ? n - 1 : 1);     /* exact size: reads past the stream are caught */
    memcpy(copy, data + 1, n - 1);
    serve(copy, n - 1);
    free(copy);
    return 0;
}

#include "harness_main.h"   /* libFuzzer entry point, or main() over stdin */
