import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("ai-gateway configuration from the environment, and the binary end to end")
struct ConfigurationTests {
    /// `values` with `DATA_DIR` in a temporary folder (reading it creates the folder).
    static func environment(_ values: [String: String]) -> Environment {
        Environment(values.merging(["DATA_DIR": FileManager.default.temporaryDirectory.appending(path: "ai-gateway-configuration").path]) { given, _ in given })
    }

    @Test("an empty environment means the local provider for everything, offline speech and transcription included")
    func defaults() throws {
        let configuration = try AIGatewayConfiguration(environment: Self.environment([:]))
        #expect(configuration.databaseURL.lastPathComponent == "ai-gateway.sqlite")
        #expect(configuration.remotes.isEmpty)
        #expect(configuration.routes[.chat] == ["local"])
        #expect(configuration.routes[.transcribe] == ["local"])
        #expect(configuration.routes[.speak] == ["local"])
        #expect(configuration.speech.variant == "f2" && configuration.speech.ffmpeg == "ffmpeg")
        #expect(configuration.intentCacheSize == 50)
    }

    @Test("keys from the environment or a file enable providers with the seeds' rate limits; routes per method override AI_ROUTE")
    func providersAndRoutes() throws {
        let keyFile = FileManager.default.temporaryDirectory.appending(path: "gemini-key-\(UUID().uuidString)")
        try Data("  gm-from-file\n".utf8).write(to: keyFile)
        let configuration = try AIGatewayConfiguration(environment: Self.environment([
            "OPENAI_API_KEY": "sk-env", "GEMINI_API_KEY_FILE": keyFile.path, "AI_ROUTE": "openai, local",
            "AI_ROUTE_CHAT": "gemini,openai,local", "AI_INTENT_CACHE_SIZE": "80",
        ]))
        #expect(configuration.gemini?.apiKey?.description == "[redacted]")
        #expect(configuration.gemini?.requestsPerMinute == 60)
        #expect(configuration.openAI?.transcriptionRequestsPerMinute == 50)
        #expect(configuration.openAI?.baseURL == "https://api.openai.com/v1")
        #expect(configuration.routes[.summarize] == ["openai", "local"])
        #expect(configuration.routes[.chat] == ["gemini", "openai", "local"])
        #expect(configuration.routes[.transcribe] == ["openai"])
        #expect(configuration.routes[.speak] == ["openai", "local"], "AI_ROUTE's providers that can speak")
        #expect(configuration.openAI?.speechModel == "gpt-4o-mini-tts" && configuration.openAI?.speechVoice == "alloy")
        #expect(configuration.openAI?.speechRequestsPerMinute == 50)
        #expect(configuration.intentCacheSize == 80)
        let geminiFirst = try AIGatewayConfiguration(environment: Self.environment(["OPENAI_API_KEY": "k", "GEMINI_API_KEY": "g"]))
        #expect(geminiFirst.routes[.speak] == ["openai", "local"], "Gemini cannot speak")
        let offlineFallback = try AIGatewayConfiguration(environment: Self.environment(["OPENAI_API_KEY": "k", "AI_ROUTE_TRANSCRIBE": "openai,local"]))
        #expect(offlineFallback.routes[.transcribe] == ["openai", "local"])
        let chatOnly = try AIGatewayConfiguration(environment: Self.environment(["AI_OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "AI_ROUTE_TRANSCRIBE": ""]))
        #expect(chatOnly.routes[.transcribe] == [] && chatOnly.openAI?.apiKey == nil)
        #expect(!"\(configuration)".contains("sk-env") && !"\(configuration)".contains("gm-from-file"), "keys never print")
    }

    @Test("a route through a provider that is not configured, or transcription through one that cannot, is a configuration error")
    func badRoutes() {
        #expect(throws: BusError.invalidArgument("AI_ROUTE_SUMMARIZE: provider 'gemini' is not configured (configured: local)")) {
            _ = try AIGatewayConfiguration(environment: Self.environment(["AI_ROUTE_SUMMARIZE": "gemini"]))
        }
        #expect(throws: BusError.self) {
            _ = try AIGatewayConfiguration(environment: Self.environment(["GEMINI_API_KEY": "k", "AI_ROUTE_TRANSCRIBE": "gemini"]))
        }
        #expect(throws: BusError.invalidArgument("AI_ROUTE_SPEAK: 'gemini' cannot speak; only an OpenAI-compatible provider or local can")) {
            _ = try AIGatewayConfiguration(environment: Self.environment(["GEMINI_API_KEY": "k", "AI_ROUTE_SPEAK": "gemini,local"]))
        }
        #expect(throws: BusError.self) { _ = try AIGatewayConfiguration(environment: Self.environment(["AI_SPEECH_VARIANT": "f2; rm"])) }
        #expect(throws: BusError.self) { _ = try AIGatewayConfiguration(environment: Self.environment(["AI_FFMPEG_TIMEOUT_SECONDS": "0"])) }
        #expect(throws: BusError.self) { _ = try AIGatewayConfiguration(environment: Self.environment(["AI_GEMINI_RPM": "-1", "GEMINI_API_KEY": "k"])) }
    }

    @Test("the ai-gateway binary starts from its environment, answers over the bus, and stops cleanly on SIGTERM")
    func binary() async throws {
        try await withBroker(startBroker()) { broker, endpoints in
            let directory = FileManager.default.temporaryDirectory.appending(path: "ai-gateway-bin-\(UUID().uuidString)")
            let process = try ChildProcess(
                executable: builtProductsDirectory.appending(path: "ai-gateway").path,
                environment: ["BUS_RPC": endpoints.rpc, "BUS_PUB": endpoints.pub, "BUS_SUB": endpoints.sub, "DATA_DIR": directory.path, "LOG_LEVEL": "warning",
                              "BUS_HEARTBEAT_MS": String(testHeartbeatMs), "BUS_SECURITY": "off"])
            let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
            do {
                try await eventually("ai-gateway serving", timeout: Wait.startup) {
                    (try? await client.call(Reserved.health("ai-gateway"), Empty(), options: CallOptions(timeout: .milliseconds(300))))?.status == .serving
                }
                let summary = try await client.call(AIGateway.summarize, SummarizeRequest(text: Fixtures.photosynthesis, maxSentences: 1), options: CallOptions(user: "u1"))
                #expect(summary.sentences.count == 1)
                process.send(SIGTERM)
                #expect(await process.waitForExit() == 0)
                #expect(FileManager.default.fileExists(atPath: directory.appending(path: "ai-gateway.sqlite").path))
            } catch {
                process.send(SIGKILL)
                await process.waitForExit()
                throw error
            }
            await client.shutdown()
        }
    }
}
