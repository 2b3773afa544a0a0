import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Wire

/// A broker with a gateway on it (local provider only) and a client, in this process.
struct BenchGateway {
    let broker: Broker
    /// Kept: the host holds its handlers' service weakly.
    let gateway: AIGatewayService
    let group: ServiceGroup
    let serving: Task<Void, any Error>
    let client: Bus
    let directory: URL

    static func start(logger: Logger, openAI: RemoteProviderConfiguration? = nil, profile: OfflineRecognitionProfile = .tuned) async throws -> BenchGateway {
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
        let directory = FileManager.default.temporaryDirectory.appending(path: "ai-gateway-bench-\(UUID().uuidString)")
        var routes: [GatewayTask: [String]] = [:]
        for task in GatewayTask.allCases { routes[task] = ["local"] }
        var configuration = AIGatewayConfiguration(databaseURL: directory.appending(path: "ai-gateway.sqlite"), openAI: openAI, routes: routes)
        configuration.speech.recognition = profile
        let gateway = try AIGatewayService(context: ServiceContext(configuration: configuration, logger: logger, busConfiguration: busConfiguration("ai-gateway")))
        let group = ServiceGroup(services: gateway.services, logger: logger)
        let serving = Task { try await group.run() }
        let client = try Bus(configuration: busConfiguration("bench"), logger: logger)
        while (try? await client.call(Reserved.health("ai-gateway"), Empty(), options: CallOptions(timeout: .milliseconds(200))))?.status != .serving {}
        return BenchGateway(broker: broker, gateway: gateway, group: group, serving: serving, client: client, directory: directory)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await serving.value
        await client.shutdown()
        await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// How well the offline recognizer hears (issue 44): espeak-ng says ``SpeechSamples/freeSpeech``
/// and ``SpeechSamples/commands`` in five voices at three rates, and ffmpeg resamples each clip to
/// 16, 22.05, 44.1 (stereo) or 48 kHz, as phones and browsers record. The gateway as it is
/// (`tuned`) and as it was (`baseline`: language model, then `intent.parse` of the text) hear the
/// same clips in this run. Prints the word error rate of free speech (over all words, and per
/// sample rate) and the share of commands that come back as their intent with exactly their
/// parameters.
enum RecognitionBenchmark {
    static let voices = ["en-us", "en-us+f2", "en-us+m3", "en-gb", "en-gb-x-rp+f4"]
    /// Multiples of espeak-ng's 175 words a minute: 140, 175, 210.
    static let rates = [0.8, 1.0, 1.2]
    static let sampleRates = [16_000, 22_050, 44_100, 48_000]

    struct Clip {
        var reference: String
        var command: SpeechSamples.Command?
        var sampleRate: Int
        var wav: Data
    }

    static func run(tuned: Bus, baseline: Bus) async throws {
        let options = CallOptions(user: "bench", timeout: .seconds(120))
        var clips: [Clip] = []
        let said = SpeechSamples.freeSpeech.map { ($0, SpeechSamples.Command?.none) } + SpeechSamples.commands.map { ($0.said, Optional($0)) }
        for (index, (text, command)) in said.enumerated() {
            for (rateIndex, sampleRate) in sampleRates.enumerated() {
                // Commands are said three times at each sample rate, sentences once.
                for take in 0..<(command == nil ? 1 : 3) {
                    let voice = voices[(index + rateIndex + take) % voices.count], rate = rates[(index + 2 * rateIndex + take) % rates.count]
                    let (_, wav) = try await tuned.callWithAttachment(
                        AIGateway.speak, SpeakRequest(text: text, voice: voice, rate: rate, provider: "local"), options: options)
                    clips.append(Clip(reference: text, command: command, sampleRate: sampleRate,
                                      wav: try resample(wav ?? Data(), to: sampleRate, channels: sampleRate == 44_100 ? 2 : 1)))
                }
            }
        }
        for (name, bus, isBaseline) in [("offline", tuned, false), ("offline_baseline", baseline, true)] {
            var errors = 0, words = 0, exact = 0, commands = 0
            var perRate: [Int: (errors: Int, words: Int)] = [:]
            for clip in clips {
                let attached = CallOptions(user: "bench", timeout: .seconds(120), attachment: clip.wav)
                if let command = clip.command {
                    let parsed: IntentParseResponse
                    if isBaseline {
                        // Before issue 44 a spoken command was transcribed, then parsed as text.
                        let transcript = try await bus.call(AIGateway.transcribe, TranscribeRequest(language: "en", fileName: "command.wav"), options: attached)
                        parsed = try await bus.call(AIGateway.parseIntent, IntentParseRequest(text: transcript.text.isEmpty ? "-" : transcript.text), options: options)
                    } else {
                        parsed = try await bus.call(AIGateway.parseIntent, IntentParseRequest(prompt: SpeechSamples.commandVocabulary), options: attached)
                    }
                    commands += 1
                    if parsed.match?.intent == command.intent && parsed.match?.parameters == command.parameters { exact += 1 }
                } else {
                    let transcript = try await bus.call(AIGateway.transcribe, TranscribeRequest(language: "en", fileName: "sentence.wav"), options: attached)
                    let score = WordErrorRate.errors(reference: clip.reference, hypothesis: transcript.text)
                    errors += score.errors
                    words += score.words
                    perRate[clip.sampleRate, default: (0, 0)].errors += score.errors
                    perRate[clip.sampleRate, default: (0, 0)].words += score.words
                }
            }
            print("wer_free_\(name)", String(format: "%.3f", Double(errors) / Double(words)), "ratio")
            for sampleRate in sampleRates {
                let rate = perRate[sampleRate] ?? (0, 1)
                print("wer_free_\(name)_\(sampleRate)hz", String(format: "%.3f", Double(rate.errors) / Double(rate.words)), "ratio")
            }
            print("commands_exact_\(name)", String(format: "%.1f", 100 * Double(exact) / Double(commands)), "percent")
        }
    }

    /// `wav` at `sampleRate` with `channels`, by ffmpeg's resampler.
    static func resample(_ wav: Data, to sampleRate: Int, channels: Int) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bench-resample-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appending(path: "in.wav"), output = directory.appending(path: "out.wav")
        try wav.write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", input.path, "-ac", String(channels), "-ar", String(sampleRate), output.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BusError.internal("ffmpeg could not resample a clip") }
        return try Data(contentsOf: output)
    }
}
