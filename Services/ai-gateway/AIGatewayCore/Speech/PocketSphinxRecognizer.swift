import Bus
import CPocketSphinx
import Contracts
import Foundation
import Synchronization
import Wire

/// Offline English speech recognition with pocketsphinx (linked, libpocketsphinx) and its US
/// English model (Debian pocketsphinx-en-us): no network, no key. Far less accurate than Whisper
/// (docs/services/ai-gateway.md has word error rates), but `transcribe` works out of the box.
///
/// Loading the model takes about a second and tens of megabytes, so there is one decoder per
/// model folder, profile and process, made on first use. A decoder may be used by one thread at
/// a time: it lives on a thread of its own (``EngineThread``) and decodes one recording after
/// another, each from the same starting state (nothing one request heard changes how the next
/// is heard). Voice commands are searched with a JSGF grammar of the user's patterns
/// (``CommandGrammar``) instead of the language model.
final class PocketSphinxRecognizer: Sendable {
    /// Samples per second the model was trained on.
    static let sampleRate = 16_000
    /// pocketsphinx's frames per second (`-frate`).
    static let framesPerSecond = 100.0

    /// The folder with `en-us/` (acoustic model), `en-us.lm.bin` and `cmudict-en-us.dict`.
    let modelDirectory: String
    let profile: OfflineRecognitionProfile
    private let thread: EngineThread<Decoder>

    private init(modelDirectory: String, profile: OfflineRecognitionProfile) {
        self.modelDirectory = modelDirectory
        self.profile = profile
        thread = EngineThread(name: profile == .tuned ? "ai-sphinx" : "ai-sphinx-base")
    }

    private struct Key: Hashable {
        var modelDirectory: String
        var profile: OfflineRecognitionProfile
    }

    private static let recognizers = Mutex<[Key: PocketSphinxRecognizer]>([:])

    /// The process's recognizer for `modelDirectory` and `profile`.
    static func shared(modelDirectory: String, profile: OfflineRecognitionProfile = .tuned) -> PocketSphinxRecognizer {
        recognizers.withLock { recognizers in
            let key = Key(modelDirectory: modelDirectory, profile: profile)
            if let recognizer = recognizers[key] { return recognizer }
            let recognizer = PocketSphinxRecognizer(modelDirectory: modelDirectory, profile: profile)
            recognizers[key] = recognizer
            return recognizer
        }
    }

    /// pocketsphinx's options besides the model's, by profile (docs/benchmarks.md, "Offline
    /// speech", has what each was measured to do).
    static func options(_ profile: OfflineRecognitionProfile) -> [String] {
        switch profile {
        case .baseline: []
        // Spectral noise subtraction off: its estimate comes from the clip's first frames, which
        // in a short clip are speech. Fillers off in grammar searches: the silence and noise
        // words they insert between a command's words swallowed whole words of it.
        case .tuned: ["-remove_noise", "no", "-fsgusefiller", "no"]
        }
    }

    /// What one recording said.
    struct Recognition: Sendable, Equatable {
        var text: String
        /// Phrases between pauses, with the mean of their words' posterior probabilities.
        var segments: [TranscriptSegment]
        /// Other readings from the N-best list, best first, without the text itself.
        var alternatives: [String]
        var duration: Double
        /// The posterior probability of the whole reading (0...1), for grammar searches.
        var confidence: Double?

        /// Times moved by `offset` seconds (where the recognized samples start in the upload)
        /// and kept within `duration`, the upload's.
        mutating func shift(by offset: Double, duration: Double) {
            self.duration = duration
            segments = segments.map { segment in
                var segment = segment
                segment.start = min(duration, max(0, ((segment.start + offset) * 1000).rounded() / 1000))
                segment.end = min(duration, max(0, ((segment.end + offset) * 1000).rounded() / 1000))
                return segment
            }
        }
    }

    /// Recognizes `samples` (16 kHz mono): free English with the language model, or with
    /// `grammar` only the commands it allows. Segment times are those of `samples`.
    /// - Throws: `FAILED_PRECONDITION` when the model is not installed, `DEADLINE_EXCEEDED`
    ///   when the deadline passes before or while decoding.
    func recognize(_ samples: [Int16], grammar: CommandGrammar? = nil, deadline: ContinuousClock.Instant) async throws(BusError) -> Recognition {
        let directory = modelDirectory, profile = profile
        let conditioned = profile == .tuned
            ? SpeechConditioning.condition(samples, sampleRate: Self.sampleRate, padding: grammar == nil) : .init(samples: samples, offset: 0)
        let result = await thread.run { decoder -> Result<Recognition, BusError> in
            guard ContinuousClock.now < deadline else { return .failure(.deadlineExceeded("the deadline passed while waiting for the offline recognizer")) }
            do throws(BusError) {
                if decoder == nil { decoder = try Decoder(modelDirectory: directory, profile: profile) }
                var recognition = try decoder!.recognize(conditioned.samples, grammar: grammar, deadline: deadline)
                recognition.shift(by: conditioned.offset, duration: Double(samples.count) / Double(Self.sampleRate))
                return .success(recognition)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A pocketsphinx decoder; only ever touched on the recognizer's thread.
    final class Decoder {
        private let decoder: OpaquePointer
        private let profile: OfflineRecognitionProfile
        /// The live cepstral mean the model starts from, put back before every recording.
        private let initialMean: [mfcc_t]
        /// Grammar searches made, by grammar, most recently used last; at most
        /// ``searchesKept`` (each holds its lexicon tree).
        private var searches: [(grammar: CommandGrammar, name: String)] = []
        private var nextSearch = 0
        static let searchesKept = 16
        /// The language model's search, pocketsphinx's default.
        static let languageModelSearch = "_default"

        init(modelDirectory: String, profile: OfflineRecognitionProfile) throws(BusError) {
            self.profile = profile
            let files = ["en-us", "en-us.lm.bin", "cmudict-en-us.dict"].map { modelDirectory + "/" + $0 }
            guard files.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) else {
                throw .failedPrecondition(
                    "the offline recognizer's English model is not installed in \(modelDirectory): install the Debian package pocketsphinx-en-us or set AI_POCKETSPHINX_MODEL")
            }
            // cmd_ln_parse_r reads argv from index 1, as from main's.
            let arguments = ["ai-gateway", "-hmm", files[0], "-lm", files[1], "-dict", files[2], "-logfn", "/dev/null"]
                + PocketSphinxRecognizer.options(profile)
            var argv = arguments.map { strdup($0) }
            defer { for pointer in argv { free(pointer) } }
            let config = argv.withUnsafeMutableBufferPointer { buffer in
                cmd_ln_parse_r(nil, ps_args(), Int32(buffer.count), buffer.baseAddress, 1)
            }
            guard let config, let decoder = ps_init(config) else {
                throw .failedPrecondition("pocketsphinx could not load its model from \(modelDirectory) (AI_POCKETSPHINX_MODEL)")
            }
            cmd_ln_free_r(config)  // the decoder holds its own reference
            self.decoder = decoder
            var mean = [mfcc_t](repeating: 0, count: Int(studybus_cmn_length(decoder)))
            studybus_cmn_get(decoder, &mean)
            initialMean = mean
        }

        deinit { ps_free(decoder) }

        /// Recordings up to this long are decoded in one call, which normalizes the cepstra over
        /// the whole recording and recognizes better (word error rate 0.46 against 0.52 in blocks
        /// on scripts/bench-ai's sentences); it takes at most about 15 s on a busy core.
        static let wholeUtteranceSeconds = 30

        /// Decodes a short recording at once, a longer one in blocks of two seconds, checking
        /// the deadline between them; with `grammar`, through its search.
        func recognize(_ samples: [Int16], grammar: CommandGrammar?, deadline: ContinuousClock.Instant) throws(BusError) -> Recognition {
            let duration = Double(samples.count) / Double(PocketSphinxRecognizer.sampleRate)
            let whole = samples.count <= Self.wholeUtteranceSeconds * PocketSphinxRecognizer.sampleRate
            let block = whole ? max(1, samples.count) : 2 * PocketSphinxRecognizer.sampleRate
            let search = try grammar.map { grammar throws(BusError) in try self.search(for: grammar) } ?? Self.languageModelSearch
            guard ps_set_search(decoder, search) == 0 else { throw .internal("pocketsphinx could not switch to its search '\(search)'") }
            studybus_cmn_prepare(decoder, whole ? 1 : 0, initialMean)
            // A new stream forgets the noise estimate and the frame count of earlier recordings;
            // the baseline profile keeps them, as ai-gateway did before (issue 44).
            if profile == .tuned { ps_start_stream(decoder) }
            ps_start_utt(decoder)
            var start = 0
            while start < samples.count {
                guard ContinuousClock.now < deadline else {
                    ps_end_utt(decoder)
                    throw .deadlineExceeded("the deadline passed after \(start / PocketSphinxRecognizer.sampleRate) s of \(Int(duration)) s of offline transcription")
                }
                let end = min(start + block, samples.count)
                samples.withUnsafeBufferPointer { buffer in
                    _ = ps_process_raw(decoder, buffer.baseAddress! + start, end - start, 0, whole ? 1 : 0)
                }
                start = end
            }
            ps_end_utt(decoder)
            var score: Int32 = 0
            guard let hypothesis = ps_get_hyp(decoder, &score) else {
                return Recognition(text: "", segments: [], alternatives: [], duration: duration)
            }
            let text = String(cString: hypothesis)
            let logmath = ps_get_logmath(decoder)
            // Also computes the lattice's posteriors, which the words' probabilities read.
            let posterior = logmath_exp(logmath, ps_get_prob(decoder))
            var words: [(word: String, start: Double, end: Double, probability: Double)] = []
            var segment = ps_seg_iter(decoder)
            // Frames count on from the decoder's earlier recordings: the first segment (`<s>`)
            // starts this one.
            var firstFrame: Int32?
            while let current = segment {
                var startFrame: Int32 = 0, endFrame: Int32 = 0, acoustic: Int32 = 0, language: Int32 = 0, backoff: Int32 = 0
                ps_seg_frames(current, &startFrame, &endFrame)
                if firstFrame == nil { firstFrame = startFrame }
                startFrame -= firstFrame ?? 0
                endFrame -= firstFrame ?? 0
                let probability = logmath_exp(logmath, ps_seg_prob(current, &acoustic, &language, &backoff))
                let word = ps_seg_word(current).map { String(cString: $0) } ?? ""
                words.append((word, Double(startFrame) / PocketSphinxRecognizer.framesPerSecond, Double(endFrame + 1) / PocketSphinxRecognizer.framesPerSecond,
                              min(1, max(0, probability))))
                segment = ps_seg_next(current)
            }
            // A word's last frame may reach past the audio by the analysis window: kept within it.
            let timed = words.map { ($0.word, min($0.start, duration), min($0.end, duration), $0.probability) }
            return Recognition(text: text, segments: Self.phrases(timed), alternatives: grammar == nil ? alternatives(besides: text) : [],
                               duration: duration, confidence: grammar == nil ? nil : (min(1, max(0, posterior)) * 1000).rounded() / 1000)
        }

        /// The search of `grammar`, made on first use (the dictionary says which of its words
        /// pocketsphinx can hear); the least recently used is dropped past ``searchesKept``.
        private func search(for grammar: CommandGrammar) throws(BusError) -> String {
            if let index = searches.firstIndex(where: { $0.grammar == grammar }) {
                let entry = searches.remove(at: index)
                searches.append(entry)
                return entry.name
            }
            let jsgf = grammar.jsgf { word in
                guard let pronunciation = ps_lookup_word(decoder, word) else { return false }
                free(pronunciation)
                return true
            }
            guard let jsgf else {
                throw .failedPrecondition("none of the command patterns can be heard offline: their words are not in the recognizer's English dictionary")
            }
            let name = "commands-\(nextSearch)"
            nextSearch += 1
            guard ps_set_jsgf_string(decoder, name, jsgf) == 0 else { throw .internal("pocketsphinx refused the command grammar") }
            searches.append((grammar, name))
            if searches.count > Self.searchesKept {
                let dropped = searches.removeFirst()
                ps_unset_search(decoder, dropped.name)
            }
            return name
        }

        /// Up to three other readings from the N-best list (which repeats readings that differ
        /// only in pronunciation or silence).
        private func alternatives(besides text: String) -> [String] {
            var seen: Set<String> = [text], alternatives: [String] = []
            var nbest = ps_nbest(decoder)
            var examined = 0
            while let current = nbest, alternatives.count < 3, examined < 20 {
                examined += 1
                var score: Int32 = 0
                if let hypothesis = ps_nbest_hyp(current, &score) {
                    let reading = String(cString: hypothesis)
                    if !reading.isEmpty, seen.insert(reading).inserted { alternatives.append(reading) }
                }
                nbest = ps_nbest_next(current)
            }
            if let nbest { ps_nbest_free(nbest) }
            return alternatives
        }

        /// Words grouped into phrases at pauses of 0.3 s or more; fillers (`<s>`, `<sil>`,
        /// `[NOISE]`) left out and pronunciation numbers (`the(2)`) removed.
        static func phrases(_ words: [(word: String, start: Double, end: Double, probability: Double)]) -> [TranscriptSegment] {
            var segments: [TranscriptSegment] = []
            var current: (start: Double, end: Double, words: [String], probabilities: [Double])?
            func close() {
                guard let phrase = current, !phrase.words.isEmpty else { return }
                let confidence = phrase.probabilities.reduce(0, +) / Double(phrase.probabilities.count)
                segments.append(TranscriptSegment(start: phrase.start, end: phrase.end, text: phrase.words.joined(separator: " "),
                                                  confidence: (confidence * 1000).rounded() / 1000))
                current = nil
            }
            for word in words {
                let isFiller = word.word.hasPrefix("<") || word.word.hasPrefix("[") || word.word.hasPrefix("++")
                if isFiller {
                    if word.end - word.start >= 0.3 { close() }
                    continue
                }
                let spelled = word.word.split(separator: "(").first.map(String.init) ?? word.word
                if current == nil { current = (word.start, word.end, [], []) }
                current!.end = word.end
                current!.words.append(spelled)
                current!.probabilities.append(word.probability)
            }
            close()
            return segments
        }
    }
}
