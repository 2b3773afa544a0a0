import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The whole notifier: its database, the consumer of other services' events, the dispatcher
/// and the bus methods. Run ``services`` in a `ServiceGroup` (ServiceRunner does).
///
/// ```swift
/// await ServiceRunner.run("notifier") { context in
///     try NotifierService(context: context).services
/// }
/// ```
public final class NotifierService: Sendable {
    public let database: ServiceDatabase
    public let dispatcher: Dispatcher
    public let consumer: DurableConsumer
    public let host: ServiceHost
    private let http: HTTPClient

    /// Builds the notifier on `bus` with its database at `databaseURL`.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened, `INVALID_ARGUMENT` for a bad APNs key.
    public init(bus: Bus, databaseURL: URL, configuration: NotifierConfiguration, clock: any WallClock = SystemWallClock(), logger: Logger) throws {
        database = try ServiceDatabase.open(at: databaseURL, migrator: Schema.migrator(), logger: logger)
        http = try HTTPClient(logger: logger)
        var senders: [ChannelType: any ChannelSender] = [
            .webhook: WebhookSender(http: http, timeout: configuration.httpTimeout),
            .ntfy: NtfySender(http: http, timeout: configuration.httpTimeout),
        ]
        if let apns = configuration.apns {
            senders[.apns] = APNsSender(
                http: http, configuration: apns, tokens: try APNsTokenProvider(configuration: apns, clock: clock), timeout: configuration.httpTimeout)
        }
        let dispatcher = Dispatcher(database: database, configuration: configuration, clock: clock, senders: senders, logger: logger)
        self.dispatcher = dispatcher
        let intake = Intake(configuration: configuration, clock: clock)
        consumer = DurableConsumer(
            name: "notifier", bus: bus, database: database, routes: intake.routes,
            catchUpInterval: configuration.catchUpInterval, logger: logger, afterCommit: { dispatcher.wake() })
        host = ServiceHost(bus: bus, contract: Notifier, credit: 64, logger: logger)
        host.serveBackup(of: database)
        API(database: database, clock: clock, apnsConfigured: configuration.apns != nil, wake: { dispatcher.wake() }).register(on: host)
    }

    /// Builds the notifier from a ServiceRunner context (`DATA_DIR`, `NOTIFIER_*`).
    public convenience init(context: ProcessContext) throws {
        try self.init(
            bus: context.bus, databaseURL: try context.environment.dataDirectory(service: "notifier").appending(path: "notifier.sqlite"),
            configuration: try NotifierConfiguration.fromEnvironment(context.environment), logger: context.logger)
    }

    /// In start order; a ServiceGroup stops them in reverse: the host drains, the dispatcher
    /// finishes the sends in flight, the consumer stops, and the HTTP client closes last.
    public var services: [any Service] {
        [HTTPClientCloser(http: http), consumer, dispatcher, host]
    }
}

/// Closes the HTTP client at graceful shutdown, after the services that use it.
struct HTTPClientCloser: Service {
    let http: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        await http.shutdown()
    }
}
