/* MLPerf Tiny (EEMBC ULPMark-ML) benchmark protocol, device side: lets the MLCommons/EEMBC Tiny runner
 * drive an edgec model over the board's UART.  Based on mlcommons/tiny benchmark/runner
 * (device_under_test.py, serial_device.py, script.py) and the reference submissions' api/
 * internally_implemented.{h,cpp} and submitter_implemented.{h,cpp} (EEMBC ee_lib/th_lib):
 *
 *   commands end with '%', words are separated by ' ', at most 80 characters;
 *   every reply ends with the line "m-ready"; errors are "e-[...]" lines.
 *   name          -> m-name-dut-[edgec]
 *   profile       -> m-profile-[ULPMark for tinyML Firmware V0.0.1], m-model-[MODEL]
 *   timestamp     -> a timestamp (see below)
 *   db load N     -> m-[Expecting N bytes]    (N <= the benchmark's input bytes, db_bytes)
 *   db HEX...     -> m-load-done once N bytes have arrived (the runner sends 31 bytes per command)
 *   db print      -> m-buffer-xx-xx-...       (8 bytes per line)
 *   infer N W     -> m-warmup-start-W, m-warmup-done, m-infer-start-N, timestamp, timestamp,
 *                    m-infer-done, m-results-[...]   (W warm-up runs, then N timed runs)
 *   results       -> m-results-[...]          (formatted as the benchmark's reference firmware does)
 * At start: m-timestamp-mode-performance (or -energy), a timestamp, m-init-done, m-ready.
 *
 * Timestamps: in performance mode the line m-lap-us-N, N = the board tick counter in microseconds (on
 * the QEMU boards emulated time, -icount shift=0: one instruction = 1 ns).  In energy mode (the EEMBC
 * energy configuration, the UART behind the energy monitor at 9,600 baud) no line: the timestamp pin is
 * pulled low for at least 10 us and released, which the energy monitor records.
 *
 * Inputs: the db bytes are the benchmark's official encoding (`encoding`): raw (the model's own int8
 * input, byte for byte), int8 or uint8 values v meaning (v - encoding_zero_point) * encoding_scale
 * (KWS: int8 MFCCs with the reference model's scale/zero point; IC, VWW: uint8 pixels), or float32
 * little-endian values (AD).  `infer` converts them once, before the warm-ups, to the model's input
 * quantization (round half away from zero in single precision; edgec.device.mlperf_encoding is the
 * host twin, bit for bit), from NHWC to NCHW when `chw_channels` > 0.  The converted input is copied
 * into the model before every run, inside the timed loop, because the model's arena may reuse it.
 * Streaming (sww01, `features` set): the runner's UART streaming path (stream_wav_uart.py) sends each hop of
 * 512 int16 samples as `db load 1024` and hex `db` commands of up to 1,024 digits (replies "N bytes received",
 * then m-load-done; `db setptr N` rewinds; a shorter last hop keeps the previous hop's later samples, as the
 * reference firmware does), then `extract_uart_stream`: the front end turns the hop into
 * `mels` int8 features, the model input (the last frames' features, oldest first) shifts by one frame,
 * the model runs, and the reply is m-features-[%+3d, ...] (the new frame) and m-activations-[%+3d, ...]
 * (the int8 outputs), as the reference submission prints them, plus m-hop-ticks-[front end, model] (board
 * ticks; each is a window of the cycle-estimate plugin).  Every reply starts with "Received command: ..."
 * (the runner checks the echo).  The front end's state and the feature window persist between hops.
 * AD (results_format SCORE): the result is the anomaly score, the mean squared error between the
 * dequantized reconstruction and the float input, as the reference firmware computes it. */
#ifndef EDGEC_MLPERF_H
#define EDGEC_MLPERF_H
#include <stdint.h>

enum { EDGEC_MLPERF_RAW = 0, EDGEC_MLPERF_INT8 = 1, EDGEC_MLPERF_UINT8 = 2, EDGEC_MLPERF_FLOAT32 = 3 };
/* m-results-[...]: "%0.3f" per output (IC); the same with a trailing ',' (VWW's reference firmware
 * prints 2 values as if there were 3); "0.%d%d%d" truncated digits (KWS); one "%0.3f" score (AD). */
enum { EDGEC_MLPERF_FIXED3 = 0, EDGEC_MLPERF_FIXED3_TRAILING = 1, EDGEC_MLPERF_TRUNC3 = 2,
       EDGEC_MLPERF_SCORE = 3 };

typedef struct {
    const char *model_version;  /* m-model-[...]: e.g. kws01, vww01, ad01, ic01, or the model's name */
    int8_t *input;
    uint32_t input_bytes;
    float input_scale;
    int32_t input_zero_point;
    const int8_t *output;
    uint32_t output_bytes;
    float output_scale;
    int32_t output_zero_point;
    int (*invoke)(void);
    uint8_t *db;                /* db_bytes of buffer for the db commands (4-byte aligned) */
    uint32_t db_bytes;          /* input_bytes values in the official encoding */
    int8_t *staged;             /* input_bytes: the converted input */
    int encoding;               /* EDGEC_MLPERF_RAW / INT8 / UINT8 / FLOAT32 */
    float encoding_scale;
    int32_t encoding_zero_point;
    uint32_t chw_channels;      /* > 0: the db is NHWC with this many channels, the model wants NCHW */
    int results_format;         /* EDGEC_MLPERF_FIXED3 / FIXED3_TRAILING / TRUNC3 / SCORE */
    int energy_mode;            /* 1: timestamps pulse the pin instead of printing m-lap-us */
    void (*timestamp_pin)(int level);   /* energy mode: drive the timestamp GPIO (0 = low) */
    char *cmd;                  /* the command buffer, cmd_size + 1 bytes (80 for the runner's other benchmarks) */
    uint32_t cmd_size;
    /* streaming (sww01): features(state, hop samples, mels int8 out), else 0 */
    void (*features)(void *state, const int16_t *hop, int8_t *out);
    void *features_state;
    int8_t *window;             /* input_bytes: the model input kept between hops */
    uint32_t hop_samples, mels;
} edgec_mlperf_model;

/* Serve the runner's commands forever (never returns). */
void edgec_mlperf_serve(const edgec_mlperf_model *m);
#endif
