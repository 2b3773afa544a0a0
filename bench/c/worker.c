/* C reference worker: READY with credit, then answers every REQUEST with its payload.
 * Usage: c-worker RPC [CREDIT] */
#include "common.h"

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: c-worker RPC [CREDIT]\n"); return 64; }
    void *context = zmq_ctx_new();
    void *dealer = zmq_socket(context, ZMQ_DEALER);
    set_hwm(dealer, 1000000);
    curve_client(dealer);
    zmq_connect(dealer, argv[1]);
    const char *credit = argc > 2 ? argv[2] : "128";
    send_bytes(dealer, "", 0, 1);
    send_bytes(dealer, "MDPW01", 6, 1);
    send_bytes(dealer, "\x01", 1, 1);
    send_bytes(dealer, "bench", 5, 1);
    send_bytes(dealer, credit, strlen(credit), 0);
    message_t request;
    char header[128];
    for (;;) {
        if (message_recv(dealer, &request, 0) != 0) break;
        /* [empty, MDPW01, 0x02, client, empty, method, header, payload] */
        if (request.count >= 8 && *(char *)zmq_msg_data(&request.parts[2]) == 0x02) {
            char id[65];
            int length = header_id(&request.parts[6], id);
            int size = snprintf(header, sizeof header, "{\"id\":\"%.*s\",\"code\":0}", length, id);
            send_bytes(dealer, "", 0, 1);
            send_bytes(dealer, "MDPW01", 6, 1);
            send_bytes(dealer, "\x03", 1, 1);
            zmq_msg_send(&request.parts[3], dealer, ZMQ_SNDMORE);
            send_bytes(dealer, "", 0, 1);
            send_bytes(dealer, header, size, 1);
            zmq_msg_send(&request.parts[7], dealer, 0);
        }
        message_close(&request);
    }
    return 0;
}
