#ifndef STUDYBUS_CMALLOC_SHIM_H
#define STUDYBUS_CMALLOC_SHIM_H

// glibc's allocator statistics (mallinfo2, glibc 2.33+), which Swift's Glibc module does not
// import: the heap a process uses apart from what its allocator holds free.
#include <malloc.h>

#endif
