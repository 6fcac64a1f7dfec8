/* MLPerf Tiny runner protocol, device side (see edgec_mlperf.h). */
#include "edgec_mlperf.h"

#include <string.h>

#include "edgec_board.h"

#define CMD_SIZE 80u
#define FW_VERSION "ULPMark for tinyML Firmware V0.0.1"

static char cmd[CMD_SIZE + 1];
static uint32_t db_size, db_pos;

static void puts_(const char *s) { edgec_uart_write(s, strlen(s)); }
static void line(const char *s) { puts_(s); puts_("\r\n"); }

static void put_u64(uint64_t v)
{
    char buf[21];
    int i = 20;
    buf[i] = 0;
    do { buf[--i] = (char)('0' + v % 10u); v /= 10u; } while (v);
    puts_(buf + i);
}

static void put_hex2(uint8_t b)
{
    static const char hex[] = "0123456789abcdef";
    char s[3] = {hex[b >> 4], hex[b & 15], 0};
    puts_(s);
}

/* "%0.3f" of v, without printf */
static void put_fixed3(float v)
{
    if (v > 2e9f) v = 2e9f;
    if (v < -2e9f) v = -2e9f;
    int neg = v < 0;
    uint64_t milli = (uint64_t)((neg ? -v : v) * 1000.0f + 0.5f);
    if (neg && milli) puts_("-");
    put_u64(milli / 1000u);
    puts_(".");
    char frac[4] = {(char)('0' + milli / 100u % 10u), (char)('0' + milli / 10u % 10u), (char)('0' + milli % 10u), 0};
    puts_(frac);
}

static void timestamp(void)
{
    uint64_t t = edgec_ticks(), hz = edgec_tick_hz();
    puts_("m-lap-us-");
    put_u64(t / hz * 1000000u + t % hz * 1000000u / hz);
    puts_("\r\n");
}

static void results(const edgec_mlperf_model *m)
{
    puts_("m-results-[");
    for (uint32_t i = 0; i < m->output_bytes; i++) {
        put_fixed3((float)((int32_t)m->output[i] - m->output_zero_point) * m->output_scale);
        if (i + 1 < m->output_bytes) puts_(",");
    }
    puts_("]\r\n");
}

/* strtok-free word splitting: the next word of *p (NUL-terminated in place), or 0 */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ') s++;
    if (!*s) { *p = s; return 0; }
    char *w = s;
    while (*s && *s != ' ') s++;
    if (*s) *s++ = 0;
    *p = s;
    return w;
}

static int to_uint(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    if (!s || !*s) return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000u) return 0;
        v = v * 10u + (uint32_t)(*s - '0');
    }
    *out = v;
    return 1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void db_command(const edgec_mlperf_model *m, char **rest)
{
    char *sub = word(rest);
    uint32_t n;
    if (!sub) {
        line("e-[Command 'db' requires a subcommand]");
    } else if (strcmp(sub, "load") == 0) {
        if (!to_uint(word(rest), &n) || n == 0) {
            line("e-[Command 'db load' requires the # of bytes, >0]");
        } else if (n > m->input_bytes) {
            puts_("e-[Supplied buffer size "); put_u64(n); puts_(" exceeds maximum of ");
            put_u64(m->input_bytes); puts_("]\r\n");
        } else {
            db_size = n;
            db_pos = 0;
            puts_("m-[Expecting "); put_u64(n); puts_(" bytes]\r\n");
        }
    } else if (strcmp(sub, "print") == 0) {
        for (uint32_t i = 0; i < db_size; i++) {
            if (i % 8u == 0) puts_("m-buffer-");
            put_hex2(m->db[i]);
            puts_((i + 1) % 8u == 0 || i + 1 == db_size ? "\r\n" : "-");
        }
    } else {
        size_t len = strlen(sub);
        if (len & 1u) { line("e-[Insufficent number of hex digits]"); return; }
        for (size_t i = 0; i < len; i += 2) {
            int hi = hexval(sub[i]), lo = hexval(sub[i + 1]);
            if (hi < 0 || lo < 0) { line("e-[Invalid hex digit]"); return; }
            if (db_pos >= db_size) break;
            m->db[db_pos++] = (uint8_t)(hi << 4 | lo);
            if (db_pos == db_size) { line("m-load-done"); return; }
        }
    }
}

static void infer(const edgec_mlperf_model *m, char **rest)
{
    uint32_t n = 1, w = 10;
    char *a = word(rest), *b = word(rest);
    if (a && (!to_uint(a, &n) || n == 0)) { line("e-[Inference iterations must be >0]"); return; }
    if (b && !to_uint(b, &w)) { line("e-[Inference warmup must be >=0]"); return; }
    if (db_size != m->input_bytes || db_pos != db_size) {
        puts_("e-[Input db has "); put_u64(db_pos); puts_(" bytes, expected "); put_u64(m->input_bytes);
        puts_("]\r\n");
        return;
    }
    puts_("m-warmup-start-"); put_u64(w); puts_("\r\n");
    while (w--) { memcpy(m->input, m->db, m->input_bytes); m->invoke(); }
    line("m-warmup-done");
    puts_("m-infer-start-"); put_u64(n); puts_("\r\n");
    edgec_uart_flush();
    timestamp();
    for (uint32_t i = 0; i < n; i++) { memcpy(m->input, m->db, m->input_bytes); m->invoke(); }
    timestamp();
    line("m-infer-done");
    results(m);
}

static void dispatch(const edgec_mlperf_model *m, char *text)
{
    char *rest = text, *w = word(&rest);
    if (!w) {
        /* an empty command: just m-ready */
    } else if (strcmp(w, "name") == 0) {
        line("m-name-dut-[edgec]");
    } else if (strcmp(w, "timestamp") == 0) {
        timestamp();
    } else if (strcmp(w, "profile") == 0) {
        line("m-profile-[" FW_VERSION "]");
        puts_("m-model-["); puts_(m->model_version); puts_("]\r\n");
    } else if (strcmp(w, "help") == 0) {
        line(FW_VERSION);
        line("help | name | timestamp | profile | db load N | db HH[HH]* | db print | infer N [W=10] | results");
    } else if (strcmp(w, "db") == 0) {
        db_command(m, &rest);
    } else if (strcmp(w, "infer") == 0) {
        infer(m, &rest);
    } else if (strcmp(w, "results") == 0) {
        results(m);
    } else {
        puts_("e-[Unknown command: "); puts_(w); puts_("]\r\n");
    }
    line("m-ready");
    edgec_uart_flush();
}

void edgec_mlperf_serve(const edgec_mlperf_model *m)
{
    uint32_t pos = 0;
    line("m-timestamp-mode-performance");
    timestamp();
    line("m-init-done");
    line("m-ready");
    edgec_uart_flush();
    for (;;) {
        char c = (char)edgec_uart_getc();
        if (c == '%') {
            cmd[pos] = 0;
            dispatch(m, cmd);
            pos = 0;
        } else if (c != '\r' && c != '\n') {
            cmd[pos] = c;
            pos = pos >= CMD_SIZE ? CMD_SIZE : pos + 1;
        }
    }
}
