import Bus
import Foundation
import TestSupport
import Testing

/// Runs `body` on a thread of its own, as a blocking client's caller would: blocking a thread of
/// the cooperative pool could starve the in-process echo service the calls go to.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

@Suite("Blocking client through a real broker")
struct BlockingClientTests {
    @Test("a blocking call returns the typed response with the header fields and the attachment")
    func roundTrip() async throws {
        let world = try await EchoWorld.start()
        let configuration = busConfiguration(world.endpoints, source: "blocking")
        let reply = try await onOwnThread {
            let client = try BlockingClient(configuration: configuration)
            return try client.call(Echo.echo, EchoRequest(text: "hi"), options: CallOptions(
                user: "u1", meta: ["traceparent": "00-abc-def-01"], idempotencyKey: "k1", attachment: Data(count: 1234)))
        }
        #expect(reply == EchoReply(text: "hi", user: "u1", attachmentBytes: 1234, idem: "k1", traceparent: "00-abc-def-01"))
        await world.stop()
    }

    @Test("service errors and broker refusals arrive as the same BusError as through Bus")
    func errors() async throws {
        let world = try await EchoWorld.start()
        let configuration = busConfiguration(world.endpoints, source: "blocking")
        let (notFound, unknownService, undecodable) = try await onOwnThread {
            let client = try BlockingClient(configuration: configuration)
            func failure(_ body: () throws -> Void) -> BusError? {
                do { try body() } catch let error as BusError { return error } catch { return nil }
                return nil
            }
            return (failure { _ = try client.call(Echo.fail, FailRequest(kind: .notFound)) },
                    failure { _ = try client.callRaw(service: "nobody", method: "x", payload: Data("{}".utf8)) },
                    failure { _ = try client.callRaw(service: "echo", method: "echo", payload: Data(#"{"text":5}"#.utf8)) })
        }
        #expect(notFound == BusError.notFound("material m1 not found"))
        #expect(unknownService?.code == .unavailable)
        #expect(undecodable == BusError.invalidArgument("field 'text' must be a string"))
        await world.stop()
    }

    @Test("a call past its deadline is DEADLINE_EXCEEDED, and its late reply is not taken for the next call's")
    func deadlineAndLateReply() async throws {
        let world = try await EchoWorld.start()
        let configuration = busConfiguration(world.endpoints, source: "blocking")
        let (timedOut, elapsed, next) = try await onOwnThread {
            let client = try BlockingClient(configuration: configuration)
            let started = ContinuousClock.now
            var timedOut: BusError?
            do {
                _ = try client.call(Echo.echo, EchoRequest(text: "late", delayMs: 300), options: CallOptions(timeout: .milliseconds(100)))
            } catch let error as BusError {
                timedOut = error
            }
            let elapsed = ContinuousClock.now - started
            // The late reply arrives while this call waits for its own.
            let next = try client.call(Echo.echo, EchoRequest(text: "next", delayMs: 400))
            return (timedOut, elapsed, next.text)
        }
        #expect(timedOut?.code == .deadlineExceeded)
        #expect(elapsed >= .milliseconds(100) && elapsed < .milliseconds(290))
        #expect(next == "next")
        await world.stop()
    }

    @Test("a closed client refuses calls at once with UNAVAILABLE")
    func closed() async throws {
        let world = try await EchoWorld.start()
        let configuration = busConfiguration(world.endpoints, source: "blocking")
        let error = try await onOwnThread { () -> BusError? in
            let client = try BlockingClient(configuration: configuration)
            _ = try client.call(Echo.echo, EchoRequest(text: "once"))
            client.close()
            do { _ = try client.call(Echo.echo, EchoRequest(text: "again")) } catch let error as BusError { return error }
            return nil
        }
        #expect(error?.code == .unavailable)
        await world.stop()
    }
}
