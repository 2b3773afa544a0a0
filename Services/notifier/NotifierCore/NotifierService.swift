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
    /// Reaches the URLs users give (webhooks, ntfy): public addresses and `allowedNetworks` only.
    private let endpointsHTTP: HTTPClient
    /// Reaches APNs, which the operator configures (as ai-gateway's providers): any address.
    private let apnsHTTP: HTTPClient?

    /// Opens (or creates) the database, sets up the senders and registers the methods and the
    /// events consumed.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened, `INVALID_ARGUMENT` for a bad APNs key.
    public init(context: ServiceContext<NotifierConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger, clock = configuration.wallClock
        owner = try DataOwner(
            context: context, contract: Notifier, database: .init(url: configuration.databaseURL, migrator: Schema.migrator()), credit: 64)
        let database = owner.database
        let limits = DeliveryLimits(timeout: configuration.httpTimeout, maximumResponseBytes: configuration.httpMaximumResponseBytes)
        endpointsHTTP = try HTTPClient(logger: logger, destinationPolicy: DestinationPolicy(allowing: configuration.allowedNetworks))
        var senders: [ChannelType: any ChannelSender] = [
            .webhook: WebhookSender(http: endpointsHTTP, limits: limits),
            .ntfy: NtfySender(http: endpointsHTTP, limits: limits),
        ]
        if let apns = configuration.apns {
            let apnsHTTP = try HTTPClient(logger: logger)
            self.apnsHTTP = apnsHTTP
            senders[.apns] = APNsSender(
                http: apnsHTTP, configuration: apns, tokens: try APNsTokenProvider(configuration: apns, clock: clock), limits: limits)
        } else {
            apnsHTTP = nil
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

    /// The consumer and the dispatcher run between the HTTP clients and the host: at shutdown the
    /// host drains, the dispatcher finishes the sends in flight, the consumer stops, and the HTTP
    /// clients close.
    public var services: [any Service] {
        owner.services(running: [endpointsHTTP] + (apnsHTTP.map { [$0] } ?? []) + [consumer, dispatcher])
    }
}
