import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Wire

/// The `ai-gateway` service over one database file: the providers behind its methods, the
/// response cache, the usage ledger and the voice-command engine.
public final class AIGatewayService: StudyBusService {
    /// The bus connection, database and host.
    public let owner: DataOwner
    let text: TextMethods
    let encouragement: EncouragementMethods
    let chat: ChatMethods
    let intents: IntentMethods
    let transcription: TranscriptionMethods
    let speech: SpeechMethods
    let providers: ProviderMethods
    private let http: HTTPClient
    private let maintenance: GatewayMaintenance

    /// Opens (or creates) the database, sets up the providers and registers the methods.
    /// - Throws: `FAILED_PRECONDITION` when the database cannot be opened.
    public init(context: ServiceContext<AIGatewayConfiguration>) throws {
        let configuration = context.configuration, logger = context.logger, clock = configuration.wallClock
        owner = try DataOwner(
            context: context, contract: AIGateway, database: .init(url: configuration.databaseURL, migrator: GatewayDatabase.migrator),
            credit: configuration.credit)
        let database = owner.database
        http = try HTTPClient(logger: logger)
        let cache = ResponseCache(database: database, ttl: configuration.cacheTTL, memoryEntries: configuration.memoryCacheEntries,
                                  diskEntries: configuration.diskCacheEntries, clock: clock, logger: logger)
        let ledger = UsageLedger(database: database, clock: clock, logger: logger)
        let dispatcher = Dispatcher(configuration: configuration, http: http, cache: cache, ledger: ledger)
        maintenance = GatewayMaintenance(cache: cache, ledger: ledger, flushInterval: configuration.ledgerFlushInterval)
        text = TextMethods(dispatcher: dispatcher)
        encouragement = EncouragementMethods(dispatcher: dispatcher)
        chat = ChatMethods(dispatcher: dispatcher, bus: owner.bus)
        let intentEngine = IntentEngine(cacheSize: configuration.intentCacheSize, store: IntentStore(database: database))
        intents = IntentMethods(engine: intentEngine, clock: clock)
        transcription = TranscriptionMethods(dispatcher: dispatcher, settings: configuration.speech, intents: intentEngine)
        speech = SpeechMethods(dispatcher: dispatcher, settings: configuration.speech)
        providers = ProviderMethods(configuration: configuration, ledger: ledger)

        let handlers = owner.host.handlers(for: self)
        TextMethods.register(handlers)
        EncouragementMethods.register(handlers)
        ChatMethods.register(handlers)
        IntentMethods.register(handlers)
        TranscriptionMethods.register(handlers)
        SpeechMethods.register(handlers)
        ProviderMethods.register(handlers)

        logger.info("providers", metadata: [
            "remote": "\(configuration.remotes.map { "\($0.name)(\($0.chatModel), key: \($0.apiKey == nil ? "no" : "yes"))" })",
            "routes": "\(configuration.routes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.method)=\($0.value.joined(separator: ">"))" })",
        ])
    }

    /// The maintenance runs between the HTTP client and the host: at shutdown the host finishes
    /// the requests in flight, the ledger is written a last time, and the HTTP client closes.
    public var services: [any Service] {
        owner.services(running: [http, maintenance])
    }
}

/// Writes the usage ledger every flush interval and purges expired cache rows at start and
/// every minute; at graceful shutdown writes the ledger a last time.
struct GatewayMaintenance: Service {
    let cache: ResponseCache
    let ledger: UsageLedger
    let flushInterval: Duration

    func run() async {
        var lastPurge = ContinuousClock.now
        cache.purge()
        while true {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: flushInterval) }
            ledger.flush()
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            if ContinuousClock.now - lastPurge > .seconds(60) {
                cache.purge()
                lastPurge = .now
            }
        }
    }
}
