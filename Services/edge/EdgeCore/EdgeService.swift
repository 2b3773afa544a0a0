import Bus
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import ServiceKit
import ServiceLifecycle
import Synchronization
import Wire

/// The edge: an HTTP server (Hummingbird) in front of the bus. Apps authenticate with a bearer
/// token and call app-facing methods as `POST /v1/SERVICE/METHOD`; every call acts for the
/// token's user and nobody else.
///
/// ```swift
/// await ServiceRunner.run(EdgeService.self)
/// ```
public final class EdgeService: StudyBusService {
    public let bus: Bus
    /// The one event subscription that feeds every `/v1/events` stream.
    public let hub: EventHub
    let application: Application<EdgeResponder>
    private let port = BoundPort()

    /// Connects the bus and builds the HTTP server; nothing listens until ``services`` run.
    /// - Throws: `INVALID_ARGUMENT` for a JWKS file that does not decode.
    public init(context: ServiceContext<EdgeConfiguration>) throws {
        let configuration = context.configuration
        bus = try context.connectBus()
        let verifier = try TokenVerifier(settings: configuration.tokens)
        hub = EventHub(
            bus: bus, limits: EventHub.Limits(streams: configuration.maximumEventStreams, streamsPerUser: configuration.maximumEventStreamsPerUser),
            logger: context.logger)
        let admission = Admission(verifier: verifier, rateLimiter: RateLimiter(rate: configuration.ratePerSecond, burst: configuration.rateBurst))
        let routes = RouteTable(contracts: configuration.contracts)
        let cors = CORS(origins: configuration.corsOrigins)
        let responder = EdgeResponder(
            bus: bus, configuration: configuration, admission: admission, routes: routes, cors: cors, hub: hub, logger: context.logger)
        let streams = EventStreams(bus: bus, hub: hub, admission: admission, cors: cors, sources: Set(routes.services), logger: context.logger)
        let port = self.port
        let logger = context.logger
        var application = Application(
            responder: responder,
            server: try Self.server(tls: configuration.tls, streams: streams),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port), serverName: "studybus-edge"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port
                port.value.withLock { $0 = bound }
                logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(bound ?? -1)"])
            },
            logger: context.logger)
        application.beforeServerStarts { try await verifier.ready() }
        self.application = application
    }

    /// HTTP/1.1, or with certificate files HTTPS offering HTTP/2 and HTTP/1.1 by ALPN; event
    /// streams answered by ``EventStreamHandler`` in either.
    static func server(tls: (certificateFile: String, keyFile: String)?, streams: EventStreams) throws(BusError) -> HTTPServerBuilder {
        guard let tls else {
            return HTTPServerBuilder { responder in EventLoopPinnedChannel(inner: EdgeHTTP1Channel(http1: HTTP1Channel(responder: responder), streams: streams)) }
        }
        let tlsConfiguration = try Self.tlsConfiguration(tls)
        let configuration = HTTP2UpgradeChannel.Configuration(streamConfiguration: .init(additionalChannelHandlers: [EventStreamHandler(streams: streams)]))
        return HTTPServerBuilder { responder in
            EventLoopPinnedChannel(inner: try HTTP2UpgradeChannel(tlsConfiguration: tlsConfiguration, configuration: configuration, responder: responder))
        }
    }

    /// The server's TLS settings from its certificate chain and key files.
    /// - Throws: `FAILED_PRECONDITION` for files that do not hold a PEM chain and key.
    public static func tlsConfiguration(_ tls: (certificateFile: String, keyFile: String)) throws(BusError) -> TLSConfiguration {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certificateFile)
            let key = try NIOSSLPrivateKey(file: tls.keyFile, format: .pem)
            return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        } catch {
            throw .failedPrecondition("cannot serve HTTPS with EDGE_TLS_CERT_FILE \(tls.certificateFile) and EDGE_TLS_KEY_FILE \(tls.keyFile): \(error)")
        }
    }

    /// The bus first, so it closes last. The hub last, so that on shutdown it ends the event
    /// streams first: the HTTP server then stops without waiting for them.
    public var services: [any Service] { [bus, application, hub] }

    /// The port the server listens on, once it does (the configured one, or the one picked for 0).
    public var boundPort: Int? { port.value.withLock { $0 } }
}

/// Where the server's port is kept once it listens; a class, so the start callback can share it.
private final class BoundPort: Sendable {
    let value = Mutex<Int?>(nil)
}
