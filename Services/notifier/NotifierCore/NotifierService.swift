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
/// and the methods on the bus.
public final class NotifierService: StudyBusService {
    /// The bus connection, database and host.
    public let owner: DataOwner
    private let dispatcher: Dispatcher
    private let consumer: DurableConsumer
    let notifications: NotificationMethods
    let inbox: InboxMethods
    let channels: ChannelMethods
    let preferences: PreferenceMethods
    let deliveries: DeliveryMethods
    private let http: HTTPClient

    /// Opens (or creates) the database, sets up the senders and registers the methods and the
    /// events consumed.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened, `INVALID_ARGUMENT` for a bad APNs key.
    public init(context: ServiceContext<NotifierConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger, clock = configuration.wallClock
        owner = try DataOwner(
            context: context, contract: Notifier, database: .init(url: configuration.databaseURL, migrator: Schema.migrator()), credit: 64)
        let database = owner.database
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
        consumer = DurableConsumer(
            name: context.serviceName, bus: owner.bus, database: database, routes: Intake(configuration: configuration, clock: clock).routes,
            catchUpInterval: configuration.catchUpInterval, logger: logger, afterCommit: { dispatcher.wake() })
        notifications = NotificationMethods(database: database, clock: clock, dispatcher: dispatcher)
        inbox = InboxMethods(database: database, clock: clock)
        channels = ChannelMethods(database: database, clock: clock, apnsConfigured: configuration.apns != nil)
        preferences = PreferenceMethods(database: database, clock: clock, dispatcher: dispatcher)
        deliveries = DeliveryMethods(database: database)

        let handlers = owner.host.handlers(for: self)
        NotificationMethods.register(handlers)
        InboxMethods.register(handlers)
        ChannelMethods.register(handlers)
        PreferenceMethods.register(handlers)
        DeliveryMethods.register(handlers)
    }

    /// The consumer and the dispatcher run between the HTTP client and the host: at shutdown the
    /// host drains, the dispatcher finishes the sends in flight, the consumer stops, and the HTTP
    /// client closes.
    public var services: [any Service] {
        owner.services(running: [http, consumer, dispatcher])
    }
}
