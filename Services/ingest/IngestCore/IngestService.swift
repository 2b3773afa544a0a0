import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Wire

/// The ingest service: `ingest.submit`, `ingest.retry` and `ingest.formats` on the bus, the jobs
/// they start, and the sweep for materials whose worker was lost. Stateless: any number of
/// instances share the work (docs/services/ingest.md).
///
/// ```swift
/// let ingest = IngestService(bus: bus, configuration: try .fromEnvironment(environment), logger: logger)
/// try await ServiceRunner.runGroup([bus] + ingest.services, logger: logger)
/// ```
public final class IngestService: Sendable {
    /// Serves `ingest.submit`, `ingest.retry` and `ingest.formats`.
    public let host: ServiceHost
    /// Runs the jobs the methods start.
    public let runner: JobRunner
    /// Fails the materials of lost workers.
    public let sweeper: StuckSweeper
    let configuration: IngestConfiguration
    let logger: Logger

    /// A worker on `bus`; run its ``services`` after the bus.
    public init(bus: Bus, configuration: IngestConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let pipeline = Pipeline(bus: bus, configuration: configuration, logger: logger)
        runner = JobRunner(pipeline: pipeline, configuration: configuration, logger: logger)
        sweeper = StuckSweeper(bus: bus, runner: runner, configuration: configuration, logger: logger)
        host = ServiceHost(bus: bus, contract: Ingest, credit: configuration.credit, logger: logger)
        registerMethods()
    }

    /// The service of `context` configured from its environment.
    /// - Throws: `INVALID_ARGUMENT` naming a bad `INGEST_*` variable.
    public static func fromEnvironment(_ context: ProcessContext) throws(BusError) -> IngestService {
        let configuration = try IngestConfiguration.fromEnvironment(context.environment)
        context.logger.info("ingest settings", metadata: [
            "credit": "\(configuration.credit)", "concurrency": "\(configuration.concurrency)",
            "chunkTarget": "\(configuration.chunking.targetCharacters)", "chunkOverlap": "\(configuration.chunking.overlapCharacters)",
            "jobTimeout": "\(configuration.jobTimeout)", "stuckAfter": "\(configuration.stuckAfter)", "sweepInterval": "\(configuration.sweepInterval)",
            "pdftotext": "\(ToolRunner.locate(configuration.tools.pdftotext) ?? "missing")",
            "tesseract": "\(ToolRunner.locate(configuration.tools.tesseract) ?? "missing")",
        ])
        return IngestService(bus: context.bus, configuration: configuration, logger: context.logger)
    }

    /// What to run, in start order: the runner first, so that on shutdown the host stops taking
    /// requests before the runner drains its jobs.
    public var services: [any Service] { [runner, sweeper, host] }
}
