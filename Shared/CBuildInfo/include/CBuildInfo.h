#ifndef STUDYBUS_CBUILDINFO_H
#define STUDYBUS_CBUILDINFO_H

/// The git commit the binary was built from, or "unknown" (a build outside a git checkout
/// that no script stamped).
const char *studybus_build_commit(void);

#endif
