import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// The edge's plain HTTP/1.1 connections: Hummingbird's `HTTP1Channel` pipeline with the
/// ``EventStreamHandler`` in it, and Hummingbird's part of it (the async channel and the
/// connection's handling) added only once the first request is not an event stream. A
/// connection that opens with `GET /v1/events` is then answered by the handler alone, and the
/// connection's task ends at once instead of waiting as long as the stream lasts.
struct EdgeHTTP1Channel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let firstRequest: EventLoopFuture<EventStreamHandler.FirstRequest>
    }

    let http1: HTTP1Channel
    let streams: EventStreams

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let decoder = http1.configuration.httpDecoder
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = decoder.maxHeaderFieldSize
            limits.maxHeaderListSize = decoder.maxHeaderListSize
            limits.maxHeaderFieldCount = decoder.maxHeaderFieldCount
            let operations = channel.pipeline.syncOperations
            // As HTTP1Channel.setup configures it, but for the async channel (see handle).
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            let firstRequest = channel.eventLoop.makePromise(of: EventStreamHandler.FirstRequest.self)
            try operations.addHandler(EventStreamHandler(streams: streams, firstRequest: firstRequest))
            try operations.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.configuration.idleTimeout.map { .init($0) }, logger: logger))
            return Value(channel: channel, firstRequest: firstRequest.futureResult)
        }
    }

    func handle(value: Value, logger: Logger) async {
        let first = try? await value.firstRequest.get()
        guard first == .other else { return }
        let channel = value.channel
        let wrapped = try? await channel.eventLoop.submit {
            let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            try channel.pipeline.syncOperations.handler(type: EventStreamHandler.self).releaseHeld()
            return asyncChannel
        }.get()
        guard let wrapped else {
            channel.close(promise: nil)
            return
        }
        await http1.handleHTTP(asyncChannel: wrapped, logger: logger)
    }
}

/// Runs each connection's handling — the responder, its bus calls' continuations, its writes —
/// on the event loop that owns the connection's channel instead of the cooperative pool. A
/// request then reaches its responder, and its response the socket, without waking another
/// thread: only the bus's reply crosses threads (docs/benchmarks.md, "The HTTP edge"). What
/// the responder does between awaits is bounded: bodies and files by their limits, JSON by
/// the edge's.
struct EventLoopPinnedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
            await inner.handle(value: value, logger: logger)
        }
    }
}

/// An event loop as a `TaskExecutor`: a job enqueued on the loop's own thread runs there after
/// the current one without a wake-up; from another thread it wakes the loop.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
