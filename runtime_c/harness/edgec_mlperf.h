/* MLPerf Tiny (EEMBC ULPMark-ML) benchmark protocol, device side: lets the MLCommons/EEMBC Tiny runner
 * drive an edgec model over the board's UART.  Based on mlcommons/tiny benchmark/runner
 * (device_under_test.py, serial_device.py, script.py) and the reference submissions' api/
 * internally_implemented.{h,cpp} and submitter_implemented.{h,cpp} (EEMBC ee_lib/th_lib):
 *
 *   commands end with '%', words are separated by ' ', at most 80 characters;
 *   every reply ends with the line "m-ready"; errors are "e-[...]" lines.
 *   name          -> m-name-dut-[edgec]
 *   profile       -> m-profile-[ULPMark for tinyML Firmware V0.0.1], m-model-[MODEL]
 *   timestamp     -> m-lap-us-N               (microseconds of the board's tick counter)
 *   db load N     -> m-[Expecting N bytes]    (N <= the model's input bytes)
 *   db HEX...     -> m-load-done once N bytes have arrived (the runner sends 31 bytes per command)
 *   db print      -> m-buffer-xx-xx-...       (8 bytes per line)
 *   infer N W     -> m-warmup-start-W, m-warmup-done, m-infer-start-N, m-lap-us-T0, m-lap-us-T1,
 *                    m-infer-done, m-results-[v0,v1,...]   (W warm-up runs, then N timed runs)
 *   results       -> m-results-[v0,v1,...]    (dequantized outputs, "%0.3f" each)
 * At start: m-timestamp-mode-performance, m-lap-us-N, m-init-done, m-ready.
 *
 * The db bytes are the model's int8 input (quantized with NAME_INPUT_SCALE / _ZERO_POINT), byte for
 * byte, in the ONNX model's layout.  (The MLPerf IC/VWW reference firmwares take uint8 pixels and
 * subtract 128 themselves; for an edgec model the host sends the quantized bytes.)  The input is
 * copied into the model before every run, inside the timed loop, because the model's arena may reuse
 * the input's bytes.
 * Time: m-lap-us-N is the board tick counter in microseconds; on the QEMU boards that is emulated time
 * (-icount shift=0: one instruction = 1 ns), not time at the real chip's clock. */
#ifndef EDGEC_MLPERF_H
#define EDGEC_MLPERF_H
#include <stdint.h>

typedef struct {
    const char *model_version;  /* m-model-[...]: e.g. kws01, vww01, ad01, ic01, or the model's name */
    int8_t *input;
    uint32_t input_bytes;
    const int8_t *output;
    uint32_t output_bytes;
    float output_scale;
    int32_t output_zero_point;
    int (*invoke)(void);
    uint8_t *db;                /* input_bytes of buffer for the db commands */
} edgec_mlperf_model;

/* Serve the runner's commands forever (never returns). */
void edgec_mlperf_serve(const edgec_mlperf_model *m);
#endif
