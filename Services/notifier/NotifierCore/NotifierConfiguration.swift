import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import Wire

/// The notifier's settings, read from the environment in one place (docs/services/notifier.md).
public struct NotifierConfiguration: ServiceConfiguration {
    public static let serviceName = NotifierContract.serviceName

    /// The SQLite file (`notifier.sqlite` in `DATA_DIR`).
    public var databaseURL: URL
    /// Alarm repeats per completed timer (QuickLabelTimer: 12, ids `{timerId}_0` … `_11`).
    public var alarmRepeats = 12
    /// Time between two alarm repeats (`NOTIFIER_ALARM_INTERVAL_MS`, default 5 s: 12 rings in a minute).
    public var alarmInterval: Duration = .seconds(5)
    /// At most one reminder push per user per window (`NOTIFIER_REMINDER_WINDOW_SECONDS`, default 1 h).
    public var reminderWindow: Duration = .seconds(3600)
    /// First retry delay; doubles per attempt, with jitter (`NOTIFIER_RETRY_BASE_MS`, default 1 s).
    public var retryBase: Duration = .seconds(1)
    /// Longest retry delay (`NOTIFIER_RETRY_MAX_MS`, default 6 h).
    public var retryMaximum: Duration = .seconds(6 * 3600)
    /// Attempts per delivery before it fails (`NOTIFIER_MAX_ATTEMPTS`, default 24: with the
    /// defaults the retries span about two days, as Standard Webhooks recommends).
    public var maximumAttempts = 24
    /// An endpoint failing without a success for this long is disabled and its user told
    /// (`NOTIFIER_DISABLE_AFTER_HOURS`, default 120 = 5 days).
    public var disableAfter: Duration = .seconds(120 * 3600)
    /// Timeout of one HTTP attempt (`NOTIFIER_HTTP_TIMEOUT_MS`, default 15 s).
    public var httpTimeout: Duration = .seconds(15)
    /// Bytes of an answer's body read at most; the rest is not read (`NOTIFIER_HTTP_MAX_RESPONSE_BYTES`, default 4096).
    public var httpMaximumResponseBytes = 4096
    /// Networks webhooks and ntfy topics may reach besides public addresses
    /// (`NOTIFIER_ALLOWED_NETWORKS`, CIDRs separated by commas; default none: public addresses only).
    public var allowedNetworks: [IPNetwork] = []
    /// Deliveries in flight at once (`NOTIFIER_MAX_IN_FLIGHT`, default 512).
    public var maximumInFlight = 512
    /// Deliveries in flight at once to one channel (`NOTIFIER_MAX_IN_FLIGHT_PER_CHANNEL`, default 64).
    public var maximumInFlightPerChannel = 64
    /// How often the dispatcher looks for due work without being woken (milliseconds).
    public var pollInterval: Duration = .milliseconds(100)
    /// How often the event consumer asks producers for missed events.
    public var catchUpInterval: Duration = .seconds(5)
    /// APNs, when configured.
    public var apns: APNsConfiguration?
    /// "Now" for notifications, deliveries and APNs tokens; a seam for tests.
    public var wallClock: any WallClock = SystemWallClock()

    /// The defaults, with the database at `databaseURL`.
    public init(databaseURL: URL) {
        self.databaseURL = databaseURL
    }

    /// Reads `DATA_DIR`, the `NOTIFIER_*` variables and, when `NOTIFIER_APNS_KEY_FILE` is set, the APNs key.
    /// - Throws: `INVALID_ARGUMENT` naming the variable that is out of range or unreadable.
    public init(environment: Environment) throws(BusError) {
        self.init(databaseURL: try environment.dataDirectory(service: Self.serviceName).appending(path: "notifier.sqlite"))
        alarmInterval = try environment.milliseconds("NOTIFIER_ALARM_INTERVAL_MS", default: alarmInterval)
        reminderWindow = .seconds(try environment.int("NOTIFIER_REMINDER_WINDOW_SECONDS", default: 3600, in: 0...86_400))
        retryBase = try environment.milliseconds("NOTIFIER_RETRY_BASE_MS", default: retryBase)
        retryMaximum = try environment.milliseconds("NOTIFIER_RETRY_MAX_MS", default: retryMaximum)
        maximumAttempts = try environment.int("NOTIFIER_MAX_ATTEMPTS", default: 24, in: 1...100)
        disableAfter = .seconds(try environment.int("NOTIFIER_DISABLE_AFTER_HOURS", default: 120, in: 1...8760) * 3600)
        httpTimeout = try environment.milliseconds("NOTIFIER_HTTP_TIMEOUT_MS", default: httpTimeout)
        httpMaximumResponseBytes = try environment.int("NOTIFIER_HTTP_MAX_RESPONSE_BYTES", default: 4096, in: 256...1_048_576)
        allowedNetworks = try IPNetwork.list(environment.optionalString("NOTIFIER_ALLOWED_NETWORKS"), variable: "NOTIFIER_ALLOWED_NETWORKS")
        maximumInFlight = try environment.int("NOTIFIER_MAX_IN_FLIGHT", default: 512, in: 1...10_000)
        maximumInFlightPerChannel = try environment.int("NOTIFIER_MAX_IN_FLIGHT_PER_CHANNEL", default: 64, in: 1...10_000)
        apns = try APNsConfiguration(environment: environment)
    }
}

/// How to reach Apple's push service: provider-token (JWT) authentication with a `.p8` key.
public struct APNsConfiguration: Sendable {
    /// `https://api.push.apple.com` (production) or `https://api.sandbox.push.apple.com`.
    public var host: String
    /// The PEM text of the `.p8` signing key (ES256, P-256).
    public var privateKeyPEM: String
    /// The key's 10-character id from the developer account (`kid`).
    public var keyID: String
    /// The team id (`iss`).
    public var teamID: String
    /// The default `apns-topic` (the app's bundle id).
    public var topic: String
    /// A PEM file of CAs to trust instead of the system's (tests).
    public var caFile: String?
    /// A provider token is re-signed after this age; Apple wants 20 to 60 minutes.
    public var tokenRefresh: Duration = .seconds(50 * 60)

    public init(host: String, privateKeyPEM: String, keyID: String, teamID: String, topic: String, caFile: String? = nil,
                tokenRefresh: Duration = .seconds(50 * 60)) {
        self.host = host
        self.privateKeyPEM = privateKeyPEM
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.caFile = caFile
        self.tokenRefresh = tokenRefresh
    }

    /// Reads `NOTIFIER_APNS_*`; nil when `NOTIFIER_APNS_KEY_FILE` is unset (APNs off).
    init?(environment: Environment) throws(BusError) {
        guard let keyFile = environment.optionalString("NOTIFIER_APNS_KEY_FILE") else { return nil }
        let pem: String
        do {
            pem = try String(contentsOfFile: keyFile, encoding: .utf8)
        } catch {
            throw .invalidArgument("environment variable NOTIFIER_APNS_KEY_FILE names a file that cannot be read: \(keyFile)")
        }
        guard let keyID = environment.optionalString("NOTIFIER_APNS_KEY_ID"),
              let teamID = environment.optionalString("NOTIFIER_APNS_TEAM_ID"),
              let topic = environment.optionalString("NOTIFIER_APNS_TOPIC")
        else {
            throw .invalidArgument("NOTIFIER_APNS_KEY_ID, NOTIFIER_APNS_TEAM_ID and NOTIFIER_APNS_TOPIC are required with NOTIFIER_APNS_KEY_FILE")
        }
        let minutes = try environment.int("NOTIFIER_APNS_TOKEN_REFRESH_MINUTES", default: 50, in: 20...59)
        self.init(
            host: environment.string("NOTIFIER_APNS_HOST", default: "https://api.push.apple.com"), privateKeyPEM: pem, keyID: keyID,
            teamID: teamID, topic: topic, caFile: environment.optionalString("NOTIFIER_APNS_CA_FILE"), tokenRefresh: .seconds(minutes * 60))
    }
}
