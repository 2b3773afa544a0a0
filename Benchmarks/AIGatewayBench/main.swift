import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Wire

// Prints `name value unit` lines for scripts/bench-ai: the local provider on 100 KB of notes,
// intent parsing with and without the cache, the gateway's overhead through the bus, offline
// speech's real-time factor, each transcription provider's word error rate on espeak-ng's
// speech, and how well the offline recognizer hears free speech and commands against the
// recognizer before issue 44 (Recognition.swift).

func measure(_ iterations: Int, warmup: Int = 2, _ body: () -> Void) -> [Duration] {
    for _ in 0..<warmup { body() }
    return (0..<iterations).map { _ in
        let started = ContinuousClock.now
        body()
        return ContinuousClock.now - started
    }
}

func percentile(_ samples: [Duration], _ fraction: Double) -> Double {
    let sorted = samples.sorted()
    let sample = sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    return Double(sample.components.seconds) * 1e6 + Double(sample.components.attoseconds) / 1e12
}

func report(_ name: String, _ value: Double, _ unit: String) {
    print(name, String(format: value < 10 ? "%.2f" : "%.1f", value), unit)
}

let notes = StudyText.generate(bytes: 100 * 1024)
let chunks = notes.components(separatedBy: "\n## ").enumerated().map { TextChunk(id: "chunk-\($0.offset)", text: $0.element) }

report("local_keywords_100kb_ms", percentile(measure(15) { _ = LocalText.keywords(notes, maxCount: 10) }, 0.5) / 1000, "ms")
report("local_summary_100kb_ms", percentile(measure(15) { _ = LocalText.summarize(notes, maxSentences: 5) }, 0.5) / 1000, "ms")
report("local_flashcards_100kb_ms", percentile(measure(15) { _ = LocalText.flashcards(chunks, maxCards: 50, maxCardsPerChunk: 5) }, 0.5) / 1000, "ms")

// Intent parsing: a hit repeats a command; a miss is a command the cache has not seen (it still
// matches a pattern); no-match is a command no pattern matches (fuzzy candidates are ranked).
let intents = IntentEngine(cacheSize: 50)
let rounds = 20_000
report("intent_parse_hit_us", percentile(measure(rounds) { _ = try? intents.parse("show math materials", user: "u1") }, 0.5), "us")
var missCounter = 0
report("intent_parse_miss_us", percentile(measure(rounds) {
    missCounter += 1
    _ = try? intents.parse("show subject\(missCounter) materials", user: "u1")
}, 0.5), "us")
report("intent_parse_nomatch_us", percentile(measure(rounds) {
    missCounter += 1
    _ = try? intents.parse("play some music number \(missCounter)", user: "u1")
}, 0.5), "us")

// Through the bus: a broker, the gateway and a client in this process, over loopback TCP.
var silent = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
silent.logLevel = .critical
// An OpenAI-compatible provider from the environment (OPENAI_API_KEY, AI_OPENAI_BASE_URL) is
// configured for the word error rates only: every other method stays local.
let openAI = try AIGatewayConfiguration(environment: Environment(ProcessInfo.processInfo.environment)).openAI
let gateway = try await BenchGateway.start(logger: silent, openAI: openAI)
let client = gateway.client
let options = CallOptions(user: "bench")
while (try? await client.call(Reserved.health("ai-gateway"), Empty(), options: CallOptions(timeout: .milliseconds(200))))?.status != .serving {}

let request = KeywordsRequest(text: "Photosynthesis turns light, water and carbon dioxide into glucose and oxygen in the chloroplasts of leaves.", maxCount: 5)
var hits: [Duration] = []
var health: [Duration] = []
for round in 0..<3000 {
    let started = ContinuousClock.now
    let answer = try await client.call(AIGateway.keywords, request, options: options)
    if round >= 100 {
        precondition(answer.generation.cached)
        hits.append(ContinuousClock.now - started)
    }
    let probe = ContinuousClock.now
    _ = try await client.call(Reserved.health("ai-gateway"), Empty(), options: options)
    if round >= 100 { health.append(ContinuousClock.now - probe) }
}
report("gateway_overhead_p50_us", percentile(hits, 0.5), "us")
report("gateway_overhead_p99_us", percentile(hits, 0.99), "us")
report("bus_health_roundtrip_p50_us", percentile(health, 0.5), "us")

// Offline speech (espeak-ng through the bus): seconds of audio per second of synthesis, over
// texts of about 600 characters, each different (a repeat would come from the cache).
let speechOptions = CallOptions(user: "bench", timeout: .seconds(120))
let paragraph = """
    Good evening. The front door is locked and the porch light is on. The heating will lower the temperature to eighteen degrees \
    at eleven, and the dishwasher finishes in twenty minutes. Tomorrow the recycling goes out, and the smoke alarm in the hallway \
    would like a new battery this week. The garden was watered at six; the forecast says rain after midnight, so the skylight in \
    the attic is closed. Sleep well, and remember that the living room window is still open a little. Round
    """
_ = try await client.call(AIGateway.speak, SpeakRequest(text: "warm up", provider: "local"), options: speechOptions)
var audioSeconds = 0.0
let synthesisStarted = ContinuousClock.now
for round in 0..<10 {
    let speech = try await client.call(AIGateway.speak, SpeakRequest(text: paragraph + " \(round + 1).", provider: "local"), options: speechOptions)
    audioSeconds += speech.duration
}
let synthesis = ContinuousClock.now - synthesisStarted
report("tts_realtime_factor", audioSeconds / (Double(synthesis.components.seconds) + Double(synthesis.components.attoseconds) / 1e18), "x")

// Word error rate of each transcription provider on sentences espeak-ng says (its default
// voice, WAV), all errors over all reference words.
let sentences = SpeechSamples.sentences
var spoken: [Data] = []
for sentence in sentences {
    let (_, wav) = try await client.callWithAttachment(AIGateway.speak, SpeakRequest(text: sentence, provider: "local"), options: speechOptions)
    spoken.append(wav ?? Data())
}
for provider in ["local"] + (openAI.map { [$0.name] } ?? []) {
    var errors = 0, words = 0
    for (sentence, wav) in zip(sentences, spoken) {
        let transcript = try await client.call(
            AIGateway.transcribe, TranscribeRequest(language: "en", fileName: "sentence.wav", provider: provider),
            options: CallOptions(user: "bench", timeout: .seconds(120), attachment: wav))
        let score = WordErrorRate.errors(reference: sentence, hypothesis: transcript.text)
        errors += score.errors
        words += score.words
    }
    print("wer_\(provider)", String(format: "%.3f", Double(errors) / Double(words)), "ratio")
}

// How well the offline recognizer hears, against the recognizer before issue 44 in this run.
let baseline = try await BenchGateway.start(logger: silent, profile: .baseline)
try await RecognitionBenchmark.run(tuned: client, baseline: baseline.client)
await baseline.stop()
await gateway.stop()
