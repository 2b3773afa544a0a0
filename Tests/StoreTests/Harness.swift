import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import ServiceKit
import ServiceLifecycle
import Storage
import StoreCore
import TestSupport
import Testing
import Wire

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "studybus-store-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A real broker, the store on its own bus over a SQLite file in a temporary folder, and a client.
struct StoreWorld: TestWorld {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let store: StoreService
    let client: Bus
    let clock: ManualWallClock
    let directory: URL
    let tasks: [Task<Void, any Error>]

    static let start = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z

    /// - Parameters:
    ///   - maxMessageBytes: the broker's largest frame, and the store's idea of it.
    ///   - pdfMaximumPages: `STORE_PDF_MAX_PAGES`.
    static func start(
        directory: URL? = nil, clock: ManualWallClock = ManualWallClock(StoreWorld.start), maxMessageBytes: Int64 = 64 << 20,
        pdfMaximumPages: Int = 500, apkgLimits: ApkgLimits = ApkgLimits()
    ) async throws -> StoreWorld {
        let (broker, endpoints) = try await startBroker(maxMessageBytes: maxMessageBytes)
        let directory = try directory ?? temporaryDirectory()
        var storeBus = busConfiguration(endpoints, source: "store")
        storeBus.maxMessageBytes = maxMessageBytes
        let store = try StoreService(context: ServiceContext(
            configuration: StoreConfiguration(
                databaseURL: directory.appending(path: "store.sqlite"), clock: clock, pdfMaximumPages: pdfMaximumPages, apkgLimits: apkgLimits),
            logger: testLogger("store"), busConfiguration: storeBus))
        let tasks = store.services.map { service in Task { try await service.run() } }
        let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
        let world = StoreWorld(
            broker: broker, endpoints: endpoints, store: store, client: client, clock: clock,
            directory: directory, tasks: tasks)
        try await eventually("store serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("store"), Empty())) != nil }
        return world
    }

    /// Stops the store's services in reverse start order (the bus last), then the client and the broker.
    func stop() async {
        for task in tasks.reversed() {
            task.cancel()
            _ = try? await task.value
        }
        await client.shutdown()
        await broker.stop()
    }

    /// Calls a store method as `user`.
    func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, as user: String? = "alice", idem: String? = nil, attachment: Data? = nil
    ) async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user, idempotencyKey: idem, attachment: attachment))
    }

    /// The error a call fails with (the test fails if it succeeds).
    func failure<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, as user: String? = "alice", idem: String? = nil, attachment: Data? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> BusError? {
        do {
            _ = try await client.call(method, request, options: CallOptions(user: user, idempotencyKey: idem, attachment: attachment))
            Issue.record("\(method.name) succeeded; expected an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    /// Every event in the store's durable stream, through `_events.replay`.
    func events() async throws -> [StoredEvent] {
        var all: [StoredEvent] = []
        while true {
            let page = try await client.call(Reserved.eventsReplay("store"), ReplayRequest(after: all.last?.header.seq ?? 0, limit: 1000))
            all += page.events
            if page.events.isEmpty || all.last!.header.seq >= page.lastSeq { return all }
        }
    }

    /// The events after the first `skip` ones, as (topic, payload).
    func events(after skip: Int) async throws -> [StoredEvent] {
        Array(try await events().dropFirst(skip))
    }

    /// Runs SQL against the store's own database (for checks and injected faults).
    func sql<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await store.owner.database.pool.write(body)
    }
}

extension StoredEvent {
    /// The payload decoded as `topic`'s type.
    func decode<Payload>(_ topic: Topic<Payload>) throws -> Payload {
        try WireCoding.decode(Payload.self, from: payload.jsonData)
    }
}

/// A few text samples with known words, for search and chunking.
let sampleChunks = [
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The mitochondria is the powerhouse of the cell and produces ATP through respiration.",
    "Chlorophyll absorbs light most strongly in the blue and red wavelengths.",
]

func samplePut(materialId: String? = nil, title: String = "Biology notes", cards: Int = 2, setName: String? = nil) -> MaterialPut {
    MaterialPut(
        materialId: materialId, title: title, sourceKind: .txt, summary: "Plants and cells.", keywords: ["biology", "cells"],
        sourceDocument: SourceDocumentInput(title: "notes.txt", pageCount: 1),
        chunks: sampleChunks.enumerated().map { ChunkInput(ordinal: $0.offset, text: $0.element, pageNumber: 1) },
        flashcards: (0..<cards).map { GeneratedFlashcard(front: "Question \($0)?", back: "Answer \($0).", tags: ["bio"], chunkOrdinal: $0 % 3) },
        newSetName: setName)
}
