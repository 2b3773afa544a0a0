import Bus
import Contracts
import Foundation
import Logging
import ServiceKit
import ToolProcess
import ServiceLifecycle
import Wire

/// The ingest service: `ingest.submit`, `submitURL`, `retry`, `cancel` and `formats` on the bus,
/// the jobs they start, and the sweep for materials whose worker was lost. Stateless: any number
/// of instances share the work (docs/services/ingest.md).
public final class IngestService: StudyBusService {
    private let bus: Bus
    /// Runs the jobs the methods start.
    public let runner: JobRunner
    /// Fails the materials of lost workers.
    public let sweeper: StuckSweeper
    let jobs: JobMethods
    private let cancelListener: CancelListener
    private let fetcher: URLFetcher
    private let host: ServiceHost

    /// Connects to the bus and registers the methods; logs the settings and the tools found.
    public init(context: ServiceContext<IngestConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger
        bus = try context.connectBus()
        let pipeline = Pipeline(bus: bus, configuration: configuration, logger: logger)
        runner = JobRunner(pipeline: pipeline, configuration: configuration, logger: logger)
        sweeper = StuckSweeper(bus: bus, runner: runner, configuration: configuration, logger: logger)
        fetcher = try URLFetcher(configuration: configuration.urlFetch, logger: logger)
        jobs = JobMethods(runner: runner, configuration: configuration, fetcher: fetcher)
        cancelListener = CancelListener(bus: bus, runner: runner)
        host = ServiceHost(bus: bus, contract: Ingest, credit: configuration.credit, logger: logger, metrics: context.monitoring.factory)
        JobMetrics.watch(runner, concurrency: configuration.concurrency, monitoring: context.monitoring)
        JobMethods.register(host.handlers(for: self))
        logger.info("ingest settings", metadata: [
            "credit": "\(configuration.credit)", "concurrency": "\(configuration.concurrency)",
            "chunkTarget": "\(configuration.chunking.targetCharacters)", "chunkOverlap": "\(configuration.chunking.overlapCharacters)",
            "jobTimeout": "\(configuration.jobTimeout)", "stuckAfter": "\(configuration.stuckAfter)", "sweepInterval": "\(configuration.sweepInterval)",
            "urlAllowNetworks": "\(configuration.urlFetch.allowedNetworks)",
            "pdftotext": "\(ToolPath.locate(configuration.tools.pdftotext) ?? "missing")",
            "tesseract": "\(ToolPath.locate(configuration.tools.tesseract) ?? "missing")",
            "catdoc": "\(ToolPath.locate(configuration.tools.catdoc) ?? "missing")",
            "catppt": "\(ToolPath.locate(configuration.tools.catppt) ?? "missing")",
            "heif-convert": "\(ToolPath.locate(configuration.tools.heifConvert) ?? "missing")",
            "ffmpeg": "\(ToolPath.locate(configuration.tools.ffmpeg) ?? "missing")",
            "audioPieceSeconds": "\(configuration.recordings.pieceSeconds)", "transcribeConcurrency": "\(configuration.recordings.concurrency)",
        ])
    }

    /// What to run, in start order: the bus first, so it closes last; the HTTP client and the
    /// runner before the host, so that on shutdown the host stops taking requests before the
    /// runner drains its jobs.
    public var services: [any Service] { [bus, fetcher.http, runner, sweeper, cancelListener, host] }
}
