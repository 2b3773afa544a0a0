/* Shared helpers of the C reference programs for scripts/bench-bus: the same three-process
 * topology as StudyBus (client, broker, worker; publisher, proxy, subscriber) written against
 * libzmq directly, so the Swift figures have a baseline measured in the same run. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define _GNU_SOURCE

#include <zmq.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FRAMES 12

/* CURVE from the environment, as scripts/bench-bus sets it for its encrypted rounds (keys as
 * 40 characters of Z85): a server with BENCH_CURVE_SERVER_SECRET; a client with
 * BENCH_CURVE_SERVER (the broker's public key), BENCH_CURVE_PUBLIC and BENCH_CURVE_SECRET.
 * Unset, the socket stays plain TCP. Call before bind or connect. The C broker has no ZAP
 * handler: it encrypts, and admits every key. */
static inline void curve_server(void *socket) {
    const char *secret = getenv("BENCH_CURVE_SERVER_SECRET");
    if (!secret) return;
    int one = 1;
    zmq_setsockopt(socket, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, secret, 40);
}

static inline void curve_client(void *socket) {
    const char *server = getenv("BENCH_CURVE_SERVER"), *public_key = getenv("BENCH_CURVE_PUBLIC"), *secret = getenv("BENCH_CURVE_SECRET");
    if (!server || !public_key || !secret) return;
    zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server, 40);
    zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, public_key, 40);
    zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, secret, 40);
}

typedef struct {
    zmq_msg_t parts[MAX_FRAMES];
    int count;
} message_t;

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t now_ms_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Receives a whole multipart message; returns 0, or -1 (no message with ZMQ_DONTWAIT). */
static inline int message_recv(void *socket, message_t *message, int flags) {
    message->count = 0;
    for (;;) {
        zmq_msg_t *part = &message->parts[message->count < MAX_FRAMES ? message->count : MAX_FRAMES - 1];
        zmq_msg_init(part);
        if (zmq_msg_recv(part, socket, message->count == 0 ? flags : 0) < 0) {
            zmq_msg_close(part);
            return -1;
        }
        if (message->count < MAX_FRAMES) message->count++;
        if (!zmq_msg_more(part)) return 0;
    }
}

static inline void message_close(message_t *message) {
    for (int i = 0; i < message->count; i++) zmq_msg_close(&message->parts[i]);
    message->count = 0;
}

static inline int frame_equals(zmq_msg_t *part, const char *text) {
    size_t length = strlen(text);
    return zmq_msg_size(part) == length && memcmp(zmq_msg_data(part), text, length) == 0;
}

/* Copies the value of "id" from a JSON header into out (at most 64 bytes); returns its length. */
static inline int header_id(zmq_msg_t *header, char *out) {
    const char *data = zmq_msg_data(header);
    size_t size = zmq_msg_size(header);
    const char *key = memmem(data, size, "\"id\":\"", 6);
    if (!key) return 0;
    const char *start = key + 6, *end = memchr(start, '"', data + size - start);
    if (!end || end - start > 64) return 0;
    memcpy(out, start, end - start);
    return (int)(end - start);
}

static inline void send_bytes(void *socket, const void *data, size_t size, int more) {
    zmq_send(socket, data, size, more ? ZMQ_SNDMORE : 0);
}

static inline void set_hwm(void *socket, int hwm) {
    zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
