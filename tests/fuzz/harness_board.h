/* The board both parser harnesses fake (edgec_board.h): the "UART" reads the current fuzz input (feed) and,
 * when it runs dry, longjmps to `dry` (out of the never-returning serve loop). Included by the harnesses,
 * which define edgec_uart_putc/write (checking what the device sends) and edgec_ticks. */
#include <setjmp.h>
#include <stdlib.h>

#include "edgec_board.h"

static const uint8_t *feed;
static size_t feed_len, feed_pos;
static jmp_buf dry;

void edgec_board_init(void) { }
void edgec_uart_flush(void) { }
int edgec_uart_getc(void)
{
    if (feed_pos >= feed_len) longjmp(dry, 1);
    return feed[feed_pos++];
}
int edgec_uart_try_getc(void) { return feed_pos < feed_len ? feed[feed_pos++] : -1; }
uint32_t edgec_tick_hz(void) { return 1000000u; }
void edgec_ticks_align(void) { }
void edgec_exit(int code) { exit(code); }
