import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

struct FillerRequest: Codable, Sendable {
    var bytes: Int
}

struct FillerReply: Codable, Sendable {
    var text: String
}

let filler = Method<FillerRequest, FillerReply>(service: "filler", "fill", "Returns a text of the size asked for.", audience: .app)

@Suite("Messages larger than the broker accepts")
struct ReplySizeTests {
    static let limit: Int64 = 100_000

    /// Runs `body` with a client of a `filler` service, behind a broker that accepts messages of
    /// at most ``limit`` bytes; `serviceKnowsLimit` and `clientKnowsLimit` give them that limit.
    private func withFiller(serviceKnowsLimit: Bool, clientKnowsLimit: Bool, _ body: (Bus) async throws -> Void) async throws {
        try await withBroker(startBroker(maxMessageBytes: Self.limit)) { broker, endpoints in
            var serviceConfiguration = busConfiguration(endpoints, source: "filler")
            if serviceKnowsLimit { serviceConfiguration.maxMessageBytes = Self.limit }
            let serviceBus = try Bus(configuration: serviceConfiguration, logger: testLogger("filler"))
            let host = ServiceHost(bus: serviceBus, service: "filler", logger: testLogger("filler"))
            host.handle(filler) { request, _ in FillerReply(text: String(repeating: "x", count: request.bytes)) }
            let hostTask = Task { try await host.run() }
            var clientConfiguration = busConfiguration(endpoints)
            if clientKnowsLimit { clientConfiguration.maxMessageBytes = Self.limit }
            let client = try Bus(configuration: clientConfiguration, logger: testLogger("client"))
            try await eventually("filler serves", timeout: Wait.startup) { (try? await client.call(filler, FillerRequest(bytes: 1))) != nil }
            do {
                try await body(client)
                // The same connection answers at once: the broker did not drop it.
                let small = try await client.call(filler, FillerRequest(bytes: 10), options: CallOptions(timeout: .seconds(2)))
                #expect(small.text.count == 10)
            } catch {
                Issue.record(error)
            }
            hostTask.cancel()
            _ = try? await hostTask.value
            await client.shutdown()
            await serviceBus.shutdown()
        }
    }

    @Test("a reply over BROKER_MAX_MESSAGE_BYTES is RESOURCE_EXHAUSTED naming the limit, and the service stays connected")
    func oversizedReply() async throws {
        try await withFiller(serviceKnowsLimit: true, clientKnowsLimit: false) { client in
            let error = await #expect(throws: BusError.self) { _ = try await client.call(filler, FillerRequest(bytes: 200_000)) }
            #expect(error?.code == .resourceExhausted)
            #expect(error?.message.contains("(BROKER_MAX_MESSAGE_BYTES = 100000)") == true)
            #expect(error?.details?["bytes"]?.intValue == 200_011)  // {"text":"…"}
        }
    }

    @Test("a request or event over BROKER_MAX_MESSAGE_BYTES is refused before it is sent, and the connection stays up")
    func oversizedRequestAndEvent() async throws {
        try await withFiller(serviceKnowsLimit: false, clientKnowsLimit: true) { client in
            let tooLarge = Data(repeating: 0x61, count: Int(Self.limit) + 1)
            let attachmentError = await #expect(throws: BusError.self) {
                _ = try await client.call(filler, FillerRequest(bytes: 1), options: CallOptions(attachment: tooLarge))
            }
            #expect(attachmentError?.code == .resourceExhausted)
            #expect(attachmentError?.message.hasPrefix("the request to filler/fill is 100001 bytes") == true)
            let payloadError = await #expect(throws: BusError.self) {
                _ = try await client.callRaw(service: "filler", method: "fill", payload: tooLarge)
            }
            #expect(payloadError?.details?["limit"]?.intValue == Self.limit)
            let eventError = #expect(throws: BusError.self) { try client.publish(topic: "filler.big", payload: tooLarge) }
            #expect(eventError?.code == .resourceExhausted)
        }
    }
}
