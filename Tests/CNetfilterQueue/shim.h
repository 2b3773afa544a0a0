#ifndef STUDYBUS_CNETFILTERQUEUE_SHIM_H
#define STUDYBUS_CNETFILTERQUEUE_SHIM_H

// libnetfilter_queue (Debian libnetfilter-queue-dev) for the multi-host tests' fault injector:
// packets that an iptables NFQUEUE rule hands to user space wait there for their verdict.

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

// Declared here because <sched.h> declares it only with _GNU_SOURCE, which the Swift Glibc
// module is not built with.
extern int setns(int fd, int nstype);

/// Moves the calling thread (only it) into the network namespace open as `fd`.
static inline int studybus_enter_network_namespace(int fd) {
    return setns(fd, 0x40000000 /* CLONE_NEWNET */);
}

/// The kernel's id of the queued packet, to give its verdict by (host byte order); 0 if none.
/// The header is a packed struct, which Swift cannot read field by field.
static inline uint32_t studybus_nfq_packet_id(struct nfq_data *data) {
    struct nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(data);
    return header ? ntohl(header->packet_id) : 0;
}

/// Keeps the netlink socket from failing reads with ENOBUFS when the kernel could not deliver a
/// packet to us (it then drops that packet, as a full queue does).
static inline int studybus_netlink_ignore_enobufs(int fd) {
    int on = 1;
    return setsockopt(fd, 270 /* SOL_NETLINK */, 5 /* NETLINK_NO_ENOBUFS */, &on, sizeof on);
}

#endif
