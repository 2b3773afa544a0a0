import Bus
import Foundation
import TestSupport
import Testing

@Suite("Blocking client through a real broker")
struct BlockingClientTests {
    /// Runs `calls` with a blocking client of the echo service, on a thread of its own as a
    /// blocking caller would: blocking a thread of the cooperative pool could starve the
    /// in-process echo service the calls go to.
    private func withBlockingClient<T: Sendable>(_ calls: @escaping @Sendable (BlockingClient) throws -> T) async throws -> T {
        let world = try await EchoWorld.start()
        let configuration = busConfiguration(world.endpoints, source: "blocking")
        do {
            let result = try await onOwnThread { try calls(BlockingClient(configuration: configuration)) }
            await world.stop()
            return result
        } catch {
            await world.stop()
            throw error
        }
    }

    /// The BusError `body` throws, if any.
    private static func failure(_ body: () throws -> Void) -> BusError? {
        do { try body() } catch { return error as? BusError }
        return nil
    }

    @Test("a blocking call returns the typed response with the header fields and the attachment")
    func roundTrip() async throws {
        let reply = try await withBlockingClient { client in
            try client.call(Echo.echo, EchoRequest(text: "hi"), options: CallOptions(
                user: "u1", meta: ["traceparent": "00-abc-def-01"], idempotencyKey: "k1", attachment: Data(count: 1234)))
        }
        #expect(reply == EchoReply(text: "hi", user: "u1", attachmentBytes: 1234, idem: "k1", traceparent: "00-abc-def-01"))
    }

    @Test("service errors and broker refusals arrive as the same BusError as through Bus")
    func errors() async throws {
        let (notFound, unknownService, undecodable) = try await withBlockingClient { client in
            (Self.failure { _ = try client.call(Echo.fail, FailRequest(kind: .notFound)) },
             Self.failure { _ = try client.callRaw(service: "nobody", method: "x", payload: Data("{}".utf8)) },
             Self.failure { _ = try client.callRaw(service: "echo", method: "echo", payload: Data(#"{"text":5}"#.utf8)) })
        }
        #expect(notFound == BusError.notFound("material m1 not found"))
        #expect(unknownService?.code == .unavailable)
        #expect(undecodable == BusError.invalidArgument("field 'text' must be a string"))
    }

    @Test("a call past its deadline is DEADLINE_EXCEEDED, and its late reply is not taken for the next call's")
    func deadlineAndLateReply() async throws {
        let (timedOut, elapsed, next) = try await withBlockingClient { client in
            let started = ContinuousClock.now
            let timedOut = Self.failure {
                _ = try client.call(Echo.echo, EchoRequest(text: "late", delayMs: 300), options: CallOptions(timeout: .milliseconds(100)))
            }
            let elapsed = ContinuousClock.now - started
            // The late reply arrives while this call waits for its own.
            let next = try client.call(Echo.echo, EchoRequest(text: "next", delayMs: 400))
            return (timedOut, elapsed, next.text)
        }
        #expect(timedOut?.code == .deadlineExceeded)
        #expect(elapsed >= .milliseconds(100) && elapsed < .milliseconds(290))
        #expect(next == "next")
    }

    @Test("a closed client refuses calls at once with UNAVAILABLE")
    func closed() async throws {
        let error = try await withBlockingClient { client in
            _ = try client.call(Echo.echo, EchoRequest(text: "once"))
            client.close()
            return Self.failure { _ = try client.call(Echo.echo, EchoRequest(text: "again")) }
        }
        #expect(error?.code == .unavailable)
    }
}
