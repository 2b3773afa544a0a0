import AIGatewayCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

/// A RIFF WAVE header as a player reads it.
struct WAVHeader {
    var channels: Int
    var sampleRate: Int
    var bitsPerSample: Int
    var dataBytes: Int

    /// Reads a canonical 44-byte PCM header; nil for anything else.
    init?(_ data: Data) {
        let bytes = [UInt8](data.prefix(44))
        guard bytes.count == 44, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF", String(decoding: bytes[8..<16], as: UTF8.self) == "WAVEfmt ",
              String(decoding: bytes[36..<40], as: UTF8.self) == "data" else { return nil }
        func number(_ offset: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        guard number(4, 4) == data.count - 8, number(16, 4) == 16, number(20, 2) == 1 else { return nil }
        channels = number(22, 2)
        sampleRate = number(24, 4)
        bitsPerSample = number(34, 2)
        guard number(28, 4) == sampleRate * channels * bitsPerSample / 8 else { return nil }
        dataBytes = number(40, 4)
    }

    var seconds: Double { Double(dataBytes) / Double(sampleRate * channels * bitsPerSample / 8) }
}

@Suite("speak and voices: offline espeak-ng, OpenAI's /audio/speech, fallback and cache", .serialized)
struct SpeechTests {
    static let short = "Welcome home. The kitchen lights are on."

    func speak(_ world: GatewayWorld, _ request: SpeakRequest) async throws -> (SpeakResponse, Data) {
        let (response, attachment) = try await world.client.callWithAttachment(AIGateway.speak, request, options: CallOptions(user: "u1", timeout: .seconds(30)))
        return (response, try #require(attachment))
    }

    @Test("offline speech is a valid 16-bit mono WAV whose length fits the text and grows with it")
    func offlineWAV() async throws {
        try await withGateway { world in
            let (response, wav) = try await speak(world, SpeakRequest(text: Self.short))
            let header = try #require(WAVHeader(wav), "a canonical PCM WAV header")
            #expect(header.channels == 1 && header.bitsPerSample == 16 && header.sampleRate == 22_050)
            #expect(header.dataBytes == wav.count - 44)
            #expect(response.format == .wav && response.contentType == "audio/wav" && response.sampleRate == 22_050 && response.bytes == wav.count)
            #expect(abs(response.duration - header.seconds) < 0.01)
            // About 15 characters a second at 175 words a minute: 40 characters are 1.5 to 5 s.
            #expect((1.5...5).contains(response.duration), "\(response.duration) s for \(Self.short.count) characters")
            #expect(response.generation.provider == "local" && response.generation.model == "espeak-ng" && response.voice == "en-us+f2")
            let samples = wav.dropFirst(44)
            #expect(samples.contains { $0 != 0 }, "not silence")

            let (longer, _) = try await speak(world, SpeakRequest(text: Array(repeating: Self.short, count: 4).joined(separator: " ")))
            #expect(longer.duration > 3 * response.duration && longer.duration < 5 * response.duration, "\(longer.duration) vs \(response.duration)")
            let (faster, _) = try await speak(world, SpeakRequest(text: Self.short, rate: 2))
            #expect(faster.duration < 0.7 * response.duration)
        }
    }

    @Test("Ogg/Opus when asked (ffmpeg), a named voice, and the same request again from the cache")
    func oggVoiceAndCache() async throws {
        try await withGateway { world in
            let request = SpeakRequest(text: Self.short, language: "en-GB", pitch: 1.2, format: .ogg)
            let (response, ogg) = try await speak(world, request)
            #expect(ogg.prefix(4) == Data("OggS".utf8) && ogg.range(of: Data("OpusHead".utf8)) != nil)
            #expect(response.contentType == "audio/ogg" && response.bytes == ogg.count && response.voice == "en-gb+f2")
            let (again, _) = try await speak(world, request)
            #expect(again.generation.cached && again.duration == response.duration)
            let (named, _) = try await speak(world, SpeakRequest(text: Self.short, voice: "de"))
            #expect(named.voice == "de" && !named.generation.cached)
        }
    }

    @Test("hostile requests: too long a text, numbers out of range, unknown voices and languages are INVALID_ARGUMENT")
    func invalid() async throws {
        try await withGateway { world in
            func error(_ request: SpeakRequest) async -> BusError? {
                await #expect(throws: BusError.self) { _ = try await speak(world, request) }
            }
            let long = await error(SpeakRequest(text: String(repeating: "a", count: AIGatewayLimits.speechCharacters + 1)))
            #expect(long?.code == .invalidArgument && long?.message.contains("5000") == true)
            let rate = await error(SpeakRequest(text: "hi", rate: 9))
            #expect(rate?.code == .invalidArgument && rate?.message.contains("rate") == true)
            #expect(await error(SpeakRequest(text: "hi", pitch: 0.1))?.code == .invalidArgument)
            #expect(await error(SpeakRequest(text: "   "))?.code == .invalidArgument)
            #expect(await error(SpeakRequest(text: "hi", voice: "en-us+nosuchvariant"))?.code == .invalidArgument)
            #expect(await error(SpeakRequest(text: "hi", voice: "../../etc/passwd"))?.code == .invalidArgument)
            #expect(await error(SpeakRequest(text: "hi", language: "tlh"))?.message.contains("no offline") == true)
            #expect(await error(SpeakRequest(text: "hi", provider: "gemini"))?.code == .invalidArgument)
            // A slow rate that would pass the longest speech a reply carries.
            let slow = await error(SpeakRequest(text: String(repeating: "The house is quiet tonight. ", count: 178), rate: 0.25))
            #expect(slow?.code == .invalidArgument && slow?.message.contains("600 s") == true)
        }
    }

    @Test("voices lists espeak-ng's installed voices and variants, filtered by language")
    func voices() async throws {
        try await withGateway { world in
            let all = try await world.call(AIGateway.voices, VoicesRequest())
            #expect(all.voices.count > 50 && all.voices.allSatisfy { $0.provider == "local" })
            #expect(all.voices.contains { $0.name == "en-us" && $0.languages.first == "en-us" })
            #expect(all.localVariants.contains("f2"))
            let english = try await world.call(AIGateway.voices, VoicesRequest(language: "en"))
            #expect(!english.voices.isEmpty && english.voices.allSatisfy { $0.languages.contains { $0 == "en" || $0.hasPrefix("en-") } })
            await #expect(throws: BusError.self) { _ = try await world.call(AIGateway.voices, VoicesRequest(provider: "openai")) }
        }
    }

    @Test("OpenAI's /audio/speech: the real request, raw PCM read at 24 kHz, usage counted; its voices listed")
    func openAI() async throws {
        try await withMockGateway { world, mock in
            try await mock.script("speech", [["seconds": .double(1.5)]])
            let (response, wav) = try await speak(world, SpeakRequest(text: Self.short, voice: "nova", rate: 1.25))
            #expect(response.generation.provider == "openai" && response.generation.model == "gpt-4o-mini-tts" && response.voice == "nova")
            #expect(response.sampleRate == 24_000 && abs(response.duration - 1.5) < 0.001)
            #expect(WAVHeader(wav)?.sampleRate == 24_000 && WAVHeader(wav)?.dataBytes == 72_000)
            let request = try #require(try await mock.requests(containing: "/v1/audio/speech").first)
            #expect(request["headers"]?["authorization"] == .string("Bearer sk-test-openai-secret"))
            #expect(request["json"]?["model"] == .string("gpt-4o-mini-tts") && request["json"]?["input"] == .string(Self.short))
            #expect(request["json"]?["voice"] == .string("nova") && request["json"]?["response_format"] == .string("pcm"))
            #expect(request["json"]?["speed"] == .double(1.25))
            let usage = try await world.call(AIGateway.usage, UsageRequest())
            let entry = try #require(usage.entries.first { $0.provider == "openai" })
            #expect(entry.requests == 1 && abs(entry.audioSeconds - 1.5) < 0.01 && entry.estimatedCostUSD > 0)
            let voices = try await world.call(AIGateway.voices, VoicesRequest(provider: "openai"))
            #expect(voices.voices.map(\.name).contains("alloy") && voices.voices.allSatisfy { $0.languages == ["*"] })
        }
    }

    @Test("a 429 from OpenAI is retried, then speech falls back to espeak-ng with the failure reported")
    func fallbackToOffline() async throws {
        try await withMockGateway { world, mock in
            let limited: [String: JSONValue] = ["status": .int(429), "text": .string("Rate limit reached for requests")]
            try await mock.script("speech", [limited, limited, limited])
            let (response, wav) = try await speak(world, SpeakRequest(text: Self.short))
            #expect(response.generation.provider == "local" && response.sampleRate == 22_050 && WAVHeader(wav) != nil)
            #expect(response.generation.fallbacks.map(\.provider) == ["openai"])
            #expect(response.generation.fallbacks.first?.code == "RESOURCE_EXHAUSTED")
            #expect(response.generation.fallbacks.first?.message.contains("Rate limit reached") == true)
            #expect(try await mock.requests(containing: "/v1/audio/speech").count == 3, "the first try and two retries")
            // Pinned to OpenAI there is no fallback.
            try await mock.script("speech", [limited, limited, limited])
            let pinned = await #expect(throws: BusError.self) { _ = try await speak(world, SpeakRequest(text: "Another text.", provider: "openai")) }
            #expect(pinned?.code == .resourceExhausted)
        }
    }
}
