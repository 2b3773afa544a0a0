import Bus
import Foundation
import Logging
import ServiceLifecycle
import Wire

// TRANSITIONAL: how services were assembled before ``StudyBusService``. Removed once every
// service conforms; nothing new may use it.

/// What a service's `main` got to build its services from.
public struct ProcessContext: Sendable {
    public let name: String
    public let environment: Environment
    public let logger: Logger
    public let bus: Bus
}

extension ServiceRunner {
    /// Runs the services `build` makes after a bus connection, until a signal stops them.
    public static func run(_ name: String, build: @Sendable (ProcessContext) async throws -> [any Service]) async -> Never {
        let environment = Environment()
        let logger = bootstrapLogging(label: name, environment: environment)
        do {
            let bus = try Bus(configuration: .fromEnvironment(service: name, environment.values), logger: logger)
            let services = try await build(ProcessContext(name: name, environment: environment, logger: logger, bus: bus))
            try await runGroup([bus] + services, logger: logger)
            exit(0)
        } catch let error as BusError where error.code == .invalidArgument || error.code == .failedPrecondition {
            logger.critical("configuration error", metadata: ["error": "\(error.message)"])
            exit(2)
        } catch {
            logger.critical("stopped on error", metadata: ["error": "\(error)"])
            exit(1)
        }
    }
}
