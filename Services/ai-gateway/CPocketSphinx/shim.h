// pocketsphinx 5prealpha's C API and sphinxbase's (Debian libpocketsphinx-dev). A decoder may be
// used by one thread at a time: ai-gateway's OfflineRecognizer keeps it on one thread.
#include <pocketsphinx.h>
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/err.h>
