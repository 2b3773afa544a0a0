import Bus
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Blocking client through a real broker")
struct BlockingClientTests {
    /// Runs `calls` with a blocking client of the echo service, on a thread of its own as a
    /// blocking caller would: blocking a thread of the cooperative pool could starve the
    /// in-process echo service the calls go to.
    private func withEchoClient<T: Sendable>(_ calls: @escaping @Sendable (BlockingClient) throws -> T) async throws -> T {
        var result: T?
        try await withWorld(EchoWorld.start()) { world in
            let configuration = busConfiguration(world.endpoints, source: "blocking")
            result = try await onOwnThread { try withBlockingClient(configuration: configuration, calls) }
        }
        return try #require(result)
    }

    /// The BusError `body` throws, if any.
    private static func failure(_ body: () throws -> Void) -> BusError? {
        do { try body() } catch { return error as? BusError }
        return nil
    }

    @Test("a blocking call returns the typed response with the header fields and the attachment")
    func roundTrip() async throws {
        let reply = try await withEchoClient { client in
            try client.call(Echo.echo, EchoRequest(text: "hi"), options: CallOptions(
                user: "u1", meta: ["traceparent": "00-abc-def-01"], idempotencyKey: "k1", attachment: Data(count: 1234)))
        }
        #expect(reply == EchoReply(text: "hi", user: "u1", attachmentBytes: 1234, idem: "k1", traceparent: "00-abc-def-01"))
    }

    @Test("service errors and broker refusals arrive as the same BusError as through Bus")
    func errors() async throws {
        let (notFound, unknownService, undecodable) = try await withEchoClient { client in
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
        let (timedOut, elapsed, next) = try await withEchoClient { client in
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

    @Test("callEach keeps many calls in flight on the connection and hands each outcome over with its request's position")
    func callEachPipelines() async throws {
        try await withWorld(EchoWorld.start(credit: 16)) { world in
            let configuration = busConfiguration(world.endpoints, source: "pipelined")
            let outcomes = try await onOwnThread {
                try withBlockingClient(configuration: configuration) { client in
                    var outcomes: [(Int, Result<EchoReply, BusError>)] = []
                    // Handlers of different lengths, so that replies come back out of request order.
                    let requests = (0..<300).lazy.map { EchoRequest(text: "n\($0)", delayMs: $0 % 5) }
                    try client.callEach(Echo.echo, requests, inFlight: 32, options: CallOptions(user: "u1")) { outcomes.append(($0, $1)) }
                    return outcomes.map { index, outcome in (index, (try? outcome.get()).map { "\($0.text)/\($0.user ?? "-")" }) }
                }
            }
            #expect(outcomes.count == 300)
            #expect(outcomes.map(\.0).sorted() == Array(0..<300))
            #expect(outcomes.allSatisfy { $0.1 == "n\($0.0)/u1" })
            #expect(outcomes.map(\.0) != Array(0..<300), "replies should arrive in the order the handlers finish")
            #expect(world.gauge.maximum > 1, "the service should have had several of the calls at once")
        }
    }

    @Test("callEach gives each call its own error and deadline, and goes on with the rest")
    func callEachFailures() async throws {
        let (refused, timed, elapsed, next) = try await withEchoClient { client in
            // upper refuses an empty text with INVALID_ARGUMENT.
            var refused: [Int: BusError?] = [:]
            try client.callEach(Echo.upper, [EchoRequest(text: "a"), EchoRequest(text: ""), EchoRequest(text: "b")]) { index, outcome in
                refused[index] = outcome.failure
            }
            // The second call outlives its deadline; the others do not.
            var timed: [Int: BusError?] = [:]
            let started = ContinuousClock.now
            let requests = [EchoRequest(text: "a"), EchoRequest(text: "slow", delayMs: 6000), EchoRequest(text: "b")]
            try client.callEach(Echo.echo, requests, options: CallOptions(timeout: .milliseconds(1500))) { index, outcome in
                timed[index] = outcome.failure
            }
            let elapsed = ContinuousClock.now - started
            // The slow call's reply arrives late, while the next call waits for its own.
            let next = try client.call(Echo.echo, EchoRequest(text: "next", delayMs: 5000))
            return (refused, timed, elapsed, next.text)
        }
        #expect(refused.count == 3 && refused[0] == .some(nil) && refused[2] == .some(nil))
        #expect(refused[1]??.code == .invalidArgument)
        #expect(timed.count == 3 && timed[0] == .some(nil) && timed[2] == .some(nil))
        #expect(timed[1]??.code == .deadlineExceeded)
        #expect(elapsed >= .milliseconds(1500) && elapsed < .milliseconds(5000), "the deadline is enforced locally, without waiting for the late reply")
        #expect(next == "next")
    }

    @Test("a closed client refuses calls and pipelined calls at once with UNAVAILABLE")
    func closed() async throws {
        let error = try await withEchoClient { client in
            _ = try client.call(Echo.echo, EchoRequest(text: "once"))
            client.close()
            return (Self.failure { _ = try client.call(Echo.echo, EchoRequest(text: "again")) },
                    Self.failure { try client.callEach(Echo.echo, [EchoRequest(text: "again")]) { _, _ in } })
        }
        #expect(error.0?.code == .unavailable)
        #expect(error.1?.code == .unavailable)
    }
}

private extension Result {
    /// The error, if this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
