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
    /// The hub missed events of `source` (a `seq` gap): read them back through `_events.replay`.
    case resync(source: String)
    /// The stream's buffer was full and lost its oldest messages, of any source: read every
    /// source back.
    case overflowed
    /// Time to write a comment, so that proxies keep the connection and a gone client is noticed.
    case keepAlive
    /// The bus call a streamed answer belongs to has its reply.
    case replied(Result<Data, BusError>)
}

/// What the hub hands messages to: an event stream's session, or a chat answer's listener.
/// `receive` is called from the hub's subscription task and must not block; `end` once, when
/// the edge stops.
protocol HubSubscriber: AnyObject, Sendable {
    func receive(_ message: HubMessage)
    func end()
}

/// A chat answer's place at the hub: its messages as an `AsyncStream`, and the way to add its
/// own (``HubMessage/replied(_:)``) or to end it.
struct HubListener {
    let messages: AsyncStream<HubMessage>
    let continuation: AsyncStream<HubMessage>.Continuation
}

/// Hands the hub's messages to a ``HubListener``'s stream, which holds at most
/// ``EventHub/bufferLimit`` of them unread.
private final class StreamSubscriber: HubSubscriber {
    let continuation: AsyncStream<HubMessage>.Continuation

    init(_ continuation: AsyncStream<HubMessage>.Continuation) {
        self.continuation = continuation
    }

    /// A full stream drops its oldest message, so the stream is told to read every source back
    /// (which may drop one more; the notice covers that too).
    func receive(_ message: HubMessage) {
        if case .dropped = continuation.yield(message) { continuation.yield(.overflowed) }
    }

    func end() { continuation.finish() }
}

/// One subscription to every event for the whole edge, handed out to the `/v1/events` streams
/// by user: thousands of idle streams cost one socket, not thousands.
public final class EventHub: Service, Sendable {
    /// The open streams, by user and then by stream: an event reaches its user's streams
    /// without a look at anyone else's.
    private struct Listeners {
        var byUser: [String: [ObjectIdentifier: any HubSubscriber]] = [:]
        var count = 0

        var all: [any HubSubscriber] { byUser.values.flatMap(\.values) }
    }

    private let bus: Bus
    private let logger: Logger
    private let limits: Limits
    private let listeners = Mutex(Listeners())
    /// Messages a chat answer's listener may hold unread before it is told to resync instead.
    static let bufferLimit = 256

    /// How many streams the edge keeps open, in all and for one user: each holds a connection,
    /// so a client that opens them without end is refused instead.
    public struct Limits: Sendable {
        public var streams: Int
        public var streamsPerUser: Int

        public init(streams: Int, streamsPerUser: Int) {
            self.streams = streams
            self.streamsPerUser = streamsPerUser
        }
    }

    init(bus: Bus, limits: Limits, logger: Logger) {
        self.bus = bus
        self.limits = limits
        self.logger = logger
    }

    /// Every topic a contract declares, templates (`ai.stream.<requestId>`) by their fixed
    /// start: what the broker lets an edge key subscribe to (docs/wire-protocol.md, Addition 12).
    static let topics = Catalog.contracts.flatMap { $0.topics.map { String($0.name.prefix { $0 != "<" }) } }

    /// How often every stream is told to write a comment (``HubMessage/keepAlive``), so that
    /// proxies keep an idle connection and a gone client is noticed.
    static let keepAliveInterval: Duration = .seconds(15)

    /// Subscribes until graceful shutdown, then ends every stream. One ticker tells every stream
    /// when to write its keep-alive comment: a timer per stream would cost each idle stream a task.
    public func run() async throws {
        let subscription = try bus.subscribe(Self.topics)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while (try? await Task.sleep(for: Self.keepAliveInterval)) != nil { self.broadcast(.keepAlive) }
                }
                for await event in subscription { self.deliver(event) }
                group.cancelAll()
            }
        }
        let all = listeners.withLock { listeners in
            defer { listeners = Listeners() }
            return listeners.all
        }
        for subscriber in all { subscriber.end() }
    }

    /// The messages for `user` from now on, as a stream; the listener is gone when its stream
    /// ends (finished, or no longer iterated).
    /// - Throws: `RESOURCE_EXHAUSTED` as ``add(_:user:)`` does.
    func listen(user: String) throws(BusError) -> HubListener {
        let (stream, continuation) = AsyncStream.makeStream(of: HubMessage.self, bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        let subscriber = StreamSubscriber(continuation)
        try add(subscriber, user: user)
        continuation.onTermination = { [weak self] _ in self?.remove(subscriber, user: user) }
        return HubListener(messages: stream, continuation: continuation)
    }

    /// Hands `user`'s messages to `subscriber` from now on, until ``remove(_:user:)``.
    /// - Throws: `RESOURCE_EXHAUSTED` when the edge or this user has as many streams open as
    ///   ``Limits`` allows.
    func add(_ subscriber: any HubSubscriber, user: String) throws(BusError) {
        let refusal: BusError? = listeners.withLock { listeners in
            let mine = listeners.byUser[user]?.count ?? 0
            if mine >= limits.streamsPerUser {
                return BusError(
                    .resourceExhausted, "this user has \(mine) event streams open, as many as the edge keeps for one user; close one first",
                    details: .object(["limit": .int(Int64(limits.streamsPerUser)), "setting": .string("EDGE_MAX_EVENT_STREAMS_PER_USER")]))
            }
            if listeners.count >= limits.streams {
                return BusError(
                    .resourceExhausted, "the edge has \(listeners.count) event streams open, as many as it keeps; try again later",
                    details: .object(["limit": .int(Int64(limits.streams)), "setting": .string("EDGE_MAX_EVENT_STREAMS")]))
            }
            listeners.byUser[user, default: [:]][ObjectIdentifier(subscriber)] = subscriber
            listeners.count += 1
            return nil
        }
        if let refusal { throw refusal }
    }

    /// Stops handing messages to `subscriber`; nothing if it was not added or is gone already.
    func remove(_ subscriber: any HubSubscriber, user: String) {
        listeners.withLock { listeners in
            guard listeners.byUser[user]?.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else { return }
            listeners.count -= 1
            if listeners.byUser[user]?.isEmpty == true { listeners.byUser[user] = nil }
        }
    }

    /// How many streams listen (for tests, logs and the benchmark).
    public var listenerCount: Int { listeners.withLock { $0.count } }

    private func broadcast(_ message: HubMessage) {
        for subscriber in listeners.withLock({ $0.all }) { subscriber.receive(message) }
    }

    private func deliver(_ event: BusEvent) {
        let source = event.header.source
        let user = event.header.user
        // A gap concerns every stream: each rereads the source; the event itself goes to its user's.
        let targets: [(user: String, subscriber: any HubSubscriber)] = listeners.withLock { listeners in
            if event.gap != nil {
                return listeners.byUser.flatMap { owner, streams in streams.values.map { (owner, $0) } }
            }
            guard let user, let streams = listeners.byUser[user] else { return [] }
            return streams.values.map { (user, $0) }
        }
        for target in targets {
            if event.gap != nil {
                target.subscriber.receive(.resync(source: source))
                if user != target.user { continue }
            }
            target.subscriber.receive(.event(event))
        }
    }
}
