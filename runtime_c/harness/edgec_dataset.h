/* Dataset-in-flash runner, device side: the test inputs are compiled into the firmware image (a chunk of
 * them, edgec_dataset_blob), the firmware runs the model on every one and streams back only the outputs
 * and the ticks of each run.  The host side is edgec/bench/dataset_flash.py.
 *
 * Blob (written into the image by the host, edgec.device.image.patch_symbol):
 *   "EDS1" | count u32 | chunk u32 | input_bytes u32 | count * input_bytes sample bytes
 * Stream (after the host sends 'G'):
 *   "EDGECDS1" | count u32 | chunk u32 | output_bytes u32 | tick_hz u32 | model hash (16 chars)
 *   count * ( status i32 | ticks u64 | output bytes )
 *   "DONE" | crc16 u16 (CRC-16/CCITT-FALSE over every record)                                  */
#ifndef EDGEC_DATASET_H
#define EDGEC_DATASET_H
#include <stdint.h>

#define EDGEC_DATASET_HEADER_BYTES 16u

/* One input or output of a model with several: its bytes' place and size */
typedef struct {
    int8_t *data;
    uint32_t bytes;
} edgec_dataset_part;

typedef struct {
    const char *model_hash;     /* 16 hex digits */
    int8_t *input;
    uint32_t input_bytes;       /* (several inputs: the sum of the parts') */
    const int8_t *output;
    uint32_t output_bytes;      /* (several outputs: the sum of the parts') */
    int (*invoke)(void);
    /* a model with several inputs or outputs: each sample's bytes go into the input parts one after the other,
     * and the output parts are sent one after the other (input / output unused); no parts: input, output */
    const edgec_dataset_part *input_parts;
    uint32_t input_part_count;
    const edgec_dataset_part *output_parts;
    uint32_t output_part_count;
} edgec_dataset_model;

/* Run every sample of the blob each time the host sends 'G' (never returns). */
void edgec_dataset_serve(const edgec_dataset_model *m, const int8_t *blob, uint32_t blob_bytes);
#endif
