// Measures the store through the bus: a broker and the store in this process, over real
// loopback sockets and a real SQLite file. Prints `name value unit` lines.
//
//   put_material_1mb_ms   materials.put of 1 MB of text in 1,000 chunks with 200 cards (median)
//   search_p50_ms/p99_ms  search over 100,000 chunks, one or two words per query
//   get_by_id_p50_us      flashcards.get of a random card
import BrokerCore
import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import StoreCore
import Wire

/// A deterministic generator (SplitMix64), so every run indexes the same text.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Words made of syllables, drawn with a Zipf-like skew: a few are everywhere, most are rare.
struct Vocabulary {
    let words: [String]
    init(count: Int, random: inout SeededRandom) {
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pha", "gro", "bel", "dun", "fer", "qui", "tor"]
        var seen = Set<String>()
        var words: [String] = []
        while words.count < count {
            let word = (0..<Int.random(in: 2...4, using: &random)).map { _ in syllables.randomElement(using: &random)! }.joined()
            if seen.insert(word).inserted { words.append(word) }
        }
        self.words = words
    }

    func word(_ random: inout SeededRandom) -> String {
        // Inverse-power sampling: index ~ count^u, skewed to the front.
        let u = Double.random(in: 0..<1, using: &random)
        return words[min(words.count - 1, Int(pow(Double(words.count), u)) - 1)]
    }

    func text(characters: Int, _ random: inout SeededRandom) -> String {
        var text = ""
        while text.utf8.count < characters { text += word(&random) + (Int.random(in: 0..<12, using: &random) == 0 ? ". " : " ") }
        return text
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

func milliseconds(_ duration: Duration) -> Double { Double(duration.wholeMicroseconds) / 1000 }

func put(chunks: Int, characters: Int, cards: Int, vocabulary: Vocabulary, random: inout SeededRandom) -> MaterialPut {
    MaterialPut(
        title: "Bench material", sourceKind: .txt, summary: "generated", keywords: ["bench"],
        sourceDocument: SourceDocumentInput(title: "bench.txt"),
        chunks: (0..<chunks).map { ChunkInput(ordinal: $0, text: vocabulary.text(characters: characters, &random), pageNumber: $0 / 3 + 1) },
        flashcards: (0..<cards).map { GeneratedFlashcard(front: "What is \(vocabulary.word(&random))?", back: vocabulary.text(characters: 80, &random), tags: ["bench"], chunkOrdinal: $0 % chunks) })
}

// `StoreBench put` only measures puts. STORE_BENCH_LOG=1 logs each request's handling time in
// the store (debug level, on standard error) to tell bus time from store time.
let putsOnly = CommandLine.arguments.dropFirst().first == "put"
let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
let storeLogs = ProcessInfo.processInfo.environment["STORE_BENCH_LOG"] == "1"
var storeLogger = Logger(label: "store") { label -> any LogHandler in storeLogs ? StreamLogHandler.standardError(label: label) : SwiftLogNoOpLogHandler() }
storeLogger.logLevel = .debug
let directory = FileManager.default.temporaryDirectory.appending(path: "studybus-store-bench-\(UUID().uuidString)")
var brokerConfiguration = BrokerConfiguration()
brokerConfiguration.rpcBind = "tcp://127.0.0.1:*"
brokerConfiguration.pubBind = "tcp://127.0.0.1:*"
brokerConfiguration.subBind = "tcp://127.0.0.1:*"
let broker = try Broker(configuration: brokerConfiguration, logger: logger)
let endpoints = try await broker.start()
func busConfiguration(_ source: String) -> BusConfiguration {
    var configuration = BusConfiguration(source: source)
    configuration.rpcEndpoint = endpoints.rpc
    configuration.pubEndpoint = endpoints.pub
    configuration.subEndpoint = endpoints.sub
    return configuration
}
let store = try StoreService(context: ServiceContext(
    configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite")), logger: storeLogger,
    busConfiguration: busConfiguration("store")))
let running = store.services.map { service in Task { try await service.run() } }
let client = try Bus(configuration: busConfiguration("bench"), logger: logger)
let options = CallOptions(user: "bench", timeout: .seconds(120))
while (try? await client.call(Reserved.health("store"), Empty())) == nil { try await Task.sleep(for: .milliseconds(20)) }

var random = SeededRandom(state: 42)
let vocabulary = Vocabulary(count: 20_000, random: &random)
let clock = ContinuousClock()

// 1 MB in 1,000 chunks with 200 cards, each put a new material.
var putTimes: [Double] = []
var cardIDs: [String] = []
for _ in 0..<(putsOnly ? 30 : 7) {
    let request = put(chunks: 1_000, characters: 1_049, cards: 200, vocabulary: vocabulary, random: &random)
    let started = clock.now
    let result = try await client.call(Store.putMaterial, request, options: options)
    putTimes.append(milliseconds(clock.now - started))
    cardIDs += result.flashcardIds
    // Each put is measured on an idle store: a search waits for the previous one's indexing.
    _ = try await client.call(Store.search, SearchRequest(query: "bench"), options: options)
}
print("put_material_1mb_ms \(String(format: "%.1f", percentile(putTimes, 0.5))) ms")
if putsOnly {
    // Where a put's time goes: the JSON of the request, each way.
    let request = put(chunks: 1_000, characters: 1_049, cards: 200, vocabulary: vocabulary, random: &random)
    var encodeTimes: [Double] = [], decodeTimes: [Double] = []
    for _ in 0..<10 {
        var started = clock.now
        let data = try WireCoding.encode(request)
        encodeTimes.append(milliseconds(clock.now - started))
        started = clock.now
        _ = try WireCoding.decode(MaterialPut.self, from: data)
        decodeTimes.append(milliseconds(clock.now - started))
    }
    print("put_request_encode_ms \(String(format: "%.1f", percentile(encodeTimes, 0.5))) ms")
    print("put_request_decode_ms \(String(format: "%.1f", percentile(decodeTimes, 0.5))) ms")
    exit(0)
}

// Fill to 100,000 chunks (7,000 so far) with 1,000-chunk materials of ~300 characters each.
let seeded = 7_000
for _ in 0..<((100_000 - seeded) / 1_000) {
    _ = try await client.call(Store.putMaterial, put(chunks: 1_000, characters: 300, cards: 0, vocabulary: vocabulary, random: &random), options: options)
}
_ = try await client.call(Store.search, SearchRequest(query: "bench"), options: options)  // index everything first

var searchTimes: [Double] = []
for index in 0..<1_000 {
    let query = index % 2 == 0 ? vocabulary.word(&random) : vocabulary.word(&random) + " " + vocabulary.word(&random)
    let started = clock.now
    _ = try await client.call(Store.search, SearchRequest(query: query, kinds: [.chunk], limit: 20), options: options)
    searchTimes.append(milliseconds(clock.now - started))
}
print("search_p50_ms \(String(format: "%.2f", percentile(searchTimes, 0.5))) ms")
print("search_p99_ms \(String(format: "%.2f", percentile(searchTimes, 0.99))) ms")

var getTimes: [Double] = []
for _ in 0..<5_000 {
    let id = cardIDs.randomElement(using: &random)!
    let started = clock.now
    _ = try await client.call(Store.getFlashcard, RecordID(id: id), options: options)
    getTimes.append(Double((clock.now - started).wholeMicroseconds))
}
print("get_by_id_p50_us \(Int(percentile(getTimes, 0.5))) us")

for task in running.reversed() {
    task.cancel()
    _ = try? await task.value
}
await client.shutdown()
await broker.stop()
try? FileManager.default.removeItem(at: directory)
