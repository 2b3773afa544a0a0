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

/// One `GET /v1/events` connection: the caller's own events from every durable producer the
/// edge routes to, stored ones first (after `Last-Event-ID`), then live ones, never twice.
struct EventStream {
    let bus: Bus
    let listener: HubListener
    let user: String
    let logger: Logger
    var sources: Set<String>
    var cursor: EventCursor
    /// Sources whose stored events after the cursor have all been sent.
    private var caughtUp: Set<String> = []

    static let replayPage = 500

    init(bus: Bus, listener: HubListener, user: String, logger: Logger, sources: Set<String>, cursor: EventCursor) {
        self.bus = bus
        self.listener = listener
        self.user = user
        self.logger = logger
        self.sources = sources
        self.cursor = cursor
    }

    /// Writes events until the client goes away (a write fails) or the edge stops.
    mutating func run(_ writer: inout any ResponseBodyWriter) async throws {
        defer { listener.continuation.finish() }
        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
        for source in sources.sorted() { try await catchUp(source, &writer) }
        for await message in listener.messages {
            switch message {
            case .keepAlive:
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
            case .resync(let source) where sources.contains(source):
                caughtUp.remove(source)
                try await catchUp(source, &writer)
            case .overflowed:
                caughtUp.removeAll()
                for source in sources.sorted() { try await catchUp(source, &writer) }
            case .resync, .replied:
                break
            case .event(let event):
                let source = event.header.source
                guard sources.contains(source) else { continue }
                // Until its stored events are all sent, a source's live ones come by replay.
                guard caughtUp.contains(source) else {
                    try await catchUp(source, &writer)
                    continue
                }
                guard let position = cursor.positions[source], position.instance == EventCursor.fingerprint(event.header.instance),
                      event.header.seq > position.seq
                else { continue }
                cursor.positions[source]?.seq = event.header.seq
                try await send(topic: event.topic, header: event.header, payload: event.payload, &writer)
            }
        }
    }

    /// Sends `source`'s stored events of this user after the cursor, page by page. A producer
    /// without a durable stream is dropped; one that does not answer is tried again with its
    /// next live event.
    private mutating func catchUp(_ source: String, _ writer: inout any ResponseBodyWriter) async throws {
        var position = cursor.positions[source]
        while true {
            let page: ReplayResponse
            do {
                page = try await bus.call(
                    Reserved.eventsReplay(source), ReplayRequest(after: position?.seq ?? 0, limit: Self.replayPage),
                    options: CallOptions(user: user, timeout: .seconds(10)))
            } catch where error.code == .unimplemented {
                sources.remove(source)
                return
            } catch {
                logger.debug("events: cannot catch up yet", metadata: ["source": "\(source)", "error": "\(error.message)"])
                return
            }
            let instance = EventCursor.fingerprint(page.instance ?? source)
            if position?.instance != instance {
                // Another stream than the cursor's (its database was replaced): its seqs mean
                // nothing here, so read it from its start.
                let restart = (position?.seq ?? 0) > 0
                position = EventCursor.Position(instance: instance, seq: 0)
                if restart { continue }
            }
            for event in page.events where event.header.seq > position!.seq {
                position!.seq = event.header.seq
                cursor.positions[source] = position
                try await send(topic: event.topic, header: event.header, payload: event.payload.jsonData, &writer)
            }
            cursor.positions[source] = position
            if page.events.count < Self.replayPage {
                caughtUp.insert(source)
                return
            }
        }
    }

    /// One SSE event: `id` (the cursor after it), `event` (the topic) and `data`, a JSON object
    /// with the topic, source, seq, ts and payload.
    private func send(topic: String, header: EventHeader, payload: Data, _ writer: inout any ResponseBodyWriter) async throws {
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
        try await writer.write(buffer)
    }
}
