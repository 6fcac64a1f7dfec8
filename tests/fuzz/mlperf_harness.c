/* Host harness for the MLPerf Tiny runner's command parser (runtime_c/harness/edgec_mlperf.c): one fuzz input is the
 * text the "UART" delivers to edgec_mlperf_serve(); when it runs dry the harness jumps out of the serve loop.
 * Every line the device prints must be printable ASCII ending in CRLF and start with "m-" or "e-" (or be the
 * help text); a violation abort()s.  The model is a stub whose buffers are heap blocks of their exact sizes
 * (ASan sees any access outside them); "infer" runs are capped so a huge iteration count is not a hang.
 *
 * Built with -DEDGEC_LIBFUZZER it is a libFuzzer target (scripts/fuzz_parsers.sh); otherwise main() reads
 * inputs from stdin as [u32 LE length][bytes]... (tests/test_parser_fuzz.py). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_board.h"   /* the fake UART over the fuzz input */
#include "edgec_mlperf.h"

#define IN_BYTES 40u
#define OUT_BYTES 5u
#define MAX_INVOKES 2000u

static char line[8192];
static size_t line_len;
static unsigned invokes;

static void fail(const char *why) { fprintf(stderr, "mlperf harness: %s: %.*s\n", why, (int)line_len, line); abort(); }

uint64_t edgec_ticks(void) { static uint64_t t; return t += 12345; }

static void end_line(void)
{
    if (line_len < 1 || line[line_len - 1] != '\r') fail("line does not end in CRLF");
    int help = line_len > 4 && (memcmp(line, "ULPM", 4) == 0 || memcmp(line, "help", 4) == 0);
    if (!help && (line_len < 3 || (memcmp(line, "m-", 2) != 0 && memcmp(line, "e-", 2) != 0)))
        fail("line is neither m- nor e-");
    line_len = 0;
}

void edgec_uart_putc(uint8_t c)
{
    if (c == '\n') { end_line(); return; }
    /* an unknown command is echoed back: the runner's own text may hold anything but NUL/CR/LF/% */
    if (line_len == sizeof line) fail("line too long");
    line[line_len++] = (char)c;
}
void edgec_uart_write(const void *buf, size_t n)
{
    const uint8_t *p = (const uint8_t *)buf;
    while (n--) edgec_uart_putc(*p++);
}

static int8_t *input, *output;
static int invoke(void)
{
    if (++invokes > MAX_INVOKES) longjmp(dry, 1);    /* "infer 100000000": a long run, not a fault */
    for (uint32_t i = 0; i < OUT_BYTES; i++) output[i] = (int8_t)(input[i] ^ input[IN_BYTES - 1 - i]);
    return 0;
}

static int fuzz_one(const uint8_t *data, size_t n)
{
    edgec_mlperf_model m;
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, data, n);
    input = malloc(IN_BYTES);
    output = malloc(OUT_BYTES);
    uint8_t *db = malloc(IN_BYTES);
    memset(input, 0, IN_BYTES); memset(output, 0, OUT_BYTES); memset(db, 0, IN_BYTES);
    m.model_version = "stub01"; m.input = input; m.input_bytes = IN_BYTES; m.output = output;
    m.output_bytes = OUT_BYTES; m.output_scale = 0.5f; m.output_zero_point = -3; m.invoke = invoke; m.db = db;
    feed = copy; feed_len = n; feed_pos = 0; line_len = 0; invokes = 0;
    if (!setjmp(dry)) edgec_mlperf_serve(&m);
    free(copy); free(input); free(output); free(db);
    return 0;
}

#include "harness_main.h"   /* libFuzzer entry point, or main() over stdin */
