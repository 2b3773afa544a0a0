@testable import AIGatewayCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

/// The encodings apps upload, each made by ffmpeg from espeak-ng's WAV.
enum AudioForm: String, CaseIterable, CustomTestStringConvertible {
    case wav8kMono, wav16kMono, wav44kStereo, wav48kMono, m4aAAC, mp3, oggOpus

    var fileName: String {
        switch self {
        case .m4aAAC: "command.m4a"
        case .mp3: "command.mp3"
        case .oggOpus: "command.ogg"
        default: "command.wav"
        }
    }

    /// ffmpeg's output options for the form.
    var arguments: [String] {
        switch self {
        case .wav8kMono: ["-ar", "8000", "-ac", "1"]
        case .wav16kMono: ["-ar", "16000", "-ac", "1"]
        case .wav44kStereo: ["-ar", "44100", "-ac", "2"]
        case .wav48kMono: ["-ar", "48000", "-ac", "1"]
        case .m4aAAC: ["-ar", "44100", "-ac", "2", "-c:a", "aac", "-b:a", "96k"]
        case .mp3: ["-ar", "44100", "-ac", "1", "-c:a", "libmp3lame", "-b:a", "64k"]
        case .oggOpus: ["-ar", "48000", "-c:a", "libopus", "-b:a", "24k"]
        }
    }

    var testDescription: String { rawValue }

    /// `wav` converted by ffmpeg, run as an app's recorder would have encoded it.
    func encode(_ wav: Data) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appending(path: "audio-form-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appending(path: "in.wav"), output = directory.appending(path: fileName)
        try wav.write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", input.path] + arguments + [output.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ffmpeg encodes \(rawValue)")
        return try Data(contentsOf: output)
    }
}

@Suite("Spoken commands: any audio form, heard offline by a grammar of the user's patterns", .serialized)
struct SpokenCommandTests {
    static let vocabulary = SpeechSamples.commandVocabulary

    func speak(_ world: GatewayWorld, _ text: String) async throws -> Data {
        let (_, wav) = try await world.client.callWithAttachment(AIGateway.speak, SpeakRequest(text: text), options: CallOptions(user: "u1", timeout: .seconds(30)))
        return try #require(wav)
    }

    @Test("each audio form is converted to 16 kHz mono and heard as the same command", arguments: AudioForm.allCases)
    func audioForm(_ form: AudioForm) async throws {
        try await withGateway { world in
            let audio = try form.encode(try await speak(world, "show biology materials"))
            let parsed = try await world.call(AIGateway.parseIntent, IntentParseRequest(prompt: Self.vocabulary), timeout: .seconds(60), attachment: audio)
            #expect(parsed.match?.intent == "showSubjectMaterials" && parsed.match?.parameters == ["subject": "biology"],
                    "\(form.rawValue): heard '\(parsed.heard?.text ?? "")'")
            let heard = try #require(parsed.heard)
            #expect(heard.text == "show biology materials" && heard.generation.provider == "local")
            #expect((0...1).contains(heard.confidence ?? -1))
            #expect(heard.duration > 1 && heard.duration < 4)
        }
    }

    @Test("a quiet recording with long silence around the speech: the level is raised, the silence cut, times stay the upload's")
    func quietAndPadded() async throws {
        try await withGateway { world in
            let wav = try await speak(world, "review my flashcards")
            let samples = stride(from: 44, to: wav.count - 1, by: 2).map { Int16(bitPattern: UInt16(wav[$0]) | UInt16(wav[$0 + 1]) << 8) }
            let silence = [Int16](repeating: 0, count: 2 * 22_050)
            let quiet = silence + samples.map { Int16(Double($0) * 0.03) } + silence  // about -30 dB
            let upload = AudioFixtures.wav(quiet, sampleRate: 22_050)
            let transcript = try await world.call(
                AIGateway.transcribe, TranscribeRequest(mode: .command), timeout: .seconds(60), attachment: upload)
            #expect(transcript.text == "review my flashcards")
            #expect(transcript.command?.match?.intent == "reviewFlashcards")
            #expect(abs(transcript.duration - Double(quiet.count) / 22_050) < 0.05, "the upload's duration")
            let first = try #require(transcript.segments.first)
            #expect(first.start >= 1.7 && (transcript.segments.last?.end ?? 0) <= transcript.duration - 1.5, "times within the speech: \(transcript.segments)")
        }
    }

    @Test("the user's own pattern is in the grammar; without a prompt a slot hears nothing, so only patterns without one are heard")
    func ownPatternAndPrompt() async throws {
        try await withGateway { world in
            _ = try await world.call(AIGateway.registerIntents, IntentRegisterRequest(commands: [
                IntentRegistration(pattern: "quiz me on * [please]", intent: "quizMe", category: .action, parameters: ["topic"]),
            ]))
            let quiz = try await speak(world, "quiz me on fractions")
            let parsed = try await world.call(AIGateway.parseIntent, IntentParseRequest(prompt: "cells, fractions, the calvin cycle"), timeout: .seconds(60), attachment: quiz)
            #expect(parsed.match?.intent == "quizMe" && parsed.match?.parameters == ["topic": "fractions"], "heard '\(parsed.heard?.text ?? "")'")
            let otherUser = try await world.call(
                AIGateway.transcribe, TranscribeRequest(prompt: "cells, fractions", mode: .command), user: "u2", timeout: .seconds(60), attachment: quiz)
            #expect(otherUser.command?.match?.intent != "quizMe", "another user's patterns are not in the grammar")
            #expect(!otherUser.text.hasPrefix("quiz"))

            let plain = try await world.call(AIGateway.transcribe, TranscribeRequest(mode: .command), timeout: .seconds(60), attachment: try await speak(world, "list upcoming tasks"))
            #expect(plain.command?.match?.intent == "upcomingTasks", "heard '\(plain.text)'")
            #expect(plain.alternatives.isEmpty && (0...1).contains(plain.confidence ?? -1))
            #expect(plain.segments.map(\.text).joined(separator: " ") == plain.text)
        }
    }

    @Test("intent.parse takes text or audio, not both nor neither; a long prompt is INVALID_ARGUMENT")
    func invalid() async throws {
        try await withGateway { world in
            let audio = try await speak(world, "show materials")
            let both = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.parseIntent, IntentParseRequest(text: "show materials"), attachment: audio)
            }
            #expect(both?.code == .invalidArgument && both?.message.contains("text") == true)
            let neither = await #expect(throws: BusError.self) { _ = try await world.call(AIGateway.parseIntent, IntentParseRequest()) }
            #expect(neither?.code == .invalidArgument && neither?.message.contains("text") == true)
            let long = await #expect(throws: BusError.self) {
                _ = try await world.call(AIGateway.parseIntent, IntentParseRequest(prompt: String(repeating: "biology, ", count: 500)), attachment: audio)
            }
            #expect(long?.code == .invalidArgument && long?.message.contains("prompt") == true)
        }
    }
}

@Suite("The command grammar and the audio's conditioning")
struct CommandGrammarTests {
    @Test("patterns become JSGF rules, a slot holds the prompt's phrases after an optional 'the', unknown words leave a pattern out")
    func jsgf() throws {
        let patterns = try ["show * materials", "schedule study [session]", "open [the] *", "play the zither"].map { try IntentPattern($0) }
        let grammar = CommandGrammar(patterns: patterns, prompt: "Biology, the camera; math\nbiology")
        #expect(grammar.slotTerms == [["biology"], ["the", "camera"], ["math"]])
        let text = try #require(grammar.jsgf { $0 != "zither" })
        #expect(text == """
            #JSGF V1.0;
            grammar commands;
            public <command> = <c0> | <c1> | <c2>;
            <c0> = show <slot> materials;
            <c1> = schedule study [session];
            <c2> = open [the] <slot>;
            <slot> = [the] <term>;
            <term> = biology | the camera | math;

            """)
        #expect(CommandGrammar.terms("cells atoms cells") == [["cells"], ["atoms"]], "no separator: a list of words")
        let withoutPrompt = try #require(CommandGrammar(patterns: patterns, prompt: nil).jsgf { _ in true })
        #expect(!withoutPrompt.contains("<slot>") && withoutPrompt.contains("play the zither"))
        #expect(CommandGrammar(patterns: [try IntentPattern("open [the] *")], prompt: nil).jsgf { _ in true } == nil)
    }

    @Test("conditioning cuts silence beyond the margin, raises a quiet level, and leaves pure silence alone")
    func conditioning() {
        let rate = 16_000
        let tone = (0..<rate).map { Int16(1000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        let padded = [Int16](repeating: 0, count: 2 * rate) + tone + [Int16](repeating: 0, count: 2 * rate)
        let conditioned = SpeechConditioning.condition(padded, sampleRate: rate)
        #expect(abs(conditioned.offset - (2 - SpeechConditioning.marginSeconds)) < 0.011)
        #expect(abs(Double(conditioned.samples.count) / Double(rate) - (1 + 2 * SpeechConditioning.marginSeconds)) < 0.021)
        let peak = conditioned.samples.map { abs(Int($0)) }.max() ?? 0
        #expect(Double(peak) > 0.9 * SpeechConditioning.targetPeak && Double(peak) <= SpeechConditioning.targetPeak + 1)
        let clipped = SpeechConditioning.condition(tone, sampleRate: rate)
        #expect(clipped.offset == -SpeechConditioning.marginSeconds && clipped.samples.count == tone.count + 2 * Int(SpeechConditioning.marginSeconds * Double(rate)),
                "silence put back where the speech starts at once")
        let unpadded = SpeechConditioning.condition(tone, sampleRate: rate, padding: false)
        #expect(unpadded.offset == 0 && unpadded.samples.count == tone.count, "commands keep only the silence they had")
        let silence = [Int16](repeating: 3, count: rate)
        #expect(SpeechConditioning.condition(silence, sampleRate: rate) == .init(samples: silence, offset: 0))
    }
}
