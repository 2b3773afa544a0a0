import ArgumentParser
import Bus
import Foundation
import Wire

extension BusCtl {
    struct Tail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print live events and, with --rpc, live calls.",
            discussion: """
            Patterns are NATS-style: '*' matches one token, '>' the rest; no pattern means every
            event. Each line shows the time, the topic, the publishing stream and its seq, the user
            and a one-line payload preview; with --rpc each finished call shows service/method,
            status, latency and sizes. A missed stretch of a stream (a seq gap) is reported on
            standard error.

            Examples:
              busctl tail                       every event
              busctl tail 'timer.*' 'review.>'  timer and review events
              busctl tail --rpc                 every call as it finishes
              busctl tail --json 'material.*'   one JSON object per line
            """)

        @Argument(help: "Topic patterns, e.g. timer.* or material.>; default: every event.") var patterns: [String] = []
        @Flag(help: "Show calls (the broker's bus.rpc events).") var rpc = false
        @Flag(help: "One JSON object per line: topic, header, payload.") var json = false
        @Flag(help: "Leave out payloads.") var headersOnly = false
        @Option(help: "Exit after this many lines.") var count: Int?
        @OptionGroup var endpoints: EndpointOptions

        func validate() throws {
            for pattern in patterns {
                do { _ = try SubjectPattern(pattern) } catch { throw ValidationError(error.description) }
            }
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        }

        func run() async throws {
            var matchers = try patterns.map { try SubjectPattern($0) }
            if rpc { matchers.append(try SubjectPattern(BrokerProtocol.rpc.name)) }
            if matchers.isEmpty && !rpc { matchers = [try SubjectPattern(">")] }
            let prefixes = Array(Set(matchers.map(\.subscriptionPrefix)))
            try await withBus(endpoints, json: json) { bus in
                var printed = 0
                for await event in try bus.subscribe(prefixes) {
                    guard matchers.contains(where: { $0.matches(event.topic) }) else { continue }
                    if event.topic == BrokerProtocol.rpc.name && !rpc && !patterns.contains(where: { $0.hasPrefix("bus") }) { continue }
                    if let gap = event.gap { Output.warning("!! \(gap)") }
                    Output.line(format(event))
                    printed += 1
                    if let count, printed >= count { return }
                }
            }
        }

        /// One line for `event`. Everything in it but the styling comes from the publisher, so
        /// control characters are shown escaped (``Output/printable(_:)``).
        func format(_ event: BusEvent) -> String {
            if json {
                var object: [String: JSONValue] = ["topic": .string(event.topic), "header": headerJSON(event.header)]
                if !headersOnly { object["payload"] = (try? JSONValue.parse(event.payload)) ?? .string(String(decoding: event.payload, as: UTF8.self)) }
                return Output.printableJSON(JSONValue.object(object).jsonText)
            }
            let text = Output.printable
            let time = Output.dim(String(ISO8601.format(unixMilliseconds: event.header.ts).dropFirst(11).dropLast()))
            if event.topic == BrokerProtocol.rpc.name, let trace = try? event.decode(BrokerProtocol.rpc) {
                let code = StatusCode(wireValue: trace.code)
                var line = "\(time) \(Output.bold(text("\(trace.service)/\(trace.method)"))) \(Output.status(code)) \(Self.latency(trace.latencyUs))"
                line += " \(Self.bytes(trace.requestBytes))→\(Self.bytes(trace.replyBytes))"
                if let user = trace.user { line += " user=\(text(user))" }
                if trace.fromBroker { line += Output.dim(" (answered by the broker)") }
                return line + Output.dim(" id=\(text(trace.id))")
            }
            var line = "\(time) \(Output.bold(text(event.topic))) \(text(event.header.source))[\(text(event.header.instance))] seq=\(event.header.seq)"
            if let user = event.header.user { line += " user=\(text(user))" }
            if !headersOnly {
                let preview = String(decoding: event.payload, as: UTF8.self)
                line += " " + text(preview.count > 160 ? String(preview.prefix(159)) + "…" : preview)
            }
            return line
        }

        func headerJSON(_ header: EventHeader) -> JSONValue {
            var object: [String: JSONValue] = [
                "id": .string(header.id), "source": .string(header.source), "instance": .string(header.instance),
                "seq": .int(header.seq), "ts": .int(header.ts),
            ]
            if let user = header.user { object["user"] = .string(user) }
            if !header.meta.isEmpty { object["meta"] = .object(header.meta.mapValues { .string($0) }) }
            return .object(object)
        }

        static func latency(_ microseconds: Int64) -> String {
            microseconds < 1000 ? "\(microseconds)µs" : String(format: "%.1fms", Double(microseconds) / 1000)
        }

        static func bytes(_ count: Int) -> String {
            count < 1024 ? "\(count)B" : String(format: "%.1fKB", Double(count) / 1024)
        }
    }
}
