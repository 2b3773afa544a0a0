#ifndef STUDYBUS_CZMQ_SHIM_H
#define STUDYBUS_CZMQ_SHIM_H

#include <zmq.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <pthread.h>
#include <unistd.h>
#include <stdint.h>

// eventfd is declared with a flags macro Swift cannot see through; these wrappers give the
// I/O thread a plain function for its wake-up descriptor.
static inline int studybus_eventfd_create(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

static inline int studybus_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof(one));
}

static inline int studybus_eventfd_drain(int fd) {
    uint64_t value = 0;
    return (int)read(fd, &value, sizeof(value));
}

// Threads the bus creates must never take SIGTERM/SIGINT: swift-service-lifecycle handles them.
static inline void studybus_block_all_signals(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
}

#endif
