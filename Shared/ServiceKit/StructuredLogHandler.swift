import Bus
import Foundation
import Logging
import Synchronization
import Wire

/// One line per log event on standard output, as logfmt (`LOG_FORMAT=text`, the default) or
/// JSON (`LOG_FORMAT=json`):
///
///     2026-11-22T10:00:00.000Z info  store: worker registered service=store credit=64
///     {"ts":"2026-11-22T10:00:00.000Z","level":"info","label":"store","msg":"worker registered","service":"store"}
///
/// Values of metadata keys that look like credentials (`key`, `secret`, `token`, `password`,
/// `authorization`) are replaced by `[redacted]`, so a careless log call cannot leak them.
public struct StructuredLogHandler: LogHandler {
    public enum Format: String, Sendable { case text, json }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let format: Format
    private let sink: LogSink

    public init(label: String, level: Logger.Level, format: Format, sink: LogSink = .standardOutput) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let line = format == .json
            ? jsonLine(level: event.level, message: "\(event.message)", metadata: merged)
            : textLine(level: event.level, message: "\(event.message)", metadata: merged)
        sink.write(line)
    }

    static func isSecret(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return ["secret", "token", "password", "authorization", "apikey", "api_key", "key"].contains { lowered == $0 || lowered.hasSuffix($0) }
    }

    private func render(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .dictionary(let members): "{" + members.sorted { $0.key < $1.key }.map { "\($0.key)=\(render($0.value))" }.joined(separator: ",") + "}"
        }
    }

    private func textLine(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = ISO8601.format(Date()) + " " + level.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
            + label + ": " + message.replacingOccurrences(of: "\n", with: "\\n")
        for key in metadata.keys.sorted() {
            let value = Self.isSecret(key) ? "[redacted]" : render(metadata[key]!)
            let needsQuotes = value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline })
            line += " \(key)=" + (needsQuotes ? JSONValue.string(value).jsonText : value)
        }
        return line + "\n"
    }

    private func jsonLine(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var object: [String: JSONValue] = [
            "ts": .string(ISO8601.format(Date())), "level": .string(level.rawValue), "label": .string(label), "msg": .string(message),
        ]
        for (key, value) in metadata where object[key] == nil {
            object[key] = .string(Self.isSecret(key) ? "[redacted]" : render(value))
        }
        return JSONValue.object(object).jsonText + "\n"
    }
}

/// Where log lines go; writes of whole lines are serialized so lines never interleave.
public final class LogSink: Sendable {
    private let write: @Sendable (String) -> Void

    public init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

    public func write(_ line: String) { write(line) }

    /// Standard output, one `write(2)` per line.
    public static let standardOutput: LogSink = {
        let lock = Mutex(())
        return LogSink { line in
            lock.withLock { _ in
                var line = line
                line.withUTF8 { bytes in _ = Glibc.write(1, bytes.baseAddress, bytes.count) }
            }
        }
    }()

    /// Keeps lines in memory; for tests.
    public static func memory() -> (LogSink, @Sendable () -> [String]) {
        let lines = Mutex<[String]>([])
        return (LogSink { line in lines.withLock { $0.append(line) } }, { lines.withLock { $0 } })
    }
}
