/* MLPerf Tiny runner protocol, device side (see edgec_mlperf.h). */
#include "edgec_mlperf.h"

#include <string.h>

#include "edgec_board.h"
#include "edgec_timed.h"

#define FW_VERSION "ULPMark for tinyML Firmware V0.0.1"

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
static void put_i32(int32_t v)
{
    if (v < 0) { puts_("-"); put_u64((uint64_t)(-(int64_t)v)); }
    else put_u64((uint64_t)v);
}

/* "%0.3f" of v as printf prints it, without printf: v * 1000 is exact in double (24 + 10 bits), so the
 * rounding (half to even on the exact value, like glibc and Python) is exact too */
static void put_fixed3(float v)
{
    if (v > 2e9f) v = 2e9f;
    if (v < -2e9f) v = -2e9f;
    double x = (double)(v < 0 ? -v : v) * 1000.0;
    uint64_t milli = (uint64_t)x;
    double frac = x - (double)milli;
    if (frac > 0.5 || (frac == 0.5 && (milli & 1u))) milli++;
    if (v < 0) puts_("-");
    put_u64(milli / 1000u);
    puts_(".");
    char digits[4] = {(char)('0' + milli / 100u % 10u), (char)('0' + milli / 10u % 10u), (char)('0' + milli % 10u), 0};
    puts_(digits);
}

/* the KWS reference firmware's "0.%d%d%d" of int(v*10), int(v*100)%10, int(v*1000)%10 (truncated) */
static void put_trunc3(float v)
{
    puts_("0.");
    put_i32((int32_t)(v * 10));
    put_i32((int32_t)(v * 100) % 10);
    put_i32((int32_t)(v * 1000) % 10);
}

static void timestamp(const edgec_mlperf_model *m)
{
    if (m->energy_mode) {
        /* EEMBC energy mode: pull the timestamp pin low for >= 10 us, then release it */
        uint64_t t0 = edgec_ticks(), hold = edgec_tick_hz() / 100000u + 1u;
        m->timestamp_pin(0);
        while (edgec_ticks() - t0 < hold) { }
        m->timestamp_pin(1);
        return;
    }
    uint64_t t = edgec_ticks(), hz = edgec_tick_hz();
    puts_("m-lap-us-");
    put_u64(t / hz * 1000000u + t % hz * 1000000u / hz);
    puts_("\r\n");
}

static float dequantized(const edgec_mlperf_model *m, uint32_t i)
{
    return (float)((int32_t)m->output[i] - m->output_zero_point) * m->output_scale;
}

/* AD: mean over the input of (dequantized output - float input)^2, summed in order in single precision.
 * The volatiles keep the compiler from fusing a multiply and an add (the host twin rounds each step). */
static float anomaly_score(const edgec_mlperf_model *m)
{
    float sum = 0.0f;
    for (uint32_t i = 0; i < m->output_bytes; i++) {
        float x;
        memcpy(&x, m->db + 4u * i, sizeof x);
        volatile float out = dequantized(m, i);
        volatile float d = out - x;
        volatile float sq = d * d;
        sum = sum + sq;
    }
    return sum / (float)m->output_bytes;
}

static void results(const edgec_mlperf_model *m)
{
    puts_("m-results-[");
    if (m->results_format == EDGEC_MLPERF_SCORE) {
        put_fixed3(anomaly_score(m));
    } else {
        for (uint32_t i = 0; i < m->output_bytes; i++) {
            if (m->results_format == EDGEC_MLPERF_TRUNC3) put_trunc3(dequantized(m, i));
            else put_fixed3(dequantized(m, i));
            if (i + 1 < m->output_bytes || m->results_format == EDGEC_MLPERF_FIXED3_TRAILING) puts_(",");
        }
    }
    puts_("]\r\n");
}

/* One official-encoding value -> the model's int8 input: round(x / scale) half away from zero, + zero
 * point, clamped; every step in single precision (edgec.device.mlperf_encoding.to_model_input). */
static int8_t quantized(const edgec_mlperf_model *m, float x)
{
    float v = x / m->input_scale;
    float a = v < 0 ? -v : v;
    if (!(a < 1000.0f)) a = 1000.0f;
    int32_t r = (int32_t)(a + 0.5f);
    int32_t q = (v < 0 ? -r : r) + m->input_zero_point;
    return (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
}

static void convert_input(const edgec_mlperf_model *m)
{
    uint32_t n = m->input_bytes, c = m->chw_channels, hw = c ? n / c : 0;
    for (uint32_t i = 0; i < n; i++) {
        int8_t q;
        if (m->encoding == EDGEC_MLPERF_RAW) {
            q = (int8_t)m->db[i];
        } else {
            float x;
            if (m->encoding == EDGEC_MLPERF_FLOAT32) {
                memcpy(&x, m->db + 4u * i, sizeof x);
            } else {
                int32_t v = m->encoding == EDGEC_MLPERF_INT8 ? (int32_t)(int8_t)m->db[i] : (int32_t)m->db[i];
                x = (float)(v - m->encoding_zero_point) * m->encoding_scale;
            }
            q = quantized(m, x);
        }
        m->staged[c ? i % c * hw + i / c : i] = q;   /* NHWC element i -> NCHW */
    }
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
        } else if (n > m->db_bytes) {
            puts_("e-[Supplied buffer size "); put_u64(n); puts_(" exceeds maximum of ");
            put_u64(m->db_bytes); puts_("]\r\n");
        } else {
            db_size = n;
            db_pos = 0;
            puts_("m-[Expecting "); put_u64(n); puts_(" bytes]\r\n");
        }
    } else if (strcmp(sub, "setptr") == 0 && m->features) {
        if (!to_uint(word(rest), &n) || n > db_size) line("e-[db setptr needs a position within the load]");
        else db_pos = n;
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
        if (m->features) { put_u64(db_pos); puts_(" bytes received\r\n"); }
    }
}

/* printf's "%+3d" */
static void put_signed3(int32_t v)
{
    uint32_t a = (uint32_t)(v < 0 ? -v : v);
    if (a < 10) puts_(" ");
    puts_(v < 0 ? "-" : "+");
    put_u64(a);
}

static void put_int8s(const char *head, const int8_t *v, uint32_t n)
{
    puts_(head);
    for (uint32_t i = 0; i < n; i++) { put_signed3(v[i]); if (i + 1 < n) puts_(", "); }
    puts_("]\r\n");
}

/* extract_uart_stream: one hop of audio in the db (little-endian int16) -> features, model, reply */
static void stream_hop(const edgec_mlperf_model *m)
{
    if (!m->features) { line("e-[This firmware does not stream audio: build it with --mlperf-model sww01]"); return; }
    if (db_size == 0 || db_size > 2u * m->hop_samples || (db_size & 1u) || db_pos != db_size) {
        puts_("e-[A hop is db load N (even, at most "); put_u64(2u * m->hop_samples); puts_(") and its N bytes; have ");
        put_u64(db_pos); puts_("]\r\n");
        return;
    }
    /* A short last hop (the runner sends the WAV's tail as it is) keeps the previous hop's later samples in the
     * rest of the buffer, as the reference firmware's does.  Little-endian bytes -> samples, in place (the
     * identity on little-endian targets, so the kept samples stay valid). */
    int16_t *hop = (int16_t *)(void *)m->db;          /* 4-byte aligned */
    for (uint32_t i = 0; i < m->hop_samples; i++) {
        uint16_t u = (uint16_t)(m->db[2 * i] | (uint16_t)m->db[2 * i + 1] << 8);
        hop[i] = (int16_t)u;
    }
    int8_t *newest = m->window + m->input_bytes - m->mels;
    memmove(m->window, m->window + m->mels, m->input_bytes - m->mels);
    edgec_ticks_align();
    uint64_t t0 = edgec_ticks();
    m->features(m->features_state, hop, newest);
    uint64_t t1 = edgec_ticks();
    memcpy(m->input, m->window, m->input_bytes);
    edgec_timed_run run;
    run.invoke = m->invoke;
    edgec_timed_invoke(&run);
    db_size = db_pos = 0;
    put_int8s("m-features-[", newest, m->mels);
    put_int8s("m-activations-[", m->output, m->output_bytes);
    puts_("m-hop-ticks-["); put_u64(t1 - t0); puts_(", "); put_u64(run.ticks); puts_("]\r\n");
}

static void infer(const edgec_mlperf_model *m, char **rest)
{
    uint32_t n = 1, w = 10;
    char *a = word(rest), *b = word(rest);
    if (a && (!to_uint(a, &n) || n == 0)) { line("e-[Inference iterations must be >0]"); return; }
    if (b && !to_uint(b, &w)) { line("e-[Inference warmup must be >=0]"); return; }
    if (db_size != m->db_bytes || db_pos != db_size) {
        puts_("e-[Input db has "); put_u64(db_pos); puts_(" bytes, expected "); put_u64(m->db_bytes);
        puts_("]\r\n");
        return;
    }
    convert_input(m);
    puts_("m-warmup-start-"); put_u64(w); puts_("\r\n");
    while (w--) { memcpy(m->input, m->staged, m->input_bytes); m->invoke(); }
    line("m-warmup-done");
    puts_("m-infer-start-"); put_u64(n); puts_("\r\n");
    edgec_uart_flush();
    timestamp(m);
    for (uint32_t i = 0; i < n; i++) { memcpy(m->input, m->staged, m->input_bytes); m->invoke(); }
    timestamp(m);
    line("m-infer-done");
    results(m);
}

static void dispatch(const edgec_mlperf_model *m, char *text)
{
    if (m->features) { puts_("Received command: "); line(text); }
    char *rest = text, *w = word(&rest);
    if (!w) {
        /* an empty command: just m-ready */
    } else if (strcmp(w, "name") == 0) {
        line("m-name-dut-[edgec]");
    } else if (strcmp(w, "timestamp") == 0) {
        timestamp(m);
    } else if (strcmp(w, "profile") == 0) {
        line("m-profile-[" FW_VERSION "]");
        puts_("m-model-["); puts_(m->model_version); puts_("]\r\n");
    } else if (strcmp(w, "help") == 0) {
        line(FW_VERSION);
        line("help | name | timestamp | profile | db load N | db HH[HH]* | db print | infer N [W=10] | results"
             " | extract_uart_stream (sww01)");
    } else if (strcmp(w, "db") == 0) {
        db_command(m, &rest);
    } else if (strcmp(w, "infer") == 0) {
        infer(m, &rest);
    } else if (strcmp(w, "results") == 0) {
        results(m);
    } else if (strcmp(w, "extract_uart_stream") == 0) {
        stream_hop(m);
    } else {
        puts_("e-[Unknown command: "); puts_(w); puts_("]\r\n");
    }
    line("m-ready");
    edgec_uart_flush();
}

void edgec_mlperf_serve(const edgec_mlperf_model *m)
{
    uint32_t pos = 0;
    db_size = db_pos = 0;      /* the db state belongs to this model's buffer */
    line(m->energy_mode ? "m-timestamp-mode-energy" : "m-timestamp-mode-performance");
    timestamp(m);
    line("m-init-done");
    line("m-ready");
    edgec_uart_flush();
    for (;;) {
        char c = (char)edgec_uart_getc();
        if (c == '%') {
            m->cmd[pos] = 0;
            dispatch(m, m->cmd);
            pos = 0;
        } else if (c != '\r' && c != '\n') {
            m->cmd[pos] = c;
            pos = pos >= m->cmd_size ? m->cmd_size : pos + 1;
        }
    }
}
