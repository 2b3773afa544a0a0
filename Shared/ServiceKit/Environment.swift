import Bus
import Foundation
import Logging
import Storage
import Wire

/// Typed reads of configuration from environment variables, with errors that name the variable.
public struct Environment: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    /// The value, or `defaultValue` when unset or empty.
    public func string(_ name: String, default defaultValue: String) -> String {
        guard let value = values[name], !value.isEmpty else { return defaultValue }
        return value
    }

    /// The value, or nil when unset or empty.
    public func optionalString(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    /// An integer within `range`.
    /// - Throws: `INVALID_ARGUMENT` naming the variable and the range.
    public func int(_ name: String, default defaultValue: Int, in range: ClosedRange<Int> = 0...Int.max) throws(BusError) -> Int {
        guard let text = values[name], !text.isEmpty else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidArgument("environment variable \(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// A duration given in milliseconds.
    public func milliseconds(_ name: String, default defaultValue: Duration) throws(BusError) -> Duration {
        guard values[name]?.isEmpty == false else { return defaultValue }
        return .milliseconds(try int(name, default: 0, in: 1...Int(Int32.max)))
    }

    /// A boolean: `1/true/yes/on` or `0/false/no/off`.
    public func bool(_ name: String, default defaultValue: Bool) throws(BusError) -> Bool {
        guard let text = values[name]?.lowercased(), !text.isEmpty else { return defaultValue }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw .invalidArgument("environment variable \(name) must be true or false, got '\(text)'")
        }
    }

    /// `LOG_LEVEL`: trace, debug, info (default), notice, warning, error, critical.
    public func logLevel() throws(BusError) -> Logger.Level {
        let text = string("LOG_LEVEL", default: "info").lowercased()
        guard let level = Logger.Level(rawValue: text) else {
            throw .invalidArgument("environment variable LOG_LEVEL must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return level
    }

    /// `LOG_FORMAT`: text (default) or json.
    public func logFormat() throws(BusError) -> StructuredLogHandler.Format {
        let text = string("LOG_FORMAT", default: "text").lowercased()
        guard let format = StructuredLogHandler.Format(rawValue: text) else {
            throw .invalidArgument("environment variable LOG_FORMAT must be text or json, got '\(text)'")
        }
        return format
    }

    /// `BACKUP_MIN_FREE_BYTES`: the free disk a `_backup` copy must leave (default 256 MiB);
    /// read by every process, used by those that own data.
    public func backupPolicy() throws(BusError) -> BackupPolicy {
        BackupPolicy(minimumFreeBytes: Int64(try int("BACKUP_MIN_FREE_BYTES", default: 268_435_456, in: 0...Int(Int64.max))))
    }

    /// `SQLITE_MEMORY_LIMIT_MB`: the memory SQLite may hold across the process's connections
    /// before it reuses cached pages (0, the default: no limit beyond each connection's cache).
    public func sqliteMemoryLimitMebibytes() throws(BusError) -> Int {
        try int("SQLITE_MEMORY_LIMIT_MB", default: 0, in: 0...65536)
    }

    /// `DATA_DIR` (default `./.data/<service>`), created if missing.
    public func dataDirectory(service: String) throws(BusError) -> URL {
        let path = string("DATA_DIR", default: ".data/\(service)")
        let url = URL(fileURLWithPath: path, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw .failedPrecondition("cannot create DATA_DIR \(path): \(error.localizedDescription)")
        }
        return url
    }
}
