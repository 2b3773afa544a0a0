import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

// Numbers and user ids from outside, decoded where they arrive: every value here once stopped a
// process (a Swift trap) or was stored as sent. docs/wire-protocol.md, additions 1 and 2.

@Suite("Outside numbers are range-checked where they are decoded")
struct WireRangeTests {
    @Test("a request header's deadline outside 0…9999-12-31 is INVALID_ARGUMENT naming the field; the ends of the range decode")
    func deadlineRange() throws {
        for deadline in ["9223372036854775807", "-1", "253402300800000", "-9223372036854775808", "1e300"] {
            do {
                _ = try RequestHeader.decode(Data(#"{"id":"r","deadline":\#(deadline)}"#.utf8))
                Issue.record("deadline \(deadline) was accepted")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("'deadline'"), "\(deadline): \(error)")
            }
        }
        #expect(try RequestHeader.decode(Data(#"{"id":"r","deadline":0}"#.utf8)).deadline == 0)
        #expect(try RequestHeader.decode(Data(#"{"id":"r","deadline":253402300799999}"#.utf8)).deadline == WireLimits.latestUnixMilliseconds)
    }

    @Test("an event header's seq must be 1…2^53−1 and its ts within the date range, in both decoders")
    func eventHeaderRanges() throws {
        func header(seq: String = "1", ts: String = "0") -> Data {
            Data(#"{"id":"e","source":"s","instance":"i","seq":\#(seq),"ts":\#(ts)}"#.utf8)
        }
        for (seq, ts, field) in [("9223372036854775807", "0", "seq"), ("0", "0", "seq"), ("-5", "0", "seq"), ("9007199254740992", "0", "seq"),
                                 ("1", "-9223372036854775808", "ts"), ("1", "253402300800000", "ts")] {
            do {
                _ = try EventHeader.decode(header(seq: seq, ts: ts))
                Issue.record("seq \(seq) ts \(ts) was accepted")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("'\(field)'"), "seq \(seq) ts \(ts): \(error)")
            }
            #expect(throws: DecodingError.self) { _ = try WireCoding.decode(EventHeader.self, from: header(seq: seq, ts: ts)) }
        }
        let top = try EventHeader.decode(header(seq: "9007199254740991", ts: "253402300799999"))
        #expect(top.seq == WireLimits.maximumSeq && top.ts == WireLimits.latestUnixMilliseconds)
    }

    @Test("the seq tracker cannot overflow, even on headers built in code")
    func seqTrackerAtTheTop() {
        var tracker = SeqTracker()
        func header(_ seq: Int64) -> EventHeader { EventHeader(id: "x", source: "s", instance: "i", seq: seq, ts: 0) }
        #expect(tracker.observe(header(.max)) == nil)
        #expect(tracker.observe(header(1)) == nil)
        #expect(tracker.observe(header(.min)) == nil)
        #expect(tracker.observe(header(.max))?.expected == .min + 1)
    }

    @Test("dates: parsing refuses what lies outside years 0001–9999 in UTC; writing clamps to it; conversions saturate")
    func dates() {
        #expect(ISO8601.parse("0000-12-31T23:59:59.999Z") == nil)
        #expect(ISO8601.parse("0001-01-01T00:30:00+01:00") == nil, "an offset that moves it before year 1")
        #expect(ISO8601.parse("9999-12-31T23:30:00-01:00") == nil, "an offset that moves it past year 9999")
        #expect(ISO8601.parse("0001-01-01T00:00:00.000Z")?.unixMilliseconds == WireLimits.earliestUnixMilliseconds)
        #expect(ISO8601.parse("9999-12-31T23:59:59.999Z")?.unixMilliseconds == WireLimits.latestUnixMilliseconds)
        #expect(ISO8601.format(unixMilliseconds: .min) == "0001-01-01T00:00:00.000Z")
        #expect(ISO8601.format(unixMilliseconds: .max) == "9999-12-31T23:59:59.999Z")
        #expect(Date(timeIntervalSince1970: 1e300).unixMilliseconds == .max)
        #expect(Date(timeIntervalSince1970: -1e300).unixMilliseconds == .min)
        #expect(Date(timeIntervalSince1970: .nan).unixMilliseconds == 0)
        // Encoding a date made from an absurd duration writes the last date instead of trapping.
        let far = Date(timeIntervalSince1970: 0).addingTimeInterval(1e17)
        #expect(String(decoding: (try? WireCoding.encode(["at": far])) ?? Data(), as: UTF8.self) == #"{"at":"9999-12-31T23:59:59.999Z"}"#)
        #expect(throws: DecodingError.self) { _ = try WireCoding.decode([String: Date].self, from: Data(#"{"at":"0000-06-01T00:00:00Z"}"#.utf8)) }
    }

    @Test("saturating conversions and durations")
    func conversions() {
        #expect(Int64(saturating: 1e300) == .max && Int64(saturating: -1e300) == .min && Int64(saturating: Double.nan) == 0)
        #expect(Int64(saturating: -2.9) == -2 && Int32(saturating: 1e10) == .max && UInt8(saturating: -1.0) == 0)
        #expect(Duration.seconds(saturating: .infinity) == .seconds(WireLimits.maximumSeconds))
        #expect(Duration.seconds(saturating: .nan) == .zero && Duration.milliseconds(saturating: 1500) == .milliseconds(1500))
        #expect(Duration.seconds(Int64.max).wholeMicroseconds == .max && Duration.seconds(Int64.min).wholeMicroseconds == .min)
        #expect(Duration.milliseconds(1234).wholeMicroseconds == 1_234_000)
        #expect(throws: BusError.self) { try Field.seconds(1e17, "olderThanSeconds") }
    }

    @Test("a user id is 1–128 bytes of ASCII letters, digits and . _ - @ : +")
    func userIDs() throws {
        for user in ["u1", "alice@example.com", "auth0:5f7c8e", "a.b_c-d+e", String(repeating: "x", count: 128), "001234.abcdef.1234"] {
            try RequestHeader.checkUser(user)
        }
        for user in ["", String(repeating: "x", count: 129), "a b", "nul\u{0}byte", "\u{1B}[2J", "ünïcode", "a/b", "quote\"", "tab\t", "a\u{202E}b"] {
            #expect(throws: BusError.self, "\(user.debugDescription)") { try RequestHeader.checkUser(user) }
        }
    }
}

@Suite("Hostile headers through real sockets: the process stays up and answers INVALID_ARGUMENT")
struct HostileHeaderTests {
    @Test("a worker handed an out-of-range deadline or a bad user answers code 3, and serves the next request")
    func workerRefusesHostileHeaders() async throws {
        let broker = try await RawBroker.bind()
        var configuration = BusConfiguration(source: "echo")
        configuration.rpcEndpoint = await broker.endpoint
        configuration.heartbeatInterval = .seconds(1)
        let bus = try Bus(configuration: configuration, logger: testLogger("echo"))
        let host = ServiceHost(bus: bus, contract: Echo, logger: testLogger("echo"))
        registerEcho(on: host)
        let hostTask = Task { try await host.run() }
        #expect(try await broker.waitForWorker() == "echo")

        let payload = #"{"text":"hi"}"#
        for deadline in ["9223372036854775807", "-1"] {
            let reply = try await broker.request("echo", header: #"{"id":"d","deadline":\#(deadline)}"#, payload: payload)
            #expect(reply?.code == .invalidArgument && reply?.message?.contains("'deadline'") == true, "deadline \(deadline): \(String(describing: reply))")
        }
        let megabyte = String(repeating: "u", count: 1 << 20)
        for user in [megabyte, "nul\\u0000byte", "\\u001b]0;owned\\u0007", "\\u001b[2J", ""] {
            let reply = try await broker.request("echo", header: #"{"id":"u","user":"\#(user)"}"#, payload: payload)
            #expect(reply?.id == "u" && reply?.code == .invalidArgument && reply?.details == .object(["field": .string("user")]),
                    "user \(user.prefix(20)): \(String(describing: reply))")
            #expect(reply?.message.map { !$0.contains("\u{1B}") && $0.utf8.count < 200 } == true, "the message does not echo the value")
        }
        let far = try await broker.request("echo", header: #"{"id":"ok","deadline":253402300799999,"user":"alice@example.com"}"#, payload: payload)
        #expect(far?.id == "ok" && far?.code == .ok, "the far end of the deadline's range is served")

        hostTask.cancel()
        _ = try? await hostTask.value
        await bus.shutdown()
        await broker.close()
    }

    @Test("through the real broker: an out-of-range deadline is refused by the broker, a bad user by the service")
    func throughTheBroker() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let client = try await RawClient.connect(world.endpoints.rpc)
            let deadline = try #require(try await client.call("echo", "echo", header: #"{"id":"a","deadline":9223372036854775807}"#, payload: #"{"text":"x"}"#))
            #expect(deadline.header.code == .invalidArgument && deadline.header.message?.contains("'deadline'") == true)
            let user = try #require(try await client.call("echo", "echo", header: #"{"id":"b","user":"\u001b[31mred"}"#, payload: #"{"text":"x"}"#))
            #expect(user.header.id == "b" && user.header.code == .invalidArgument && user.header.message?.contains("'user'") == true)
            // The typed client gets the same, and the service is still there.
            await #expect(throws: BusError.self) {
                _ = try await world.client.call(Echo.echo, EchoRequest(text: "x"), options: CallOptions(user: "two words"))
            }
            #expect(try await world.client.call(Echo.echo, EchoRequest(text: "still up"), options: CallOptions(user: "u1")).text == "still up")
            await client.close()
        }
    }
}

@Suite("Hostile event headers are dropped and counted")
struct HostileEventTests {
    @Test("events with seq 2^63−1 then 1, or ts Int64.min, are dropped and counted; the subscriber goes on")
    func droppedAndCounted() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let subscription = try world.client.subscribe(["hostile."])
            let collector = EventCollector(subscription)
            func publish(_ id: String, seq: Int64, ts: Int64) throws {
                try world.serviceBus.publish(topic: "hostile.event", header: EventHeader(id: id, source: "evil", instance: "i", seq: seq, ts: ts),
                                             payload: Data("{}".utf8))
            }
            // Until the subscription is live, keep sending the sequence; each round ends in a valid event.
            var round = 0
            try await eventually("a valid event after the hostile ones") {
                round += 1
                try publish("max-\(round)", seq: .max, ts: 0)
                try publish("one-\(round)", seq: 1, ts: 0)
                try publish("old-\(round)", seq: 2, ts: .min)
                try publish("ok-\(round)", seq: 3, ts: Date().unixMilliseconds)
                try await Task.sleep(for: .milliseconds(50))
                return collector.all.contains { $0.header.id.hasPrefix("ok-") }
            }
            let delivered = collector.all.map(\.header.id)
            #expect(!delivered.contains { $0.hasPrefix("max-") || $0.hasPrefix("old-") }, "\(delivered)")
            #expect(subscription.invalidEventsDropped >= 2)
            #expect(try await world.client.call(Echo.echo, EchoRequest(text: "up")).text == "up")
            collector.cancel()
        }
    }
}
