/* Host harness for the MLPerf Tiny runner's command parser (runtime_c/harness/edgec_mlperf.c): one fuzz input is the
 * text the "UART" delivers to edgec_mlperf_serve(); when it runs dry the harness jumps out of the serve loop.
 * Every line the device prints must be printable ASCII ending in CRLF and start with "m-" or "e-" (or be the
 * help text); a violation abort()s.  The model is a stub whose buffers are heap blocks of their exact sizes
 * (ASan sees any access outside them); "infer" runs are capped so a huge iteration count is not a hang.
 * The input length picks one of four configurations, so every input encoding (raw, int8 with an NHWC->NCHW
 * transpose, uint8, float32), every results format (fixed3, KWS's trunc3, VWW's trailing comma, AD's score)
 * and energy mode (a stub timestamp pin) are fuzzed.
 *
 * Built with -DEDGEC_LIBFUZZER it is a libFuzzer target (scripts/fuzz_parsers.sh); otherwise main() reads
 * inputs from stdin as [u32 LE length][bytes]... (tests/test_harness_parsers.py). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_board.h"   /* the fake UART over the fuzz input */
#include "edgec_mlperf.h"

#define IN_BYTES 40u
#define OUT_MAX 40u
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
static uint32_t out_bytes;
static int pin_level = 1;
static int invoke(void)
{
    if (++invokes > MAX_INVOKES) longjmp(dry, 1);    /* "infer 100000000": a long run, not a fault */
    for (uint32_t i = 0; i < out_bytes; i++) output[i] = (int8_t)(input[i] ^ input[IN_BYTES - 1 - i]);
    return 0;
}
static void timestamp_pin(int level)
{
    if (level == pin_level) fail("the timestamp pin did not toggle");
    pin_level = level;
}

static int fuzz_one(const uint8_t *data, size_t n)
{
    edgec_mlperf_model m;
    static char cmd[81];                           /* the runner's 80-byte commands (sww01's longer ones: not fuzzed) */
    memset(&m, 0, sizeof m);                       /* no streaming front end: features 0 */
    m.cmd = cmd; m.cmd_size = 80u;
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, data, n);
    int cfg = (int)(n % 4u);                       /* 0 raw, 1 int8 + NCHW, 2 uint8, 3 float32 AD score + energy */
    uint32_t db_bytes = cfg == 3 ? 4u * IN_BYTES : IN_BYTES;
    out_bytes = cfg == 3 ? IN_BYTES : 5u;
    input = malloc(IN_BYTES);
    output = malloc(out_bytes);
    int8_t *staged = malloc(IN_BYTES);
    uint8_t *db = malloc(db_bytes);
    memset(input, 0, IN_BYTES); memset(output, 0, out_bytes); memset(db, 0, db_bytes);
    m.model_version = "stub01"; m.input = input; m.input_bytes = IN_BYTES; m.output = output;
    m.input_scale = 0.37f; m.input_zero_point = 5;
    m.output_bytes = out_bytes; m.output_scale = 0.5f; m.output_zero_point = -3; m.invoke = invoke; m.db = db;
    m.db_bytes = db_bytes; m.staged = staged; m.encoding = cfg; m.encoding_scale = 0.59f;
    m.encoding_zero_point = 83; m.chw_channels = cfg == 1 ? 4u : 0u;
    m.results_format = cfg == 1 ? EDGEC_MLPERF_TRUNC3 : cfg == 2 ? EDGEC_MLPERF_FIXED3_TRAILING
                     : cfg == 3 ? EDGEC_MLPERF_SCORE : EDGEC_MLPERF_FIXED3;
    m.energy_mode = cfg == 3; m.timestamp_pin = timestamp_pin; pin_level = 1;
    feed = copy; feed_len = n; feed_pos = 0; line_len = 0; invokes = 0;
    if (!setjmp(dry)) edgec_mlperf_serve(&m);
    free(copy); free(input); free(output); free(db); free(staged);
    return 0;
}

#include "harness_main.h"   /* libFuzzer entry point, or main() over stdin */
