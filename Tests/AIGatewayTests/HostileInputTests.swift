@testable import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("ai-gateway with hostile callers and providers", .serialized)
struct HostileInputTests {
    @Test("Retry-After is read as a number of 0 or more or an HTTP date; anything else is ignored, huge values saturate")
    func retryAfterParsing() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func parse(_ headers: [String: String]) -> Duration? { ProviderHTTP.retryAfter(headers, now: now) }
        #expect(parse(["retry-after": "20"]) == .seconds(20))
        #expect(parse(["retry-after": " 1.5 "]) == .milliseconds(1500))
        #expect(parse(["retry-after-ms": "400", "retry-after": "9"]) == .milliseconds(400))
        for hostile in ["nan", "inf", "-5", "1e400", "0x10", "", "-"] {
            #expect(parse(["retry-after": hostile]) == nil, "\(hostile)")
            #expect(parse(["retry-after-ms": hostile]) == nil, "\(hostile)")
        }
        let huge = String(repeating: "9", count: 400)
        #expect(parse(["retry-after": huge]) == .seconds(WireLimits.maximumSeconds))
        #expect(parse(["retry-after-ms": "99999999999999999999999"]) == .seconds(WireLimits.maximumSeconds))
        #expect(parse(["retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"]) == .zero, "a date in the past is no wait")
        #expect(ProviderHTTP.parseProtobufDuration("\(huge)s") == .seconds(WireLimits.maximumSeconds))
        #expect(ProviderHTTP.parseProtobufDuration("nans") == nil)
        #expect(RetryPolicy(maxRetryAfter: .seconds(60)).delay(beforeRetry: 0, providerAsked: .seconds(WireLimits.maximumSeconds)) == .seconds(60))
    }

    @Test("a provider asking to wait 10^400 seconds, or until the year 99999, is retried after AI_RETRY_AFTER_MAX_MS, and the gateway answers",
          arguments: [String(repeating: "9", count: 400), "Fri, 31 Dec 99999 23:59:59 GMT"])
    func absurdRetryAfter(_ retryAfter: String) async throws {
        try await withMockGateway(routes: [.summarize: ["openai"]], configure: { $0.retry.maxRetryAfter = .milliseconds(300) }) { world, mock in
            try await mock.script("openai", [["status": .int(429), "headers": .object(["retry-after": .string(retryAfter)])], ["text": .string("Done.")]])
            let started = ContinuousClock.now
            let response = try await world.call(AIGateway.summarize, SummarizeRequest(text: ProviderTests.text))
            #expect(response.summary == "Done.")
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try await mock.requests().count == 2)
        }
    }

    @Test("absurd token counts and segment times from a provider are clamped or dropped, not trusted")
    func absurdProviderNumbers() {
        #expect(ProviderHTTP.tokenCount(.int(.max)) == Int(ProviderHTTP.maximumReportedTokens))
        #expect(ProviderHTTP.tokenCount(.int(-7)) == 0 && ProviderHTTP.tokenCount(.string("12")) == nil)
        let usage = OpenAIProvider.usage(.object(["prompt_tokens": .int(.max), "completion_tokens": .int(.max)]))
        #expect(usage?.totalTokens == 2 * Int(ProviderHTTP.maximumReportedTokens))
        #expect(ProviderHTTP.seconds(.double(1e308)) == nil && ProviderHTTP.seconds(.double(-1)) == nil && ProviderHTTP.seconds(.double(4.2)) == 4.2)
    }

    @Test("an upload's file name with quotes and line breaks, and a content type with a header in it, cannot add headers or parts")
    func multipartFileName() async throws {
        try await withMockGateway { world, mock in
            let audio = Data((0..<1024).map { UInt8($0 % 251) })
            let fileName = "a\".wav\"\r\ncontent-type: text/html\r\n\r\n<script>"
            let request = TranscribeRequest(fileName: fileName, contentType: "audio/wav\r\nx-injected: 1")
            _ = try await world.call(AIGateway.transcribe, request, attachment: audio)
            let form = try #require(try await mock.requests(containing: "/v1/audio/transcriptions").first?["form"])
            #expect(Set(form.objectValue?.keys.map { $0 } ?? []) == ["file", "model", "response_format", "timestamp_granularities[]"])
            let file = try #require(form["file"])
            #expect(file["filename"] == .string("a%22.wav%22%0D%0Acontent-type: text/html%0D%0A%0D%0A<script>"))
            #expect(file["bytes"] == .int(1024), "the part's body is exactly the audio")
            let head = file["head"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines).components(separatedBy: "\r\n") ?? []
            #expect(head.count == 2 && head.last == "content-type: audio/m4a", "\(head)")
        }
    }

    @Test("chat with a conversation: a deadline of Int64.max is INVALID_ARGUMENT; one at the end of year 9999 reaches the store downstream")
    func chatDeadlines() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                let conversation = try await store.conversation()
                let client = try await RawClient.connect(world.endpoints.rpc)
                let payload = #"{"messages":[{"role":"user","content":"What is a cell?"}],"conversationId":"\#(conversation.id)"}"#
                let hostile = try #require(try await client.call("ai-gateway", "chat", header: #"{"id":"c1","user":"u1","deadline":9223372036854775807}"#, payload: payload))
                #expect(hostile.header.code == .invalidArgument && hostile.header.message?.contains("'deadline'") == true)
                let far = try #require(try await client.call("ai-gateway", "chat", header: #"{"id":"c2","user":"u1","deadline":253402300799999}"#, payload: payload))
                #expect(far.header.code == .ok, "\(far.header)")
                #expect(try await store.messages(conversation.id).first?.text == "What is a cell?")
                #expect(try await world.client.call(Reserved.health("ai-gateway"), Empty()).status == .serving)
                await client.close()
            }
        }
    }
}
