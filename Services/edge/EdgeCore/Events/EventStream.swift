import Bus
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import Wire

/// Where a `/v1/events` stream stands in each producer's durable stream: the SSE `id` of every
/// event it sends, so that a client reconnecting with `Last-Event-ID` resumes after exactly
/// what it had, through the producers' `_events.replay`.
///
/// Written `store:1a2b3c4d:12,timer-ticker:5e6f7a8b:3`: source, a fingerprint of the stream's
/// `instance` (a producer whose database was replaced starts again from 0) and the last `seq`.
struct EventCursor: Equatable, Sendable {
    struct Position: Equatable, Sendable {
        var instance: String
        var seq: Int64
    }

    var positions: [String: Position] = [:]

    static let maximumIDBytes = 1024

    init() {}

    /// Reads a `Last-Event-ID`, keeping the positions of `sources` only.
    /// - Throws: `INVALID_ARGUMENT` for one that is not of the form the edge writes.
    init(lastEventID: String, sources: Set<String>) throws(BusError) {
        let invalid = BusError.invalidArgument("header 'Last-Event-ID' is not an id this edge sent", details: .object(["field": .string("Last-Event-ID")]))
        guard lastEventID.utf8.count <= Self.maximumIDBytes else { throw invalid }
        for entry in lastEventID.split(separator: ",") {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1].count == 8, let seq = Int64(parts[2]), (0...WireLimits.maximumSeq).contains(seq) else { throw invalid }
            if sources.contains(String(parts[0])) { positions[String(parts[0])] = Position(instance: String(parts[1]), seq: seq) }
        }
    }

    var id: String {
        positions.keys.sorted().map { "\($0):\(positions[$0]!.instance):\(positions[$0]!.seq)" }.joined(separator: ",")
    }

    /// A short, stable fingerprint of a stream's `instance`.
    static func fingerprint(_ instance: String) -> String {
        SHA256.hash(data: Array(instance.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}

/// What every `/v1/events` stream of the edge shares: the bus it reads stored events from, the
/// hub that hands it live ones, and how a request is admitted.
struct EventStreams: Sendable {
    let bus: Bus
    let hub: EventHub
    let admission: Admission
    let cors: CORS
    /// The durable producers the edge routes to.
    let sources: Set<String>
    let logger: Logger

    static let path = "/v1/events"

    /// Whether `head` asks for an event stream: `GET /v1/events`, with or without a query.
    static func isEventStream(_ head: HTTPRequest) -> Bool {
        head.method == .get && head.path.map { $0.prefix { $0 != "?" } == path } == true
    }

    /// Admits `head` (token, rate limit, `Last-Event-ID`, the streams' limits) and registers its
    /// stream with the hub, or says how to refuse it.
    func open(_ head: HTTPRequest, output: EventStreamHandler.Output) async -> Result<EventStream, ErrorAnswer> {
        let user: String
        switch await admission.user(authorization: head.headerFields[.authorization]) {
        case .success(let admitted): user = admitted
        case .failure(let refusal): return .failure(refusal)
        }
        var cursor = EventCursor()
        do throws(BusError) {
            if let lastEventID = head.headerFields[.lastEventID] {
                cursor = try EventCursor(lastEventID: lastEventID, sources: sources)
            }
            let stream = EventStream(shared: self, user: user, cursor: cursor, output: output)
            try hub.add(stream, user: user)
            return .success(stream)
        } catch {
            return .failure(ErrorAnswer(error))
        }
    }
}

/// One `GET /v1/events` stream: the caller's own events from every durable producer the edge
/// routes to, stored ones first (after `Last-Event-ID`), then live ones, never twice.
///
/// Event-driven, without a task of its own while it waits: an idle stream costs its
/// connection and this object. Stored events are read back by short-lived tasks
/// (`_events.replay`, a page at a time) and written, like live ones, on the connection's event
/// loop; a client that does not read is not written to, and is caught up from its cursor once
/// it reads again.
final class EventStream: HubSubscriber, @unchecked Sendable {
    // @unchecked: every mutable property is read and written on `output.eventLoop` only: the
    // hub's messages and the replay tasks' pages hop there, and the handler calls from there.
    let shared: EventStreams
    let user: String
    private let output: EventStreamHandler.Output
    private var sources: Set<String>
    private var cursor: EventCursor
    /// Sources whose stored events after the cursor have all been sent.
    private var caughtUp: Set<String> = []
    /// Sources being read back, and those to read back again when that ends (an event came meanwhile).
    private var replaying: Set<String> = []
    private var replayAgain: Set<String> = []
    /// Reads back that failed in a row, per source: the next try waits 1, 2, 4 … 30 s.
    private var failedReplays: [String: Int] = [:]
    private var started = false
    private var ended = false

    static let replayPage = 500

    init(shared: EventStreams, user: String, cursor: EventCursor, output: EventStreamHandler.Output) {
        self.shared = shared
        self.user = user
        self.output = output
        sources = shared.sources
        self.cursor = cursor
    }

    private var eventLoop: any EventLoop { output.eventLoop }

    /// Writes the stream's first bytes and reads every source back. On the event loop.
    func start() {
        eventLoop.assertInEventLoop()
        started = true
        output.write(ByteBuffer(string: "retry: 2000\n\n"), flush: true)
        for source in sources.sorted() { replay(source) }
    }

    /// The client is gone or the edge stops: no more writes, no more messages.
    func close() {
        eventLoop.assertInEventLoop()
        guard !ended else { return }
        ended = true
        shared.hub.remove(self, user: user)
    }

    /// The connection can take writes again: what was not written meanwhile is read back.
    func writable() {
        eventLoop.assertInEventLoop()
        guard started, !ended else { return }
        for source in sources.sorted() where !caughtUp.contains(source) { replay(source) }
    }

    // MARK: The hub's messages

    func receive(_ message: HubMessage) {
        eventLoop.execute { self.handle(message) }
    }

    func end() {
        eventLoop.execute {
            self.close()
            self.output.close()
        }
    }

    private func handle(_ message: HubMessage) {
        // Before the start, the start's replay brings what came: events are stored before they are published.
        guard started, !ended else { return }
        switch message {
        case .keepAlive:
            if output.isWritable { output.write(ByteBuffer(string: ": keep-alive\n\n"), flush: true) }
        case .resync(let source) where sources.contains(source):
            caughtUp.remove(source)
            replay(source)
        case .overflowed:
            caughtUp.removeAll()
            for source in sources.sorted() { replay(source) }
        case .resync, .replied:
            break
        case .event(let event):
            let source = event.header.source
            guard sources.contains(source) else { return }
            // Until its stored events are all sent, a source's live ones come by replay.
            guard caughtUp.contains(source) else { return replay(source) }
            guard let position = cursor.positions[source], position.instance == EventCursor.fingerprint(event.header.instance),
                  event.header.seq > position.seq
            else { return }
            guard output.isWritable else {
                // Not written now: read back from the cursor once the client reads again.
                caughtUp.remove(source)
                return
            }
            cursor.positions[source]?.seq = event.header.seq
            output.write(frame(topic: event.topic, header: event.header, payload: event.payload), flush: true)
        }
    }

    // MARK: Reading back

    /// Reads `source`'s stored events of this user after the cursor, a page at a time, unless
    /// a read of it is on its way (then once more after it).
    private func replay(_ source: String) {
        guard !ended else { return }
        guard !replaying.contains(source) else {
            replayAgain.insert(source)
            return
        }
        replaying.insert(source)
        fetch(source, after: cursor.positions[source]?.seq ?? 0)
    }

    private func fetch(_ source: String, after seq: Int64) {
        let bus = shared.bus, options = CallOptions(user: user, timeout: .seconds(10))
        Task {
            let page: Result<ReplayResponse, BusError>
            do throws(BusError) {
                page = .success(try await bus.call(Reserved.eventsReplay(source), ReplayRequest(after: seq, limit: Self.replayPage), options: options))
            } catch {
                page = .failure(error)
            }
            self.eventLoop.execute { self.apply(page, of: source) }
        }
    }

    /// Writes a page of `source`'s stored events and reads on, until a page is not full. A
    /// producer without a durable stream is dropped; one that does not answer is read back
    /// again with its next live event or after a pause, whichever comes first: a stream whose
    /// producer has nothing new to send must not wait for an event to catch up.
    private func apply(_ result: Result<ReplayResponse, BusError>, of source: String) {
        guard !ended else { return }
        let page: ReplayResponse
        switch result {
        case .success(let answer):
            page = answer
            failedReplays[source] = nil
        case .failure(let error) where error.code == .unimplemented:
            sources.remove(source)
            return finishReplay(source, caughtUp: false)
        case .failure(let error):
            let failures = failedReplays[source, default: 0] + 1
            failedReplays[source] = failures
            let pause = TimeAmount.seconds(Int64(min(30, 1 << min(failures - 1, 5))))
            shared.logger.debug("events: cannot catch up yet", metadata: [
                "source": "\(source)", "error": "\(error.message)", "retryInSeconds": "\(pause.nanoseconds / 1_000_000_000)",
            ])
            finishReplay(source, caughtUp: false)
            eventLoop.scheduleTask(in: pause) { if !self.caughtUp.contains(source) { self.replay(source) } }
            return
        }
        let instance = EventCursor.fingerprint(page.instance ?? source)
        var position = cursor.positions[source]
        if position?.instance != instance {
            // Another stream than the cursor's (its database was replaced): its seqs mean
            // nothing here, so read it from its start.
            let restart = (position?.seq ?? 0) > 0
            cursor.positions[source] = EventCursor.Position(instance: instance, seq: 0)
            if restart { return fetch(source, after: 0) }
            position = cursor.positions[source]
        }
        for event in page.events where event.header.seq > position!.seq {
            position!.seq = event.header.seq
            cursor.positions[source] = position
            output.write(frame(topic: event.topic, header: event.header, payload: event.payload.jsonData), flush: false)
        }
        output.flush()
        if page.events.count == Self.replayPage {
            // More to read: on when the client has taken this page, else when it reads again.
            if output.isWritable { return fetch(source, after: position!.seq) }
            return finishReplay(source, caughtUp: false)
        }
        finishReplay(source, caughtUp: true)
    }

    private func finishReplay(_ source: String, caughtUp done: Bool) {
        replaying.remove(source)
        if done { caughtUp.insert(source) }
        if replayAgain.remove(source) != nil { replay(source) }
    }

    /// One SSE event: `id` (the cursor after it), `event` (the topic) and `data`, a JSON object
    /// with the topic, source, seq, ts and payload.
    private func frame(topic: String, header: EventHeader, payload: Data) -> ByteBuffer {
        var data = Data(#"{"topic":"#.utf8)
        data += JSONValue.string(topic).jsonData
        data += Data(#","source":"#.utf8) + JSONValue.string(header.source).jsonData
        data += Data(#","seq":\#(header.seq),"ts":\#(header.ts),"payload":"#.utf8)
        data += payload.isEmpty ? Data("null".utf8) : payload
        data += Data("}".utf8)
        var buffer = ByteBuffer(string: "id: \(cursor.id)\nevent: \(topic)\ndata: ")
        // Compact JSON has no raw line breaks; a payload that somehow had one would end the field.
        buffer.writeBytes(data.map { $0 == 10 || $0 == 13 ? 32 : $0 })
        buffer.writeString("\n\n")
        return buffer
    }
}
