import Bus
import Contracts
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Wire

/// What a `/v1/events` stream is told by the hub.
enum HubMessage: Sendable {
    /// A live event of the stream's user.
    case event(BusEvent)
    /// The hub missed events of `source` (a `seq` gap, or this stream's buffer overflowed):
    /// read them back through `_events.replay`.
    case resync(source: String)
    /// Time to write a comment, so that proxies keep the connection and a gone client is noticed.
    case keepAlive
    /// The bus call a streamed answer belongs to has its reply.
    case replied(Result<Data, BusError>)
}

/// One subscription to every event for the whole edge, handed out to the `/v1/events` streams
/// by user: thousands of idle streams cost one socket, not thousands.
public final class EventHub: Service, Sendable {
    private struct Listener {
        let user: String
        let continuation: AsyncStream<HubMessage>.Continuation
    }

    private let bus: Bus
    private let logger: Logger
    private let listeners = Mutex<[UUID: Listener]>([:])
    /// Events a stream may hold unsent before it is told to resync instead.
    static let bufferLimit = 256

    init(bus: Bus, logger: Logger) {
        self.bus = bus
        self.logger = logger
    }

    /// Every topic a contract declares, templates (`ai.stream.<requestId>`) by their fixed
    /// start: what the broker lets an edge key subscribe to (docs/wire-protocol.md, Addition 12).
    static let topics = Catalog.contracts.flatMap { $0.topics.map { String($0.name.prefix { $0 != "<" }) } }

    /// Subscribes until graceful shutdown, then ends every stream.
    public func run() async throws {
        let subscription = try bus.subscribe(Self.topics)
        await cancelWhenGracefulShutdown {
            for await event in subscription { self.deliver(event) }
        }
        let all = listeners.withLock { listeners in
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for listener in all { listener.continuation.finish() }
    }

    /// The messages for `user` from now on, and a way to add ``HubMessage/keepAlive``; the
    /// stream ends when the caller stops iterating.
    func listen(user: String) -> (AsyncStream<HubMessage>, AsyncStream<HubMessage>.Continuation) {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: HubMessage.self, bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: id) } }
        listeners.withLock { $0[id] = Listener(user: user, continuation: continuation) }
        return (stream, continuation)
    }

    /// How many streams listen (for tests and logs).
    public var listenerCount: Int { listeners.withLock { $0.count } }

    private func deliver(_ event: BusEvent) {
        let source = event.header.source
        let targets: [Listener] = listeners.withLock { listeners in
            if event.gap != nil { return Array(listeners.values) }
            guard let user = event.header.user else { return [] }
            return listeners.values.filter { $0.user == user }
        }
        for listener in targets {
            if event.gap != nil {
                listener.continuation.yield(.resync(source: source))
                if event.header.user != listener.user { continue }
            }
            if case .dropped = listener.continuation.yield(.event(event)) {
                // The stream holds the newest; what it lost comes back by replay.
                listener.continuation.yield(.resync(source: source))
            }
        }
    }
}
