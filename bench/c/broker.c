/* C reference broker: 7/MDP routing with per-worker credit and a FIFO per service, plus the
 * XSUB/XPUB proxy, in one zmq_poll loop. Kept to what the benchmark exercises (one service),
 * but it does the same per-message work as the Swift broker: parse the header id, track
 * requests per worker, move frames without copying.
 * Usage: c-broker RPC_BIND PUB_BIND SUB_BIND */
#include "common.h"

#define MAX_WORKERS 64
#define QUEUE_SIZE 65536

typedef struct {
    char identity[256];
    size_t identity_size;
    int credit, outstanding;
    char service[64];
} worker_t;

typedef struct {
    message_t message; /* the client's request, as received */
} queued_t;

static worker_t workers[MAX_WORKERS];
static int worker_count;
static queued_t queue[QUEUE_SIZE];
static int queue_head, queue_tail;

static worker_t *find_worker(zmq_msg_t *identity) {
    for (int i = 0; i < worker_count; i++)
        if (workers[i].identity_size == zmq_msg_size(identity) &&
            memcmp(workers[i].identity, zmq_msg_data(identity), workers[i].identity_size) == 0)
            return &workers[i];
    return NULL;
}

static worker_t *free_worker(void) {
    worker_t *best = NULL;
    for (int i = 0; i < worker_count; i++) {
        int free_credit = workers[i].credit - workers[i].outstanding;
        if (free_credit > 0 && (!best || free_credit > best->credit - best->outstanding)) best = &workers[i];
    }
    return best;
}

/* Sends a queued request [client, empty, MDPC01, service, method, header, payload] to a worker. */
static void dispatch(void *router) {
    while (queue_head != queue_tail) {
        worker_t *worker = free_worker();
        if (!worker) return;
        message_t *request = &queue[queue_head].message;
        queue_head = (queue_head + 1) % QUEUE_SIZE;
        char id[65];
        header_id(&request->parts[5], id);
        send_bytes(router, worker->identity, worker->identity_size, 1);
        send_bytes(router, "", 0, 1);
        send_bytes(router, "MDPW01", 6, 1);
        send_bytes(router, "\x02", 1, 1);
        zmq_msg_send(&request->parts[0], router, ZMQ_SNDMORE);
        send_bytes(router, "", 0, 1);
        zmq_msg_send(&request->parts[4], router, ZMQ_SNDMORE);
        zmq_msg_send(&request->parts[5], router, ZMQ_SNDMORE);
        zmq_msg_send(&request->parts[6], router, 0);
        message_close(request);
        worker->outstanding++;
    }
}

static void handle_router(void *router) {
    message_t message;
    while (message_recv(router, &message, ZMQ_DONTWAIT) == 0) {
        if (message.count >= 4 && frame_equals(&message.parts[2], "MDPC01") && message.count >= 7) {
            char id[65];
            if (header_id(&message.parts[5], id) > 0 && (queue_tail + 1) % QUEUE_SIZE != queue_head) {
                queue[queue_tail].message = message; /* moves the parts */
                queue_tail = (queue_tail + 1) % QUEUE_SIZE;
                dispatch(router);
                continue;
            }
        } else if (message.count >= 4 && frame_equals(&message.parts[2], "MDPW01")) {
            char command = *(char *)zmq_msg_data(&message.parts[3]);
            worker_t *worker = find_worker(&message.parts[0]);
            if (command == 0x01 && !worker && worker_count < MAX_WORKERS && message.count >= 5) {
                worker = &workers[worker_count++];
                worker->identity_size = zmq_msg_size(&message.parts[0]);
                memcpy(worker->identity, zmq_msg_data(&message.parts[0]), worker->identity_size);
                worker->credit = message.count >= 6 ? atoi((char *)zmq_msg_data(&message.parts[5])) : 1;
                worker->outstanding = 0;
                dispatch(router);
            } else if (command == 0x03 && worker && message.count >= 8) {
                /* [worker, empty, MDPW01, 0x03, client, empty, header, payload] */
                char id[65];
                header_id(&message.parts[6], id);
                worker->outstanding--;
                zmq_msg_send(&message.parts[4], router, ZMQ_SNDMORE);
                send_bytes(router, "", 0, 1);
                send_bytes(router, "MDPC01", 6, 1);
                send_bytes(router, "bench", 5, 1);
                zmq_msg_send(&message.parts[6], router, ZMQ_SNDMORE);
                zmq_msg_send(&message.parts[7], router, 0);
                dispatch(router);
            }
        }
        message_close(&message);
    }
}

static void forward(void *from, void *to) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    for (int i = 0; i < 256; i++) {
        if (zmq_msg_recv(&part, from, ZMQ_DONTWAIT) < 0) break;
        int more = zmq_msg_more(&part);
        zmq_msg_send(&part, to, more ? ZMQ_SNDMORE : 0);
        while (more) {
            zmq_msg_recv(&part, from, 0);
            more = zmq_msg_more(&part);
            zmq_msg_send(&part, to, more ? ZMQ_SNDMORE : 0);
        }
    }
    zmq_msg_close(&part);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: c-broker RPC PUB SUB\n"); return 64; }
    void *context = zmq_ctx_new();
    void *router = zmq_socket(context, ZMQ_ROUTER), *xsub = zmq_socket(context, ZMQ_XSUB), *xpub = zmq_socket(context, ZMQ_XPUB);
    int one = 1, hwm = argc > 4 ? atoi(argv[4]) : 1000000;
    zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    set_hwm(router, hwm);
    set_hwm(xsub, hwm);
    set_hwm(xpub, hwm);
    curve_server(router);
    curve_server(xsub);
    curve_server(xpub);
    if (zmq_bind(router, argv[1]) || zmq_bind(xsub, argv[2]) || zmq_bind(xpub, argv[3])) {
        fprintf(stderr, "c-broker: bind failed: %s\n", zmq_strerror(zmq_errno()));
        return 1;
    }
    char subscribe_all = 1;
    zmq_send(xsub, &subscribe_all, 1, 0);
    zmq_pollitem_t items[] = {{router, 0, ZMQ_POLLIN, 0}, {xsub, 0, ZMQ_POLLIN, 0}, {xpub, 0, ZMQ_POLLIN, 0}};
    for (;;) {
        if (zmq_poll(items, 3, -1) < 0) break;
        if (items[0].revents & ZMQ_POLLIN) handle_router(router);
        if (items[1].revents & ZMQ_POLLIN) forward(xsub, xpub);
        if (items[2].revents & ZMQ_POLLIN) {
            message_t subscription;
            while (message_recv(xpub, &subscription, ZMQ_DONTWAIT) == 0) message_close(&subscription);
        }
    }
    return 0;
}
