/* edgec serial link, device side: serves the host's benchmark commands over the board's UART.
 *
 * Frames are COBS-encoded and end with 0x00; decoded, a frame is
 *   [type u8][seq u8][payload 0..256][crc16 u16 LE]   (CRC-16/CCITT-FALSE over type, seq, payload)
 * The host side and the command list are in edgec/device/link.py. */
#ifndef EDGEC_LINK_H
#define EDGEC_LINK_H
#include <stddef.h>
#include <stdint.h>

#define EDGEC_LINK_PROTOCOL_VERSION 2
#define EDGEC_LINK_MAX_PAYLOAD 256

/* One input or output of a model with several: the link's input (output) is all of them, one after the other,
 * in the model's order (edgec/ports.py: the packed layout). */
typedef struct {
    int8_t *data;
    uint32_t bytes;
} edgec_link_part;

/* What the link reads of a model and the generated main knows at compile time: a static const (flash), not a part
 * of main's frame on the stack that every invoke runs below (the measured stack: 52 B less than in one record). */
typedef struct {
    const char *model_name;     /* the model's C name */
    const char *model_hash;     /* 16 hex digits identifying the quantized model */
    const char *board_name;     /* edgec board profile name */
    void (*reset)(void);        /* a model with state (NAME_reset): RESET sets it back; NULL: none */
    /* Introspection for PROFILE and CAPTURE (NAME_LAYER_COUNT, NAME_layer_output_*[] and NAME_invoke_with_hook).
     * invoke_with_hook may be NULL: both then answer NAK (bad arguments). */
    /* the arena bytes [offset, offset + n) or NULL (NAME_arena_at: an arena in pieces in several RAM regions);
     * NULL here: arena + offset */
    const int8_t *(*arena_at)(uint32_t offset, uint32_t n);
    uint32_t layer_count;
    const uint32_t *layer_output_offsets;
    const uint32_t *layer_output_bytes;
    int (*invoke_with_hook)(void (*after_layer)(uint32_t layer, void *ctx), void *ctx);
    uint32_t *layer_ticks;      /* layer_count entries: PROFILE writes each layer's ticks here */
    /* A model with several inputs or outputs: its parts (edgec_link_model's input_bytes / output_bytes are then
     * their totals and its input / output are not used); 0 parts: the one input and output there. */
    const edgec_link_part *input_parts;
    uint32_t input_part_count;
    const edgec_link_part *output_parts;
    uint32_t output_part_count;
} edgec_link_info;

/* What the generated main finds at run time (NAME_input(), NAME_output(), NAME_arena(), the parts' totals). */
typedef struct {
    const edgec_link_info *info;
    int8_t *input;              /* where the host's input bytes go */
    uint32_t input_bytes;
    const int8_t *output;       /* where the model leaves its output */
    uint32_t output_bytes;
    int (*invoke)(void);        /* runs the model once; 0 on success */
    const int8_t *arena;        /* NAME_arena() */
    uint32_t arena_bytes;
} edgec_link_model;

/* Serve the host's commands forever (never returns). */
void edgec_link_serve(const edgec_link_model *m);

/* Exposed for tests: CRC-16/CCITT-FALSE and COBS. */
uint16_t edgec_link_crc16(const uint8_t *data, size_t n);
size_t edgec_link_cobs_encode(const uint8_t *in, size_t n, uint8_t *out);
/* returns the decoded length, or (size_t)-1 if the input is malformed */
size_t edgec_link_cobs_decode(const uint8_t *in, size_t n, uint8_t *out);
#endif
