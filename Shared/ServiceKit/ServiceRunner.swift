import Bus
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals
import Wire

/// What a service's `main` gets to build its services from.
public struct ServiceContext: Sendable {
    /// The service name, e.g. `store`.
    public let name: String
    public let environment: Environment
    public let logger: Logger
    /// The bus connection; it is started before and stopped after the services built.
    public let bus: Bus
}

/// The whole of a thin `main`: configuration from the environment, logging bootstrapped once,
/// the bus, the service's own `Service`s, and a `ServiceGroup` that shuts everything down
/// gracefully on SIGTERM or SIGINT, in reverse order.
///
/// ```swift
/// await ServiceRunner.run("store") { context in
///     [try StoreService(context: context)]
/// }
/// ```
public enum ServiceRunner {
    /// Bootstraps logging from `LOG_LEVEL` and `LOG_FORMAT`; returns the root logger.
    public static func bootstrapLogging(label: String, environment: Environment) -> Logger {
        let level = (try? environment.logLevel()) ?? .info
        let format = (try? environment.logFormat()) ?? .text
        LoggingSystem.bootstrap { label in StructuredLogHandler(label: label, level: level, format: format) }
        return Logger(label: label)
    }

    /// Runs until a signal stops it; exits with status 1 on a start-up or runtime error, 2 on a
    /// configuration error.
    public static func run(_ name: String, build: @Sendable (ServiceContext) async throws -> [any Service]) async -> Never {
        let environment = Environment()
        let logger = bootstrapLogging(label: name, environment: environment)
        do {
            _ = try environment.logLevel()
            _ = try environment.logFormat()
            let bus = try Bus(configuration: .fromEnvironment(service: name, environment.values), logger: logger)
            let context = ServiceContext(name: name, environment: environment, logger: logger, bus: bus)
            let services = try await build(context)
            try await runGroup([bus] + services, logger: logger)
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
