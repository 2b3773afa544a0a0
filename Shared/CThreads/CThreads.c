// The shims are static inline functions in include/CThreads.h; SwiftPM needs one source file.
#include "CThreads.h"
