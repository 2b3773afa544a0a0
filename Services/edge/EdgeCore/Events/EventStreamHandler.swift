import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// Takes `GET /v1/events` out of the HTTP pipeline and answers it itself: the admission, then
/// the stream (``EventStream``), written straight to the connection. Every other request
/// passes to Hummingbird. It sits after the HTTP codec, before Hummingbird's handlers, on
/// every HTTP/1.1 connection and HTTP/2 stream.
///
/// Why not a Hummingbird route: a route's response is written by the connection's task, which
/// keeps the memory of its deepest call for as long as the stream is open (a Swift task frees
/// its stack's slabs only when it ends). Here an idle stream holds no task at all, which is what
/// makes 10,000 of them fit the edge's memory target (docs/benchmarks.md, "The HTTP edge").
final class EventStreamHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What a connection's first request turned out to be, for ``EdgeHTTP1Channel``: whether
    /// Hummingbird has to handle the connection at all.
    enum FirstRequest: Sendable {
        case eventStream, other, closed
    }

    private enum State {
        /// Until ``releaseHeld()``: Hummingbird's handlers are not in the pipeline yet, so what
        /// comes is held; `firstRequest` is told what the first request is.
        case holding([HTTPRequestPart], firstRequest: EventLoopPromise<FirstRequest>?)
        /// Requests go to Hummingbird; `outstanding` of them have no response end yet.
        case passing(outstanding: Int)
        /// An event stream's request, waiting for the answers to the requests before it.
        case queued(HTTPRequest, outstanding: Int)
        /// This handler answers the connection from now on (`stream` once admitted); anything
        /// more the client sends is dropped.
        case answering(EventStream?)
    }

    private let streams: EventStreams
    private var state: State
    private var context: ChannelHandlerContext?
    /// The client closed its side while requests were held: told to Hummingbird after them.
    private var heldInputClosed = false

    /// For a pipeline where Hummingbird's handlers come after this one already.
    init(streams: EventStreams) {
        self.streams = streams
        state = .passing(outstanding: 0)
    }

    /// For ``EdgeHTTP1Channel``, which adds Hummingbird's handlers only if `firstRequest` says
    /// so, and then calls ``releaseHeld()``.
    init(streams: EventStreams, firstRequest: EventLoopPromise<FirstRequest>) {
        self.streams = streams
        state = .holding([], firstRequest: firstRequest)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Requests in

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .holding(var held, let firstRequest):
            if held.isEmpty, case .head(let head) = part, EventStreams.isEventStream(head) {
                firstRequest?.succeed(.eventStream)
                return answer(head)
            }
            held.append(part)
            firstRequest?.succeed(.other)
            state = .holding(held, firstRequest: nil)
        case .passing(let outstanding):
            guard case .head(let head) = part else { return context.fireChannelRead(data) }
            guard !EventStreams.isEventStream(head) else {
                return outstanding == 0 ? answer(head) : (state = .queued(head, outstanding: outstanding))
            }
            state = .passing(outstanding: outstanding + 1)
            context.fireChannelRead(data)
        case .queued, .answering:
            break
        }
    }

    /// Hands what was held to Hummingbird's handlers, now in the pipeline; on the event loop.
    func releaseHeld() {
        guard case .holding(let held, _) = state, let context else { return }
        state = .passing(outstanding: 0)
        for part in held { channelRead(context: context, data: wrapInboundOut(part)) }
        // The async channel's handler hands reads on at a read's completion, not before.
        context.fireChannelReadComplete()
        if heldInputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .holding(_, let firstRequest): firstRequest?.succeed(.closed)
        case .answering(let stream?): stream.close()
        default: break
        }
        context.fireChannelInactive()
    }

    /// The client closed its side (the child channels allow half-closure). Before the first
    /// request, or during a stream, nothing more can come that this handler would answer: the
    /// connection closes. Otherwise Hummingbird's handlers finish what they answer and close it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else { return context.fireUserInboundEventTriggered(event) }
        switch state {
        case .holding(let held, let firstRequest) where held.isEmpty:
            firstRequest?.succeed(.closed)
            context.close(promise: nil)
        case .holding:
            heldInputClosed = true
        case .answering:
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .answering(let stream?) = state, context.channel.isWritable { stream.writable() }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Answers out

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            switch state {
            case .passing(let outstanding):
                state = .passing(outstanding: max(0, outstanding - 1))
            case .queued(let head, let outstanding):
                context.write(data, promise: promise)
                return outstanding <= 1 ? answer(head) : (state = .queued(head, outstanding: outstanding - 1))
            default:
                break
            }
        }
        context.write(data, promise: promise)
    }

    /// Admits the event stream's request, then answers with the stream or the refusal.
    private func answer(_ head: HTTPRequest) {
        guard let context else { return }
        state = .answering(nil)
        let started = ContinuousClock.now
        let output = Output(handler: NIOLoopBound(self, eventLoop: context.eventLoop))
        let streams = streams
        Task {
            let opened = await streams.open(head, output: output)
            output.eventLoop.execute { output.handler.value.begin(opened, head: head, started: started) }
        }
    }

    private func begin(_ opened: Result<EventStream, ErrorAnswer>, head: HTTPRequest, started: ContinuousClock.Instant) {
        guard let context else {
            if case .success(let stream) = opened { stream.close() }
            return
        }
        var log = AccessLog(method: "GET", path: EventStreams.path)
        switch opened {
        case .failure(let refusal):
            var headers = refusal.headers
            headers[.contentType] = "application/json"
            headers[.contentLength] = String(refusal.body.count)
            streams.cors.decorate(&headers, for: head.headerFields)
            context.write(wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(ByteBuffer(bytes: refusal.body))), promise: nil)
            // Closed after the answer: the connection's next request would have no handler yet.
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            log.finish(status: refusal.status.code, bytes: refusal.body.count, started: started, logger: streams.logger)
        case .success(let stream):
            guard context.channel.isActive else { return stream.close() }
            state = .answering(stream)
            var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
            streams.cors.decorate(&headers, for: head.headerFields)
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: headers))), promise: nil)
            stream.start()
            log.user = stream.user
            let logger = streams.logger, finished = log
            context.channel.closeFuture.whenComplete { _ in finished.finish(status: 200, bytes: nil, started: started, logger: logger) }
        }
    }

    /// What a stream writes to: this handler, on its event loop.
    struct Output: Sendable {
        let handler: NIOLoopBound<EventStreamHandler>

        var eventLoop: any EventLoop { handler.eventLoop }

        var isWritable: Bool { handler.value.context?.channel.isWritable ?? false }

        func write(_ buffer: ByteBuffer, flush: Bool) {
            guard let context = handler.value.context else { return }
            let part = handler.value.wrapOutboundOut(.body(buffer))
            flush ? context.writeAndFlush(part, promise: nil) : context.write(part, promise: nil)
        }

        func flush() { handler.value.context?.flush() }

        func close() { handler.value.context?.close(promise: nil) }
    }
}
