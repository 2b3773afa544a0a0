import Bus
import CoreMetrics
import Foundation
import Logging
import ServiceLifecycle
import Storage
import UnixSignals
import Wire

/// Runs a ``StudyBusService`` as a process: the whole of every `main`.
///
/// ```swift
/// await ServiceRunner.run(StoreService.self)
/// ```
///
/// It bootstraps logging once from `LOG_LEVEL` and `LOG_FORMAT`, reads the service's
/// configuration and the bus settings from the environment (logging a warning while
/// `BUS_SECURITY` is off), bootstraps metrics when `METRICS_ADDRESS` is set and tracing when an
/// OTLP endpoint is (``TracingSettings``), builds the service and runs its services in a
/// `ServiceGroup` that shuts down gracefully on SIGTERM or SIGINT, after the ``MonitoringServer``
/// and the span exporter, which therefore stop last (the exporter sends the last spans then).
public enum ServiceRunner {
    /// Bootstraps logging from `LOG_LEVEL` and `LOG_FORMAT`; returns the root logger.
    public static func bootstrapLogging(label: String, environment: Environment) -> Logger {
        let level = (try? environment.logLevel()) ?? .info
        let format = (try? environment.logFormat()) ?? .text
        LoggingSystem.bootstrap { label in StructuredLogHandler(label: label, level: level, format: format) }
        return Logger(label: label)
    }

    /// Runs `Service` until a signal stops it; exits with status 0 then, 1 on a start-up or
    /// runtime error, 2 on a configuration error. `--help` prints the usage and `--version` the
    /// version, and exit.
    public static func run<Service: StudyBusService>(_ type: Service.Type, environment: Environment = Environment()) async -> Never {
        let name = Service.Configuration.serviceName
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
            print(Service.Configuration.usage)
            exit(0)
        }
        if arguments.contains("--version") {
            print("\(name) \(BuildInfo.description)")
            exit(0)
        }
        let logger = bootstrapLogging(label: name, environment: environment)
        do {
            _ = try environment.logLevel()
            _ = try environment.logFormat()
            let monitoring = try Monitoring.fromEnvironment(service: name, environment)
            if monitoring.isEnabled { MetricsSystem.bootstrap(monitoring.factory) }
            let tracing = try TracingSettings.fromEnvironment(service: name, environment)
            let sqliteMemoryLimit = try environment.sqliteMemoryLimitMebibytes()
            SQLiteMemory.limit(mebibytes: sqliteMemoryLimit)
            logger.info("starting", metadata: [
                "version": "\(BuildInfo.version)", "commit": "\(BuildInfo.commit)",
                "metrics": "\(monitoring.address.map { "\($0)" } ?? "off")", "tracing": "\(tracing.endpointForLogs)",
                "sqliteMemoryLimit": "\(sqliteMemoryLimit == 0 ? "none" : "\(sqliteMemoryLimit) MiB")",
            ])
            let exporter = try tracing.bootstrap(logger: logger)
            let context = ServiceContext(
                configuration: try Service.Configuration(environment: environment), logger: logger,
                busConfiguration: try .fromEnvironment(service: name, environment.values), backup: try environment.backupPolicy(),
                monitoring: monitoring)
            switch context.busConfiguration.security {
            case .off: logger.warning("\(BusSecurity.offWarning)")
            case .curve(let keys): logger.info("bus security on (CurveZMQ)", metadata: ["curvePublic": "\(keys.keyPair.publicKey)", "broker": "\(keys.brokerKey)"])
            }
            let service = try Service(context: context)
            let services = service.services
            monitoring.watchReadiness(of: services.compactMap { $0 as? any ReadinessReporting })
            var server: [any ServiceLifecycle.Service] = exporter.map { [$0] } ?? []
            if monitoring.isEnabled { server.append(MonitoringServer(monitoring: monitoring, logger: logger)) }
            try await runGroup(server + services, logger: logger)
            // Handlers hold the service weakly: it must live as long as its services run.
            withExtendedLifetime(service) {}
            logger.info("stopped")
            exit(0)
        } catch let error as BusError where error.code == .invalidArgument || error.code == .failedPrecondition {
            logger.critical("configuration error", metadata: ["error": "\(error.message)"])
            exit(2)
        } catch {
            logger.critical("stopped on error", metadata: ["error": "\(error)"])
            exit(1)
        }
    }

    /// Runs `services` in a group that shuts down gracefully on SIGTERM and SIGINT.
    public static func runGroup(_ services: [any Service], logger: Logger) async throws {
        var configuration = ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(20)
        try await ServiceGroup(configuration: configuration).run()
    }
}
