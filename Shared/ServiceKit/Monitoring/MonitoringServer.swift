import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The monitoring port: `GET /metrics` (Prometheus text format), `/healthz` (the process is
/// alive: it answers) and `/readyz` (200 when every part is ready, else 503 naming what is not),
/// and the paths the process added (``Monitoring/serve(_:_:)``: the broker's console), over
/// HTTP/1.1 with SwiftNIO on a thread of its own, off the bus.
///
/// Whoever reaches the port is a stranger: requests are `GET` or `HEAD` of those paths, a
/// request with a body is refused, headers are bounded by NIO's parser (80 KiB), a connection
/// silent for 10 s is closed, one lives at most a minute however it trickles, and at most
/// ``maxConnections`` are served at once (more are closed as they come). Nothing served depends
/// on what the request says beyond its method and path.
///
/// Run it first among a process's services, so that it stops last and `/readyz` says "draining"
/// while the rest shut down.
public struct MonitoringServer: Service {
    static let maxConnections = 32
    static let idleTimeout: TimeAmount = .seconds(10)

    let monitoring: Monitoring
    let logger: Logger
    /// A client that sends a byte every few seconds is never idle; this ends it anyway, so the
    /// connection slots cannot be held for ever. Prometheus reconnects between scrapes.
    let connectionLifetime: TimeAmount

    /// A server for `monitoring`; a connection is closed after `connectionLifetime` (a minute).
    public init(monitoring: Monitoring, logger: Logger, connectionLifetime: Duration = .seconds(60)) {
        self.monitoring = monitoring
        self.logger = logger
        self.connectionLifetime = TimeAmount(connectionLifetime)
    }

    public func run() async throws {
        guard let address = monitoring.address else {
            try? await gracefulShutdown()
            return
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await serve(at: address, on: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
    }

    private func serve(at address: Monitoring.Address, on group: MultiThreadedEventLoopGroup) async throws {
        let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: address.host, port: address.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                        try channel.pipeline.syncOperations.addHandler(CloseWhenIdle())
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw MonitoringError(message: "cannot listen on METRICS_ADDRESS \(address): \(error)")
        }
        let port = server.channel.localAddress?.port ?? address.port
        monitoring.listening(on: port)
        logger.info("monitoring", metadata: [
            "address": "\(Monitoring.Address(host: address.host, port: port))", "paths": "\(monitoring.servedPaths.joined(separator: " "))",
        ])
        let connections = ConnectionSlots(count: Self.maxConnections)
        try await withTaskCancellationOrGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { tasks in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        guard connections.take() else {
                            connection.channel.close(promise: nil)
                            continue
                        }
                        tasks.addTask {
                            await serve(connection)
                            connections.release()
                        }
                    }
                }
                tasks.cancelAll()
            }
        } onCancelOrGracefulShutdown: {
            // The server outlives the other services (it runs first, so it stops last): by the
            // time it is told to stop, there is nothing left to report on.
            server.channel.close(promise: nil)
        }
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        let channel = connection.channel
        let expiry = channel.eventLoop.scheduleTask(in: connectionLifetime) { channel.close(promise: nil) }
        defer { expiry.cancel() }
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var hasBody = false
            for try await part in inbound {
                switch part {
                case .head(let requestHead):
                    head = requestHead
                    hasBody = false
                case .body:
                    hasBody = true
                case .end:
                    guard let request = head else { continue }
                    head = nil
                    let response = hasBody
                        ? Response(status: .payloadTooLarge, body: "a monitoring request has no body\n")
                        : await respond(to: request)
                    let keepAlive = request.isKeepAlive && !hasBody
                    var headers = HTTPHeaders([("content-type", response.contentType), ("content-length", "\(response.body.count)")])
                    for (name, value) in response.headers { headers.add(name: name, value: value) }
                    if response.status == .methodNotAllowed { headers.add(name: "allow", value: "GET, HEAD") }
                    headers.add(name: "connection", value: keepAlive ? "keep-alive" : "close")
                    try await outbound.write(.head(HTTPResponseHead(version: request.version, status: response.status, headers: headers)))
                    if request.method != .HEAD {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
                    }
                    try await outbound.write(.end(nil))
                    if !keepAlive { return }
                }
            }
        }
    }

    struct Response {
        var status: HTTPResponseStatus
        var body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        var headers: [(name: String, value: String)] = []

        init(status: HTTPResponseStatus, body: String) {
            self.status = status
            self.body = Array(body.utf8)
        }

        init(status: HTTPResponseStatus, body: [UInt8], contentType: String) {
            self.status = status
            self.body = body
            self.contentType = contentType
        }

        init(_ response: MonitoringResponse) {
            status = HTTPResponseStatus(statusCode: response.status)
            body = response.body
            contentType = response.contentType
            headers = response.headers
        }
    }

    func respond(to request: HTTPRequestHead) async -> Response {
        guard request.method == .GET || request.method == .HEAD else {
            return Response(status: .methodNotAllowed, body: "only GET and HEAD\n")
        }
        let path = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        switch path {
        case "/metrics":
            return Response(status: .ok, body: await monitoring.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/healthz":
            return Response(status: .ok, body: "ok\n")
        case "/readyz":
            let problems = await monitoring.readinessProblems()
            if problems.isEmpty { return Response(status: .ok, body: "ready\n") }
            return Response(status: .serviceUnavailable, body: "not ready:\n" + problems.map { "- \($0)\n" }.joined())
        default:
            if let handler = monitoring.handler(for: path) {
                let headers = request.headers.map { (name: $0.name, value: $0.value) }
                return Response(await handler(MonitoringRequest(uri: request.uri, headers: headers)))
            }
            return Response(status: .notFound, body: "not found; this port serves \(monitoring.servedPaths.joined(separator: ", "))\n")
        }
    }
}

/// An error starting the monitoring server.
struct MonitoringError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// How many connections may be served at once.
private final class ConnectionSlots: Sendable {
    private let free: Atomic<Int>

    init(count: Int) { free = Atomic(count) }

    /// Takes a slot; false when none is free.
    func take() -> Bool {
        guard free.subtract(1, ordering: .relaxed).newValue >= 0 else {
            free.add(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func release() { free.add(1, ordering: .relaxed) }
}

/// Closes a connection that sent nothing for the idle timeout (a slow or stuck client holds one
/// of the few connection slots otherwise).
private final class CloseWhenIdle: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
