/* Host implementation of edgec_board.h.  The "UART" is a loopback TCP socket: listen on
 * 127.0.0.1:$EDGEC_PORT (0 = any free port), print "EDGEC_SERIAL socket://127.0.0.1:PORT" on
 * stdout, accept one client (pyserial socket://).  Ticks are CLOCK_MONOTONIC nanoseconds.
 * The program exits when the client disconnects. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "edgec_board.h"

static int io_fd = -1;
static uint8_t obuf[4096], ibuf[4096];
static size_t olen, ipos, ilen;

static void die(const char *what) { perror(what); exit(2); }

void edgec_uart_flush(void)
{
    size_t off = 0;
    while (off < olen) {
        ssize_t w = write(io_fd, obuf + off, olen - off);
        if (w < 0) { if (errno == EINTR) continue; die("edgec host uart: write"); }
        off += (size_t)w;
    }
    olen = 0;
}

void edgec_board_init(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (s < 0) die("edgec host uart: socket");
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char *p = getenv("EDGEC_PORT");
    a.sin_port = htons(p ? (uint16_t)atoi(p) : 0);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) die("edgec host uart: bind");
    if (listen(s, 1) < 0) die("edgec host uart: listen");
    socklen_t len = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &len);
    printf("EDGEC_SERIAL socket://127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    io_fd = accept(s, NULL, NULL);
    if (io_fd < 0) die("edgec host uart: accept");
    setsockopt(io_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    close(s);
}
/* runs before main(), like the reset handler on a microcontroller */
__attribute__((constructor)) static void edgec_host_ctor(void) { edgec_board_init(); }

void edgec_uart_putc(uint8_t c) { if (olen == sizeof obuf) edgec_uart_flush(); obuf[olen++] = c; }
void edgec_uart_write(const void *buf, size_t n) { const uint8_t *p = buf; while (n--) edgec_uart_putc(*p++); }

static int fill(int block)
{
    edgec_uart_flush();             /* whoever waits for our input first needs our output */
    if (!block) {
        fd_set f;
        FD_ZERO(&f);
        FD_SET(io_fd, &f);
        struct timeval tv = {0, 0};
        if (select(io_fd + 1, &f, NULL, NULL, &tv) <= 0) return 0;
    }
    for (;;) {
        ssize_t r = read(io_fd, ibuf, sizeof ibuf);
        if (r > 0) { ipos = 0; ilen = (size_t)r; return 1; }
        if (r == 0) exit(0);        /* host closed the link: behave like a powered-off board */
        if (errno != EINTR && errno != EAGAIN) die("edgec host uart: read");
    }
}
int edgec_uart_try_getc(void) { if (ipos == ilen && !fill(0)) return -1; return ibuf[ipos++]; }
int edgec_uart_getc(void) { if (ipos == ilen) fill(1); return ibuf[ipos++]; }

uint64_t edgec_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint32_t edgec_tick_hz(void) { return 1000000000u; }
void edgec_ticks_align(void) { }
void edgec_exit(int code) { edgec_uart_flush(); exit(code); }
