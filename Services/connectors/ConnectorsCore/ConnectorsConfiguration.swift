import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import ServiceKit
import Wire

/// connectors' settings, read from the environment in one place (docs/services/connectors.md).
public struct ConnectorsConfiguration: ServiceConfiguration {
    public static let serviceName = ConnectorsContract.serviceName

    /// The SQLite file (`connectors.sqlite` in `DATA_DIR`).
    public var databaseURL: URL
    /// The OAuth client (`CONNECTORS_GOOGLE_CLIENT_ID`, `CONNECTORS_GOOGLE_CLIENT_SECRET` or
    /// `CONNECTORS_GOOGLE_CLIENT_SECRET_FILE`). Empty: `connectors.link` is FAILED_PRECONDITION.
    public var clientID = ""
    public var clientSecret = ""
    /// The 32-byte key refresh tokens are sealed with (ChaChaPoly), from `CONNECTORS_KEY_FILE`
    /// (32 raw bytes, or 64 hex digits, or base64). Required.
    public var sealingKey: [UInt8]
    /// Google's endpoints; tests point them at a local server.
    public var tokenURL = "https://oauth2.googleapis.com/token"
    public var revokeURL = "https://oauth2.googleapis.com/revoke"
    /// The base of the Calendar (`/calendar/v3`), Gmail (`/gmail/v1`) and Drive (`/drive/v3`) APIs.
    public var apiURL = "https://www.googleapis.com"
    /// How often every active account is synced (`CONNECTORS_SYNC_INTERVAL_SECONDS`, default 900).
    public var syncInterval: Duration = .seconds(900)
    /// An access token is refreshed when it has less than this left (`CONNECTORS_REFRESH_MARGIN_SECONDS`, default 300).
    public var refreshMargin: TimeInterval = 300
    /// Requests handled at once (`CONNECTORS_CREDIT`, default 16).
    public var credit = 16
    /// One Google request's time limit (`CONNECTORS_HTTP_TIMEOUT_MS`, default 30 s).
    public var httpTimeout: Duration = .seconds(30)
    /// The largest JSON answer read (`CONNECTORS_MAX_RESPONSE_BYTES`, default 4 MiB); larger is an error.
    public var maximumResponseBytes = 4 << 20
    /// The largest mail or Drive file taken (`CONNECTORS_MAX_FILE_BYTES`, default 50 MB: ingest's limit).
    public var maximumFileBytes = StoreLimits.materialBytes
    /// Pages one source reads per sync (`CONNECTORS_MAX_PAGES`, default 20); the rest waits for the next sync.
    public var maximumPages = 20
    /// Mail messages or Drive files fetched per sync per source (`CONNECTORS_MAX_ITEMS`, default 200).
    public var maximumItems = 200
    /// Calendar's quota for the project: requests per 100 seconds (`CONNECTORS_CALENDAR_REQUESTS_PER_100S`, default 1000).
    public var calendarRequestsPer100Seconds = 1000
    /// Gmail's quota per user: units per second (`CONNECTORS_GMAIL_UNITS_PER_SECOND`, default 250).
    public var gmailUnitsPerSecond = 250
    /// Drive requests per 100 seconds for the project (`CONNECTORS_DRIVE_REQUESTS_PER_100S`, default 1000).
    public var driveRequestsPer100Seconds = 1000
    /// Back-off: retries after the first attempt (`CONNECTORS_RETRY_MAX`, default 4), the first
    /// delay (`CONNECTORS_RETRY_BASE_MS`, default 500), the longest `Retry-After` honoured
    /// (`CONNECTORS_RETRY_AFTER_MAX_MS`, default 60 s).
    public var retry = BackoffPolicy(maxRetries: 4, baseDelay: .milliseconds(500), maxDelay: .seconds(32), maxRetryAfter: .seconds(60))
    /// "Now" for token expiry and records; a seam for tests.
    public var wallClock: any WallClock = SystemWallClock()

    /// The defaults, with the database at `databaseURL` and `sealingKey`.
    public init(databaseURL: URL, sealingKey: [UInt8]) {
        self.databaseURL = databaseURL
        self.sealingKey = sealingKey
    }

    /// Reads `DATA_DIR` and the `CONNECTORS_*` variables.
    /// - Throws: `INVALID_ARGUMENT` naming a variable out of range, `FAILED_PRECONDITION` for an
    ///   unreadable or malformed key file.
    public init(environment: Environment) throws(BusError) {
        let directory = try environment.dataDirectory(service: Self.serviceName)
        guard let keyFile = environment.optionalString("CONNECTORS_KEY_FILE") else {
            throw .failedPrecondition("CONNECTORS_KEY_FILE must name a file with the 32-byte key that seals refresh tokens (e.g. `head -c 32 /dev/urandom > key`)")
        }
        self.init(databaseURL: directory.appending(path: "connectors.sqlite"), sealingKey: try SealingKey.read(file: keyFile))
        clientID = environment.string("CONNECTORS_GOOGLE_CLIENT_ID", default: "")
        if let file = environment.optionalString("CONNECTORS_GOOGLE_CLIENT_SECRET_FILE") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw .failedPrecondition("CONNECTORS_GOOGLE_CLIENT_SECRET_FILE names a file that cannot be read: \(file)")
            }
            clientSecret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            clientSecret = environment.string("CONNECTORS_GOOGLE_CLIENT_SECRET", default: "")
        }
        tokenURL = environment.string("CONNECTORS_GOOGLE_TOKEN_URL", default: "https://oauth2.googleapis.com/token")
        revokeURL = environment.string("CONNECTORS_GOOGLE_REVOKE_URL", default: "https://oauth2.googleapis.com/revoke")
        apiURL = environment.string("CONNECTORS_GOOGLE_API_URL", default: "https://www.googleapis.com")
        for (name, url) in [("CONNECTORS_GOOGLE_TOKEN_URL", tokenURL), ("CONNECTORS_GOOGLE_REVOKE_URL", revokeURL), ("CONNECTORS_GOOGLE_API_URL", apiURL)] {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw .invalidArgument("environment variable \(name) must be an http(s) URL, got '\(url)'")
            }
        }
        syncInterval = .seconds(try environment.int("CONNECTORS_SYNC_INTERVAL_SECONDS", default: 900, in: 10...86_400))
        refreshMargin = TimeInterval(try environment.int("CONNECTORS_REFRESH_MARGIN_SECONDS", default: 300, in: 0...3000))
        credit = try environment.int("CONNECTORS_CREDIT", default: 16, in: 1...1024)
        httpTimeout = try environment.milliseconds("CONNECTORS_HTTP_TIMEOUT_MS", default: .seconds(30))
        maximumResponseBytes = try environment.int("CONNECTORS_MAX_RESPONSE_BYTES", default: 4_194_304, in: 65_536...(64 << 20))
        maximumFileBytes = try environment.int("CONNECTORS_MAX_FILE_BYTES", default: 52_428_800, in: 1024...(1 << 30))
        maximumPages = try environment.int("CONNECTORS_MAX_PAGES", default: 20, in: 1...1000)
        maximumItems = try environment.int("CONNECTORS_MAX_ITEMS", default: 200, in: 1...10_000)
        calendarRequestsPer100Seconds = try environment.int("CONNECTORS_CALENDAR_REQUESTS_PER_100S", default: 1000, in: 1...1_000_000)
        gmailUnitsPerSecond = try environment.int("CONNECTORS_GMAIL_UNITS_PER_SECOND", default: 250, in: 5...1_000_000)
        driveRequestsPer100Seconds = try environment.int("CONNECTORS_DRIVE_REQUESTS_PER_100S", default: 1000, in: 1...1_000_000)
        retry.maxRetries = try environment.int("CONNECTORS_RETRY_MAX", default: 4, in: 0...20)
        retry.baseDelay = try environment.milliseconds("CONNECTORS_RETRY_BASE_MS", default: .milliseconds(500))
        retry.maxRetryAfter = try environment.milliseconds("CONNECTORS_RETRY_AFTER_MAX_MS", default: .seconds(60))
    }
}

/// The key refresh tokens are sealed with.
enum SealingKey {
    /// 32 raw bytes, 64 hex digits or base64 of 32 bytes (surrounding whitespace ignored).
    static func read(file: String) throws(BusError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw .failedPrecondition("CONNECTORS_KEY_FILE names a file that cannot be read: \(file)")
        }
        if data.count == 32 { return [UInt8](data) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.utf8.count == 64, let bytes = hex(text) { return bytes }
        if let decoded = Data(base64Encoded: text), decoded.count == 32 { return [UInt8](decoded) }
        throw .failedPrecondition("CONNECTORS_KEY_FILE must hold 32 bytes: raw, as 64 hex digits or as base64 (\(file) holds \(data.count) bytes)")
    }

    private static func hex(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = nibble(high), let l = nibble(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
