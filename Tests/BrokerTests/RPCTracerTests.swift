@testable import BrokerCore
import Bus
import Foundation
import Testing
import Wire

@Suite("When the broker traces calls")
struct RPCTracerTests {
    func message(_ kind: UInt8, _ prefix: String) -> Data { Data([kind]) + Data(prefix.utf8) }

    @Test("tracing is on while a non-empty prefix of bus.rpc is subscribed, and only then")
    func gating() {
        var tracer = RPCTracer(instance: "test")
        tracer.apply(subscriptionMessage: message(1, ""))
        #expect(!tracer.isEnabled, "subscribing to everything must not switch tracing on")
        tracer.apply(subscriptionMessage: message(1, "timer."))
        #expect(!tracer.isEnabled)
        tracer.apply(subscriptionMessage: message(1, "bus."))
        tracer.apply(subscriptionMessage: message(1, "bus.rpc"))
        #expect(tracer.isEnabled)
        tracer.apply(subscriptionMessage: message(0, "bus."))
        #expect(tracer.isEnabled)
        tracer.apply(subscriptionMessage: message(0, "bus.rpc"))
        #expect(!tracer.isEnabled)
    }

    @Test("trace events count seq from 1 on the broker's stream")
    func sequence() throws {
        var tracer = RPCTracer(instance: "test")
        let trace = RPCTrace(service: "s", method: "m", id: "1", code: 0, latencyUs: 5, requestBytes: 1, replyBytes: 1, user: nil, fromBroker: false)
        let first = try EventHeader.decode(tracer.event(trace)[1])
        let second = try EventHeader.decode(tracer.event(trace)[1])
        #expect((first.seq, second.seq) == (1, 2))
        #expect(first.source == "broker" && first.instance == "test")
    }
}
