// The commit is stamped by scripts/lib/common.sh (`stamp_build_commit`) and the Dockerfile into
// build-commit.h, which git ignores; a plain `swift build` of a fresh clone compiles without it.
// A C file, because a compiler define can carry a string into C but not into Swift.
#if __has_include("build-commit.h")
#include "build-commit.h"
#endif

#ifndef STUDYBUS_BUILD_COMMIT
#define STUDYBUS_BUILD_COMMIT "unknown"
#endif

#include "CBuildInfo.h"

const char *studybus_build_commit(void) { return STUDYBUS_BUILD_COMMIT; }
