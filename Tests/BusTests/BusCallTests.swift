import BrokerCore
import Bus
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Calls through a real broker")
struct BusCallTests {
    @Test("a call returns the handler's typed response, with user, idempotency key and trace context")
    func roundTrip() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let reply = try await world.client.call(
                Echo.echo, EchoRequest(text: "hello"),
                options: CallOptions(user: "u1", meta: ["traceparent": "00-abc-def-01"], idempotencyKey: "k1"))
            #expect(reply == EchoReply(text: "hello", user: "u1", attachmentBytes: nil, idem: "k1", traceparent: "00-abc-def-01"))
        }
    }

    @Test("an attachment travels as its own frame, byte for byte")
    func attachment() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let reply = try await world.client.call(Echo.echo, EchoRequest(text: "file"), options: CallOptions(attachment: bytes))
            #expect(reply.attachmentBytes == bytes.count)
        }
    }

    @Test("many calls in flight on one connection each get their own reply")
    func manyInFlight() async throws {
        try await withWorld(EchoWorld.start(credit: 64)) { world in
            let client = world.client
            let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<500 {
                    group.addTask {
                        let reply = try await client.call(Echo.echo, EchoRequest(text: "n\(index)", delayMs: index % 7))
                        return (index, reply.text)
                    }
                }
                var collected: [Int: String] = [:]
                for try await (index, text) in group { collected[index] = text }
                return collected
            }
            #expect(replies.count == 500)
            #expect(replies.allSatisfy { $0.value == "n\($0.key)" })
            #expect(world.gauge.maximum > 1, "handlers should have run concurrently")
        }
    }

    @Test("a host runs at most its credit of handlers at once")
    func creditBoundsConcurrency() async throws {
        try await withWorld(EchoWorld.start(credit: 4)) { world in
            let client = world.client
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<24 {
                    group.addTask { _ = try await client.call(Echo.echo, EchoRequest(text: "\(index)", delayMs: 30)) }
                }
                try await group.waitForAll()
            }
            #expect(world.gauge.maximum == 4)
            #expect(world.gauge.total == 24)
        }
    }

    @Test("an unknown method is UNIMPLEMENTED")
    func unknownMethod() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let error = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "echo", method: "nope", payload: Data("{}".utf8))
            }
            #expect(error?.code == .unimplemented)
            #expect(error?.message.contains("nope") == true)
        }
    }

    @Test("a payload that does not decode is INVALID_ARGUMENT naming the field")
    func undecodablePayload() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let wrongType = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "echo", method: "echo", payload: Data(#"{"text": 5}"#.utf8))
            }
            #expect(wrongType?.code == .invalidArgument)
            #expect(wrongType?.message == "field 'text' must be a string")
            let missing = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "echo", method: "echo", payload: Data(#"{}"#.utf8))
            }
            #expect(missing?.message == "missing field 'text'")
            let badEnum = await #expect(throws: BusError.self) {
                _ = try await world.client.callRaw(service: "echo", method: "fail", payload: Data(#"{"kind":"weird"}"#.utf8))
            }
            #expect(badEnum?.code == .invalidArgument)
            #expect(badEnum?.message.contains("kind") == true)
        }
    }

    @Test("thrown errors become status codes; unknown errors are INTERNAL without details")
    func errorMapping() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let notFound = await #expect(throws: BusError.self) { _ = try await world.client.call(Echo.fail, FailRequest(kind: .notFound)) }
            #expect(notFound == BusError.notFound("material m1 not found"))
            let converted = await #expect(throws: BusError.self) { _ = try await world.client.call(Echo.fail, FailRequest(kind: .convertible)) }
            #expect(converted?.code == .failedPrecondition)
            let opaque = await #expect(throws: BusError.self) { _ = try await world.client.call(Echo.fail, FailRequest(kind: .opaque)) }
            #expect(opaque?.code == .internal)
            #expect(opaque?.message.contains("OpaqueError") == false)
        }
    }

    @Test("a handler on the I/O thread runs there, answers with the request's context and maps its errors like any other")
    func ioThreadHandler() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let client = world.client
            let reply = try await client.call(Echo.upper, EchoRequest(text: "abc"), options: CallOptions(user: "u1"))
            #expect(reply == EchoReply(text: "ABC", user: "u1", thread: "studybus-io"))
            let empty = await #expect(throws: BusError.self) { _ = try await client.call(Echo.upper, EchoRequest(text: "")) }
            #expect(empty == BusError.invalidArgument("field 'text' must not be empty"))
            let undecodable = await #expect(throws: BusError.self) {
                _ = try await client.callRaw(service: "echo", method: "upper", payload: Data(#"{"text":[]}"#.utf8))
            }
            #expect(undecodable?.code == .invalidArgument)
            #expect(undecodable?.message.contains("text") == true)
        }
    }

    @Test("_health and _describe are answered by the host, from the contract's declarations")
    func reservedMethods() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let health = try await world.client.call(Reserved.health("echo"), Empty())
            #expect(health.status == .serving)
            #expect(health.build == BuildInfo.stamp)
            let description = try await world.client.call(Reserved.describe("echo"), Empty())
            #expect(description.build == BuildInfo.stamp)
            #expect(description.methods.map(\.name) == ["echo", "fail", "upper", "_describe", "_health"])
            let echo = try #require(description.methods.first)
            #expect(echo.request == .object(["text": .string("string"), "delayMs?": .string("integer")]))
            #expect(description.methods[1].request == .object(["kind": .string("notFound|convertible|opaque|slow")]))
            #expect(description.events.map(\.topic) == ["echo.echoed", "echo.probe"])
        }
    }

    @Test("the deadline is enforced locally even when nothing answers")
    func localDeadline() async throws {
        // Nothing listens on this endpoint: no broker, no reply, ever.
        var configuration = BusConfiguration(source: "client")
        configuration.rpcEndpoint = "tcp://127.0.0.1:1"
        let bus = try Bus(configuration: configuration, logger: testLogger("client"))
        let started = ContinuousClock.now
        let error = await #expect(throws: BusError.self) {
            _ = try await bus.call(Echo.echo, EchoRequest(text: "x"), options: CallOptions(timeout: .milliseconds(300)))
        }
        let elapsed = ContinuousClock.now - started
        #expect(error?.code == .deadlineExceeded)
        // Generous upper bound: the point is that the call ends on its own, even on a loaded machine.
        #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(20))
        await bus.shutdown()
    }

    @Test("a call's deadline holds while thousands of other calls come and go on the connection")
    func deadlineAmongManyCalls() async throws {
        try await withWorld(EchoWorld.start(credit: 64)) { world in
            let client = world.client
            let started = ContinuousClock.now
            // The client keeps the deadlines of settled calls until it rebuilds its deadline heap from
            // the calls still pending: the slow call must survive those rebuilds.
            let slow = Task { () -> (BusError?, Duration) in
                do throws(BusError) {
                    _ = try await client.call(Echo.echo, EchoRequest(text: "slow", delayMs: 12_000), options: CallOptions(timeout: .seconds(6)))
                    return (nil, ContinuousClock.now - started)
                } catch {
                    return (error, ContinuousClock.now - started)
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<32 {
                    group.addTask { for index in 0..<100 { _ = try await client.call(Echo.echo, EchoRequest(text: "\(lane).\(index)")) } }
                }
                try await group.waitForAll()
            }
            let (error, elapsed) = await slow.value
            #expect(error?.code == .deadlineExceeded)
            #expect(elapsed >= .seconds(6) && elapsed < .seconds(9))
        }
    }

    @Test("a slow handler past the deadline gives DEADLINE_EXCEEDED to the caller")
    func slowHandler() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let error = await #expect(throws: BusError.self) {
                _ = try await world.client.call(Echo.echo, EchoRequest(text: "x", delayMs: 2000), options: CallOptions(timeout: .milliseconds(200)))
            }
            #expect(error?.code == .deadlineExceeded)
        }
    }

    @Test("cancelling the calling task ends the call with CANCELLED at once")
    func cancellation() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let client = world.client
            let call = Task { try await client.call(Echo.fail, FailRequest(kind: .slow)) }
            try await Task.sleep(for: .milliseconds(100))
            let started = ContinuousClock.now
            call.cancel()
            let result = await call.result
            // The handler sleeps 30 s and the default deadline is 30 s: a call that waited for
            // either would take that long. The margin is for a machine busy with the other suites.
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(throws: BusError.cancelled("the call to echo/fail was cancelled")) { try result.get() }
        }
    }

    @Test("calls after shutdown fail at once with UNAVAILABLE")
    func afterShutdown() async throws {
        try await withWorld(EchoWorld.start()) { world in
            await world.client.shutdown()
            let started = ContinuousClock.now
            let error = await #expect(throws: BusError.self) { _ = try await world.client.call(Echo.echo, EchoRequest(text: "x")) }
            #expect(error?.code == .unavailable)
            #expect(ContinuousClock.now - started < .milliseconds(100))
            #expect(throws: BusError.self) { try world.client.publish(Echo.echoed, EchoReply(text: "x")) }
            #expect(throws: BusError.self) { try world.client.publish(Echo.echoed, EchoReply(text: "again")) }
        }
    }

    @Test("a call in flight when the bus shuts down fails with UNAVAILABLE")
    func inFlightAtShutdown() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let client = world.client
            let call = Task { try await client.call(Echo.fail, FailRequest(kind: .slow)) }
            try await Task.sleep(for: .milliseconds(100))
            await client.shutdown()
            let error = await #expect(throws: BusError.self) { try await call.value }
            #expect(error?.code == .unavailable)
        }
    }
}
