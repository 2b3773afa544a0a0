import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import ServiceKit
import ServiceLifecycle
import StoreCore
import TestSupport
import Testing
import Wire

/// The real store service on a gateway world's broker: its own bus and a SQLite file in a
/// temporary folder, on the system clock (messages list by creation time).
struct RunningStore: TestWorld {
    let store: StoreService
    let client: Bus
    let directory: URL
    let tasks: [Task<Void, any Error>]

    static func start(on world: GatewayWorld) async throws -> RunningStore {
        let directory = FileManager.default.temporaryDirectory.appending(path: "ai-gateway-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try StoreService(context: ServiceContext(
            configuration: StoreConfiguration(databaseURL: directory.appending(path: "store.sqlite")), logger: testLogger("store"),
            busConfiguration: busConfiguration(world.endpoints, source: "store")))
        let running = RunningStore(store: store, client: world.client, directory: directory,
                                   tasks: store.services.map { service in Task { try await service.run() } })
        try await eventually("store serves", timeout: Wait.startup) {
            (try? await world.client.call(Reserved.health("store"), Empty()))?.status == .serving
        }
        return running
    }

    /// Calls a store method as `user`.
    func call<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String = "u1") async throws(BusError) -> Response {
        try await client.call(method, request, options: CallOptions(user: user, timeout: .seconds(20)))
    }

    /// The conversation's messages, oldest first.
    func messages(_ conversationId: String, user: String = "u1") async throws -> [ConversationMessage] {
        try await call(Store.listMessages, MessageList(limit: 500, conversationId: conversationId), user: user).items
    }

    /// A ready material whose chunks are `chunks`, in that order.
    func material(_ title: String, chunks: [String], user: String = "u1") async throws -> Material {
        let put = MaterialPut(title: title, sourceKind: .txt, sourceDocument: SourceDocumentInput(title: "\(title).txt"),
                              chunks: chunks.enumerated().map { ChunkInput(ordinal: $0.offset, text: $0.element) })
        return try await call(Store.putMaterial, put, user: user).material
    }

    func conversation(materialId: String? = nil, setId: String? = nil, user: String = "u1") async throws -> Conversation {
        try await call(Store.createConversation, ConversationCreate(title: "Tutor", materialId: materialId, setId: setId), user: user)
    }

    func stop() async {
        for task in tasks.reversed() { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await store.owner.bus.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with the real store on `world`'s broker, stopping it whatever happens.
func withStore(_ world: GatewayWorld, _ body: (RunningStore) async throws -> Void) async throws {
    let store = try await RunningStore.start(on: world)
    do {
        try await body(store)
    } catch {
        await store.stop()
        throw error
    }
    await store.stop()
}

extension GatewayWorld {
    /// Calls `chat` as `user`, with the idempotency key `idem` when given.
    func chat(_ request: ChatRequest, user: String = "u1", idem: String? = nil) async throws(BusError) -> ChatResponse {
        try await client.call(AIGateway.chat, request, options: CallOptions(user: user, timeout: .seconds(30), idempotencyKey: idem))
    }

    /// The error `chat` fails with (the test fails if it succeeds).
    func chatFailure(_ request: ChatRequest, user: String = "u1", sourceLocation: SourceLocation = #_sourceLocation) async -> BusError? {
        do {
            _ = try await chat(request, user: user)
            Issue.record("chat succeeded; expected an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }
}

/// The photosynthesis notes as chunks, one per section.
let photosynthesisChunks = Fixtures.photosynthesis.components(separatedBy: "\n\n## ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }

/// A user's question as the only message of a request.
func question(_ text: String) -> [ChatMessage] { [ChatMessage(role: .user, content: text)] }
