// pocketsphinx 5prealpha's C API and sphinxbase's (Debian libpocketsphinx-dev). A decoder may be
// used by one thread at a time: ai-gateway's OfflineRecognizer keeps it on one thread.
#include <pocketsphinx.h>
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/cmn.h>

// The decoder's cepstral mean normalization for the next recording. pocketsphinx keeps a live
// mean estimate that each recording moves, so without this one request's audio would change how
// the next (another user's) is heard. A recording decoded whole is normalized over itself
// (batch); one decoded in blocks starts from the model's initial estimate (`mean`, saved by
// studybus_cmn_get right after loading).
static inline int studybus_cmn_length(ps_decoder_t *ps) { return ps_get_feat(ps)->cmn_struct->veclen; }
static inline void studybus_cmn_get(ps_decoder_t *ps, mfcc_t *mean) { cmn_live_get(ps_get_feat(ps)->cmn_struct, mean); }
static inline void studybus_cmn_prepare(ps_decoder_t *ps, int whole, mfcc_t const *mean) {
    feat_t *feat = ps_get_feat(ps);
    feat->cmn = whole ? CMN_BATCH : CMN_LIVE;
    cmn_live_set(feat->cmn_struct, mean);
}
