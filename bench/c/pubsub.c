/* C reference publisher and subscriber with StudyBus's three-frame events and seq checking.
 * Usage: c-pubsub pub ENDPOINT COUNT SIZE | c-pubsub sub ENDPOINT COUNT NAME */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: c-pubsub pub|sub ENDPOINT COUNT SIZE|NAME\n"); return 64; }
    void *context = zmq_ctx_new();
    long count = atol(argv[3]);
    if (strcmp(argv[1], "pub") == 0) {
        void *pub = zmq_socket(context, ZMQ_PUB);
        set_hwm(pub, 1000000);
        curve_client(pub);
        zmq_connect(pub, argv[2]);
        usleep(300000);
        int size = atoi(argv[4]);
        char payload[4096], header[256];
        int overhead = (int)strlen("{\"n\":0,\"text\":\"\"}");
        int payload_size = snprintf(payload, sizeof payload, "{\"n\":0,\"text\":\"%0*d\"}", size > overhead ? size - overhead : 0, 0);
        for (long seq = 1; seq <= count; seq++) {
            int header_size = snprintf(header, sizeof header,
                "{\"id\":\"c-%ld\",\"source\":\"c-pub\",\"instance\":\"c:1\",\"seq\":%ld,\"ts\":%lld}", seq, seq, (long long)now_ms_wall());
            send_bytes(pub, "bench.event", 11, 1);
            send_bytes(pub, header, header_size, 1);
            send_bytes(pub, payload, payload_size, 0);
        }
        sleep(1);
        return 0;
    }
    void *sub = zmq_socket(context, ZMQ_SUB);
    set_hwm(sub, 1000000);
    int timeout = 10000;
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "bench.", 6);
    curve_client(sub);
    zmq_connect(sub, argv[2]);
    printf("READY\n");
    fflush(stdout);
    long received = 0, last_seq = 0, missed = 0;
    int64_t first = 0, last = 0;
    message_t event;
    while (received + missed < count && message_recv(sub, &event, 0) == 0) {
        if (!first) first = now_ns();
        const char *header = zmq_msg_data(&event.parts[1]);
        const char *seq_text = memmem(header, zmq_msg_size(&event.parts[1]), "\"seq\":", 6);
        long seq = seq_text ? atol(seq_text + 6) : 0;
        if (last_seq && seq > last_seq + 1) missed += seq - last_seq - 1;
        last_seq = seq;
        received++;
        last = now_ns();
        message_close(&event);
    }
    printf("c_%s_msgs_per_s %.1f msgs/s\nc_%s_dropped %ld msgs\n", argv[4], (received - 1) / ((last - first) / 1e9), argv[4], count - received);
    return 0;
}
