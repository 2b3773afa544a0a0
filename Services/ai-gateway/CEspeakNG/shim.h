// espeak-ng's C API (Debian libespeak-ng-dev). Not thread-safe: ai-gateway's SpeechSynthesizer
// calls it from one thread only.
#include <espeak-ng/speak_lib.h>
#include <espeak-ng/espeak_ng.h>
