import Bus
import Logging
import ServiceLifecycle
import Storage
import Wire

/// A StudyBus process: every service (and the broker) conforms, so each is built and run the
/// same way. Its `main` is one line, `await ServiceRunner.run(StoreService.self)`.
///
/// The initializer builds everything and runs nothing: it opens what the service owns,
/// registers its handlers and event routes. ``services`` are then run in a `ServiceGroup`,
/// which starts them in order and, on SIGTERM or SIGINT, shuts them down gracefully in reverse.
///
/// ```swift
/// public final class TimerTickerService: StudyBusService {
///     public init(context: ServiceContext<TimerTickerConfiguration>) throws { … }
///     public var services: [any Service] { owner.services(running: [engine]) }
/// }
/// ```
public protocol StudyBusService: AnyObject, Sendable {
    associatedtype Configuration: ServiceConfiguration

    /// Builds the service from its settings, logger and bus endpoints.
    /// - Throws: `INVALID_ARGUMENT` or `FAILED_PRECONDITION` for settings or files it cannot
    ///   use (the runner exits with status 2), anything else for other start-up failures.
    init(context: ServiceContext<Configuration>) throws

    /// What to run, in start order; they stop in reverse. The bus connection comes first, so it
    /// closes last, and the service host last, so it drains first.
    var services: [any Service] { get }
}

/// A service's settings, read from the environment in one place.
public protocol ServiceConfiguration: Sendable {
    /// The name the service answers to on the bus and logs under, e.g. `store`.
    static var serviceName: String { get }

    /// Reads every setting of the service (docs/operations.md lists them).
    /// - Throws: `INVALID_ARGUMENT` naming the variable that is not valid.
    init(environment: Environment) throws(BusError)

    /// What `--help` prints: the service and its settings.
    static var usage: String { get }
}

extension ServiceConfiguration {
    public static var usage: String {
        """
        USAGE: \(serviceName)

        The StudyBus \(serviceName) service. Configured by environment variables: the bus endpoints
        (BUS_RPC, BUS_PUB, BUS_SUB), its keys (BUS_SECURITY, default on; BUS_KEY, BUS_BROKER_KEY),
        DATA_DIR, LOG_LEVEL, LOG_FORMAT, METRICS_ADDRESS (host:port of /metrics, /healthz and /readyz;
        off when unset), OTEL_EXPORTER_OTLP_ENDPOINT (OTLP/HTTP collector for traces; off when unset)
        and the service's own, listed with their defaults in docs/operations.md (Settings). --version prints the version and the git commit it was built from.
        Exit status: 0 after SIGTERM or SIGINT, 1 on a runtime error, 2 on a configuration error.
        """
    }
}

/// What a service is built from: its settings, its logger and where the bus is.
public struct ServiceContext<Configuration: ServiceConfiguration>: Sendable {
    public var configuration: Configuration
    public var logger: Logger
    /// The broker's endpoints and this process's bus settings.
    public var busConfiguration: BusConfiguration
    /// How `_backup` copies are made, for a service that owns data (`BACKUP_MIN_FREE_BYTES`).
    public var backup: BackupPolicy
    /// The process's metrics and readiness (`METRICS_ADDRESS`); off unless given.
    public var monitoring: Monitoring

    public init(
        configuration: Configuration, logger: Logger, busConfiguration: BusConfiguration, backup: BackupPolicy = BackupPolicy(),
        monitoring: Monitoring? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.busConfiguration = busConfiguration
        self.backup = backup
        self.monitoring = monitoring ?? Monitoring(service: Configuration.serviceName, address: nil)
    }

    /// The service's name on the bus.
    public var serviceName: String { Configuration.serviceName }

    /// A new connection to the bus; run it first among the service's ``StudyBusService/services``.
    public func connectBus() throws(BusError) -> Bus {
        try Bus(configuration: busConfiguration, logger: logger)
    }
}
