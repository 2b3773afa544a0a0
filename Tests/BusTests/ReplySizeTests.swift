import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing

struct FillerRequest: Codable, Sendable {
    var bytes: Int
}

struct FillerReply: Codable, Sendable {
    var text: String
}

let filler = Method<FillerRequest, FillerReply>("filler", "fill", "Returns a text of the size asked for.")

@Suite("Messages larger than the broker accepts")
struct ReplySizeTests {
    @Test("a reply over BROKER_MAX_MESSAGE_BYTES is RESOURCE_EXHAUSTED naming the limit, and the service stays connected")
    func oversizedReply() async throws {
        let limit: Int64 = 100_000
        let (broker, endpoints) = try await startBroker(maxMessageBytes: limit)
        var serviceConfiguration = busConfiguration(endpoints, source: "filler")
        serviceConfiguration.maxMessageBytes = limit
        let serviceBus = try Bus(configuration: serviceConfiguration, logger: testLogger("filler"))
        let host = ServiceHost(bus: serviceBus, service: "filler", logger: testLogger("filler"))
        host.handle(filler) { request, _ in FillerReply(text: String(repeating: "x", count: request.bytes)) }
        let hostTask = Task { try await host.run() }
        let client = try Bus(configuration: busConfiguration(endpoints), logger: testLogger("client"))
        try await eventually("filler serves") { (try? await client.call(filler, FillerRequest(bytes: 1))) != nil }

        let error = await #expect(throws: BusError.self) { _ = try await client.call(filler, FillerRequest(bytes: 200_000)) }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.message.contains("(BROKER_MAX_MESSAGE_BYTES = 100000)") == true)
        #expect(error?.details?["bytes"]?.intValue == 200_011)  // {"text":"…"}
        // The same connection answers at once: the broker did not drop it.
        let small = try await client.call(filler, FillerRequest(bytes: 10), options: CallOptions(timeout: .seconds(2)))
        #expect(small.text.count == 10)

        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
    }

    @Test("a request or event over BROKER_MAX_MESSAGE_BYTES is refused before it is sent, and the connection stays up")
    func oversizedRequestAndEvent() async throws {
        let limit: Int64 = 100_000
        let (broker, endpoints) = try await startBroker(maxMessageBytes: limit)
        let serviceBus = try Bus(configuration: busConfiguration(endpoints, source: "filler"), logger: testLogger("filler"))
        let host = ServiceHost(bus: serviceBus, service: "filler", logger: testLogger("filler"))
        host.handle(filler) { request, _ in FillerReply(text: String(repeating: "x", count: request.bytes)) }
        let hostTask = Task { try await host.run() }
        var clientConfiguration = busConfiguration(endpoints)
        clientConfiguration.maxMessageBytes = limit
        let client = try Bus(configuration: clientConfiguration, logger: testLogger("client"))
        try await eventually("filler serves") { (try? await client.call(filler, FillerRequest(bytes: 1))) != nil }

        let tooLarge = Data(repeating: 0x61, count: Int(limit) + 1)
        let attachmentError = await #expect(throws: BusError.self) {
            _ = try await client.call(filler, FillerRequest(bytes: 1), options: CallOptions(attachment: tooLarge))
        }
        #expect(attachmentError?.code == .resourceExhausted)
        #expect(attachmentError?.message.hasPrefix("the request to filler/fill is 100001 bytes") == true)
        let payloadError = await #expect(throws: BusError.self) {
            _ = try await client.callRaw(service: "filler", method: "fill", payload: tooLarge)
        }
        #expect(payloadError?.details?["limit"]?.intValue == limit)
        let eventError = #expect(throws: BusError.self) { try client.publish(topic: "filler.big", payload: tooLarge) }
        #expect(eventError?.code == .resourceExhausted)
        // Nothing reached the broker: the connection answers at once.
        let small = try await client.call(filler, FillerRequest(bytes: 10), options: CallOptions(timeout: .seconds(2)))
        #expect(small.text.count == 10)

        hostTask.cancel()
        _ = try? await hostTask.value
        await client.shutdown()
        await serviceBus.shutdown()
        await broker.stop()
    }
}
