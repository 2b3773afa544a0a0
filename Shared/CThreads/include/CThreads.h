#ifndef STUDYBUS_CTHREADS_H
#define STUDYBUS_CTHREADS_H

#include <sys/prctl.h>

/// Names the calling thread (the kernel keeps 15 bytes). prctl is variadic, which Swift cannot call.
static inline void studybus_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

#endif
