/* Streaming log-mel front end of MLPerf Tiny's streaming wake word (sww01), in fixed point: 512 new int16
 * samples (16 kHz) per hop, a 1,024-sample window, 40 int8 features as the reference submission quantizes
 * them.  The NumPy twin, bit for bit, and what each step computes: edgec/targets/audio_frontend.py; the
 * tables (edgec_afe_*) are generated from it into the firmware (edgec_afe_tables.c). */
#ifndef EDGEC_AUDIO_FRONTEND_H
#define EDGEC_AUDIO_FRONTEND_H
#include <stdint.h>

#define EDGEC_AFE_WINDOW 1024
#define EDGEC_AFE_HOP 512
#define EDGEC_AFE_MELS 40

typedef struct {
    int16_t samples[EDGEC_AFE_WINDOW];   /* the window: the previous hop's 512 samples, then the new ones */
    int16_t previous;                    /* the sample before the window (pre-emphasis across hops) */
    int32_t re[EDGEC_AFE_WINDOW], im[EDGEC_AFE_WINDOW];   /* FFT scratch */
} edgec_afe_state;

extern const int32_t edgec_afe_window[EDGEC_AFE_WINDOW];
extern const int32_t edgec_afe_cos[EDGEC_AFE_WINDOW / 2], edgec_afe_sin[EDGEC_AFE_WINDOW / 2];
extern const int16_t edgec_afe_mel_start[EDGEC_AFE_MELS], edgec_afe_mel_len[EDGEC_AFE_MELS];
extern const int32_t edgec_afe_mel_weights[];
extern const int32_t edgec_afe_log2[65];
extern const int64_t edgec_afe_a_q24, edgec_afe_b_q16, edgec_afe_y_max_q16;

void edgec_afe_reset(edgec_afe_state *s);
/* One hop: `hop` holds EDGEC_AFE_HOP new samples; writes EDGEC_AFE_MELS int8 features to `out`. */
void edgec_afe_hop(edgec_afe_state *s, const int16_t *hop, int8_t *out);
#endif
