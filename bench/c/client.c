/* C reference client: lockstep latency or pipelined throughput against service "bench".
 * Usage: c-client RPC lockstep|pipelined CALLS [INFLIGHT] */
#include "common.h"

static char payload[256];
static int payload_size;

static void send_request(void *dealer, long n) {
    char header[128];
    int size = snprintf(header, sizeof header, "{\"id\":\"c-%ld\",\"deadline\":%lld}", n, (long long)now_ms_wall() + 30000);
    send_bytes(dealer, "", 0, 1);
    send_bytes(dealer, "MDPC01", 6, 1);
    send_bytes(dealer, "bench", 5, 1);
    send_bytes(dealer, "echo", 4, 1);
    send_bytes(dealer, header, size, 1);
    send_bytes(dealer, payload, payload_size, 0);
}

static void receive_reply(void *dealer) {
    message_t reply;
    message_recv(dealer, &reply, 0);
    char id[65];
    header_id(&reply.parts[3], id); /* what a real client does to match the reply */
    message_close(&reply);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: c-client RPC lockstep|pipelined CALLS [INFLIGHT]\n"); return 64; }
    long calls = atol(argv[3]);
    int inflight = argc > 4 ? atoi(argv[4]) : 100;
    payload_size = snprintf(payload, sizeof payload, "{\"n\":1,\"text\":\"%0*d\"}", 180, 0);
    void *context = zmq_ctx_new();
    void *dealer = zmq_socket(context, ZMQ_DEALER);
    set_hwm(dealer, 1000000);
    curve_client(dealer);
    zmq_connect(dealer, argv[1]);
    for (long i = 0; i < 500; i++) { send_request(dealer, i); receive_reply(dealer); }
    if (strcmp(argv[2], "lockstep") == 0) {
        double *latencies = malloc(sizeof(double) * calls);
        for (long i = 0; i < calls; i++) {
            int64_t started = now_ns();
            send_request(dealer, i);
            receive_reply(dealer);
            latencies[i] = (now_ns() - started) / 1000.0;
        }
        qsort(latencies, calls, sizeof(double), compare_doubles);
        printf("c_rpc_lockstep_p50_us %.1f us\nc_rpc_lockstep_p99_us %.1f us\n", latencies[calls / 2], latencies[(long)(calls * 0.99)]);
    } else {
        int64_t started = now_ns();
        long sent = 0, received = 0;
        while (sent < inflight && sent < calls) send_request(dealer, sent++);
        while (received < calls) {
            receive_reply(dealer);
            received++;
            if (sent < calls) send_request(dealer, sent++);
        }
        printf("c_rpc_pipelined_rps %.1f req/s\n", calls / ((now_ns() - started) / 1e9));
    }
    return 0;
}
