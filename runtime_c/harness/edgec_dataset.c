/* Dataset-in-flash runner (see edgec_dataset.h). */
#include "edgec_dataset.h"

#include <string.h>

#include "edgec_board.h"
#include "edgec_timed.h"

static uint32_t get_u32(const int8_t *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

static void put_u32(uint8_t *out, uint32_t v)
{
    out[0] = (uint8_t)v; out[1] = (uint8_t)(v >> 8); out[2] = (uint8_t)(v >> 16); out[3] = (uint8_t)(v >> 24);
}

/* CRC-16/CCITT-FALSE continued over another piece */
static uint16_t crc_add(uint16_t crc, const uint8_t *data, uint32_t n)
{
    while (n--) {
        crc ^= (uint16_t)(*data++) << 8;
        for (int i = 0; i < 8; i++) crc = (uint16_t)((crc & 0x8000u) ? ((unsigned)crc << 1) ^ 0x1021u : (unsigned)crc << 1);
    }
    return crc;
}

/* One sample's bytes into the model's input (or its input parts, one after the other). */
static void write_input(const edgec_dataset_model *m, const int8_t *sample)
{
    if (!m->input_part_count) {
        memcpy(m->input, sample, m->input_bytes);
        return;
    }
    for (uint32_t k = 0; k < m->input_part_count; k++) {
        memcpy(m->input_parts[k].data, sample, m->input_parts[k].bytes);
        sample += m->input_parts[k].bytes;
    }
}

/* The model's output (or its output parts, one after the other) onto the link, added to the crc. */
static uint16_t send_output(const edgec_dataset_model *m, uint16_t crc)
{
    if (!m->output_part_count) {
        edgec_uart_write(m->output, m->output_bytes);
        return crc_add(crc, (const uint8_t *)m->output, m->output_bytes);
    }
    for (uint32_t k = 0; k < m->output_part_count; k++) {
        edgec_uart_write(m->output_parts[k].data, m->output_parts[k].bytes);
        crc = crc_add(crc, (const uint8_t *)m->output_parts[k].data, m->output_parts[k].bytes);
    }
    return crc;
}

static void run_all(const edgec_dataset_model *m, const int8_t *blob, uint32_t blob_bytes)
{
    uint32_t count = get_u32(blob + 4), chunk = get_u32(blob + 8), in_bytes = get_u32(blob + 12);
    int valid = memcmp(blob, "EDS1", 4) == 0 && in_bytes == m->input_bytes
                && (uint64_t)count * in_bytes <= blob_bytes - EDGEC_DATASET_HEADER_BYTES;
    if (!valid) count = 0;             /* no data written into this image: an empty stream */
    uint8_t head[8 + 16 + 16];
    memcpy(head, "EDGECDS1", 8);
    put_u32(head + 8, count);
    put_u32(head + 12, chunk);
    put_u32(head + 16, m->output_bytes);
    put_u32(head + 20, edgec_tick_hz());
    memcpy(head + 24, m->model_hash, 16);
    edgec_uart_write(head, sizeof head);
    uint16_t crc = 0xFFFF;
    const int8_t *sample = blob + EDGEC_DATASET_HEADER_BYTES;
    for (uint32_t i = 0; i < count; i++, sample += in_bytes) {
        write_input(m, sample);
        edgec_timed_run run;
        run.invoke = m->invoke;
        edgec_timed_invoke(&run);
        uint8_t rec[12];
        put_u32(rec, (uint32_t)run.status);
        put_u32(rec + 4, (uint32_t)run.ticks);
        put_u32(rec + 8, (uint32_t)(run.ticks >> 32));
        crc = crc_add(crc, rec, sizeof rec);
        edgec_uart_write(rec, sizeof rec);
        crc = send_output(m, crc);
    }
    uint8_t tail[6] = {'D', 'O', 'N', 'E', (uint8_t)crc, (uint8_t)(crc >> 8)};
    edgec_uart_write(tail, sizeof tail);
    edgec_uart_flush();
}

void edgec_dataset_serve(const edgec_dataset_model *m, const int8_t *blob, uint32_t blob_bytes)
{
    for (;;) {
        if (edgec_uart_getc() == 'G') run_all(m, blob, blob_bytes);
    }
}
