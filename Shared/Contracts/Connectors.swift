import Foundation
import Wire

// connectors: users' Google accounts (MirrorBuddy's Calendar, Gmail and Drive sources). The app
// completes Google's OAuth consent and hands the authorization code to `connectors.link`; the
// service keeps the refresh token sealed at rest and syncs incrementally into the store (calendar
// events as tasks and study sessions) and through ingest (mail as .eml, Drive files as uploads).

/// The contract of the `connectors` service; call as `bus.call(Connectors.link, …)`.
public let Connectors = ConnectorsContract()

/// The methods and events of `connectors`. Every method acts for the request header's `user`;
/// another user's account is NOT_FOUND.
public struct ConnectorsContract: ServiceContract {
    /// The service name on the bus.
    public static let serviceName = "connectors"

    /// Exchanges an authorization code for tokens and stores the account.
    public let link = Method<ConnectorLinkRequest, ConnectorAccount>(
        Self.self, "connectors.link",
        "Exchange a Google OAuth authorization code (from the app's consent) for tokens; the refresh token is kept sealed at rest. Linking the same Google account again replaces its tokens.",
        audience: .app)
    /// The user's linked accounts.
    public let list = Method<Empty, ConnectorAccountList>(
        Self.self, "connectors.list", "The user's linked accounts, oldest first, with their status and settings.", audience: .app)
    /// Revokes the grant at Google and forgets the account's tokens and cursors.
    public let unlink = Method<ConnectorRef, Empty>(
        Self.self, "connectors.unlink",
        "Revoke the account's grant at Google (best effort) and delete its tokens and sync cursors; what was synced stays.", audience: .app)
    /// Chooses what is synced.
    public let configure = Method<ConnectorConfigureRequest, ConnectorAccount>(
        Self.self, "connectors.configure",
        "Choose the calendars, the Gmail labels or query and the Drive folders an account syncs; the fields given change.", audience: .app)
    /// Syncs the account now and answers with its status.
    public let sync = Method<ConnectorRef, ConnectorStatus>(
        Self.self, "connectors.sync",
        "Sync the account now (Calendar, Gmail, Drive, incrementally) and answer with its status; joins a sync already running.", audience: .app)
    /// The account's last sync, counts and last error.
    public let status = Method<ConnectorRef, ConnectorStatus>(
        Self.self, "connectors.status", "The account's last sync per source: when, counts, the last error.", audience: .app)

    /// A sync finished (some sources may have failed: see each source's `lastError`).
    public let synced = Topic<ConnectorStatus>(Self.self, "connector.synced", "An account was synced: counts per source and any source's error.")
    /// A sync failed for the whole account; `needsReauth` when Google revoked the grant.
    public let failed = Topic<ConnectorFailed>(
        Self.self, "connector.failed", "An account could not be synced; needsReauth when the refresh token was revoked (the user must link again).")

    /// The contract; use the global ``Connectors``.
    public init() {}
}

/// The limits of connectors' methods (INVALID_ARGUMENT beyond them).
public enum ConnectorLimits {
    /// Longest authorization code, redirect URI, PKCE verifier.
    public static let maximumCodeLength = 2048
    public static let maximumRedirectURILength = 2048
    public static let maximumVerifierLength = 128
    /// Scopes in a link request, and the length of one.
    public static let maximumScopes = 20
    public static let maximumScopeLength = 256
    /// Accounts a user may link.
    public static let maximumAccounts = 5
    /// Calendars, labels and folders one account may sync, and the length of one id.
    public static let maximumSources = 20
    public static let maximumSourceIDLength = 256
    /// Longest Gmail query.
    public static let maximumQueryLength = 500
}

/// Who an account is with.
public enum ConnectorProvider: String, WireEnum {
    case google
}

/// Where an account is.
public enum ConnectorAccountState: String, WireEnum {
    /// Tokens work; syncs run.
    case active
    /// Google refused the refresh token (`invalid_grant`: revoked, expired, password changed):
    /// nothing syncs until the user links the account again.
    case needsReauth
}

/// One of the things an account syncs.
public enum ConnectorSource: String, WireEnum {
    case calendar, gmail, drive
}

/// `connectors.link`: what the app got from Google's consent screen.
public struct ConnectorLinkRequest: Codable, Sendable, Equatable {
    public var provider: ConnectorProvider
    /// The authorization code, 1...2048 characters; used once.
    public var code: String
    /// The redirect URI the consent used (Google checks it matches), 1...2048 characters.
    public var redirectUri: String
    /// The scopes the app asked for (informational; Google's answer says which were granted).
    public var scopes: [String]?
    /// The PKCE code verifier, when the app used one (43...128 characters).
    public var codeVerifier: String?

    public init(provider: ConnectorProvider = .google, code: String, redirectUri: String, scopes: [String]? = nil, codeVerifier: String? = nil) {
        self.provider = provider
        self.code = code
        self.redirectUri = redirectUri
        self.scopes = scopes
        self.codeVerifier = codeVerifier
    }
}

/// A linked account. Never carries a token.
public struct ConnectorAccount: Codable, Sendable, Equatable {
    public var id: String
    public var userId: String
    public var provider: ConnectorProvider
    /// The Google account's e-mail address, when the grant included it (`email` scope).
    public var email: String?
    /// The scopes Google granted.
    public var scopes: [String]
    public var state: ConnectorAccountState
    /// Calendars synced (default `["primary"]`).
    public var calendarIds: [String]
    /// Gmail: only messages carrying every one of these labels (as `messages.list`'s
    /// `labelIds`), and matching `gmailQuery` when it is set.
    public var gmailLabelIds: [String]
    public var gmailQuery: String?
    /// Drive folders whose files are synced (none: Drive is not synced).
    public var driveFolderIds: [String]
    public var createdAt: Date
    public var updatedAt: Date
    public var lastSyncAt: Date?
    public var lastError: String?

    public init(
        id: String, userId: String, provider: ConnectorProvider, email: String?, scopes: [String], state: ConnectorAccountState,
        calendarIds: [String], gmailLabelIds: [String], gmailQuery: String?, driveFolderIds: [String], createdAt: Date, updatedAt: Date,
        lastSyncAt: Date? = nil, lastError: String? = nil
    ) {
        self.id = id
        self.userId = userId
        self.provider = provider
        self.email = email
        self.scopes = scopes
        self.state = state
        self.calendarIds = calendarIds
        self.gmailLabelIds = gmailLabelIds
        self.gmailQuery = gmailQuery
        self.driveFolderIds = driveFolderIds
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSyncAt = lastSyncAt
        self.lastError = lastError
    }
}

/// `connectors.list`.
public struct ConnectorAccountList: Codable, Sendable, Equatable {
    public var accounts: [ConnectorAccount]
    public init(accounts: [ConnectorAccount]) { self.accounts = accounts }
}

/// One account of the caller.
public struct ConnectorRef: Codable, Sendable, Equatable {
    public var accountId: String
    public init(accountId: String) { self.accountId = accountId }
}

/// `connectors.configure`: the fields given replace the account's.
public struct ConnectorConfigureRequest: Codable, Sendable, Equatable {
    public var accountId: String
    /// Up to 20 calendar ids (`primary` or an address); empty: Calendar is not synced.
    public var calendarIds: [String]?
    /// Up to 20 Gmail label ids (`INBOX`, `Label_12`); empty with no query: Gmail is not synced.
    public var gmailLabelIds: [String]?
    /// A Gmail search (`from:teacher@school.org has:attachment`), at most 500 characters; empty clears it.
    public var gmailQuery: String?
    /// Up to 20 Drive folder ids; empty: Drive is not synced.
    public var driveFolderIds: [String]?

    public init(accountId: String, calendarIds: [String]? = nil, gmailLabelIds: [String]? = nil, gmailQuery: String? = nil, driveFolderIds: [String]? = nil) {
        self.accountId = accountId
        self.calendarIds = calendarIds
        self.gmailLabelIds = gmailLabelIds
        self.gmailQuery = gmailQuery
        self.driveFolderIds = driveFolderIds
    }
}

/// One source's state after the last sync.
public struct ConnectorSourceStatus: Codable, Sendable, Equatable {
    public var source: ConnectorSource
    /// When it last synced without error.
    public var lastSyncAt: Date?
    /// Items it holds now (events, messages, files).
    public var items: Int
    /// What the last sync changed.
    public var added: Int
    public var updated: Int
    public var removed: Int
    /// The last sync's error, nil when it succeeded.
    public var lastError: String?

    public init(source: ConnectorSource, lastSyncAt: Date? = nil, items: Int = 0, added: Int = 0, updated: Int = 0, removed: Int = 0, lastError: String? = nil) {
        self.source = source
        self.lastSyncAt = lastSyncAt
        self.items = items
        self.added = added
        self.updated = updated
        self.removed = removed
        self.lastError = lastError
    }
}

/// `connectors.status`, `connectors.sync` and `connector.synced`.
public struct ConnectorStatus: Codable, Sendable, Equatable {
    public var accountId: String
    public var userId: String
    public var state: ConnectorAccountState
    public var lastSyncAt: Date?
    public var lastError: String?
    public var sources: [ConnectorSourceStatus]

    public init(accountId: String, userId: String, state: ConnectorAccountState, lastSyncAt: Date?, lastError: String?, sources: [ConnectorSourceStatus]) {
        self.accountId = accountId
        self.userId = userId
        self.state = state
        self.lastSyncAt = lastSyncAt
        self.lastError = lastError
        self.sources = sources
    }
}

/// `connector.failed`.
public struct ConnectorFailed: Codable, Sendable, Equatable {
    public var accountId: String
    public var userId: String
    public var reason: String
    /// Google revoked the grant: tell the user to link the account again.
    public var needsReauth: Bool

    public init(accountId: String, userId: String, reason: String, needsReauth: Bool) {
        self.accountId = accountId
        self.userId = userId
        self.reason = reason
        self.needsReauth = needsReauth
    }
}

/// How a calendar entry becomes a store record, for every calendar source (an uploaded `.ics`
/// in ingest, Google Calendar in connectors): an entry marked as studying — "study", "studying",
/// "studio" (Italian) or "revision" as a category, a summary starting with one of them, or a
/// summary saying "study session" — is a study session; any other event (an exam, a lecture) a
/// task due at its start.
public enum CalendarEntryRule {
    /// Whether an event is a study session. `summary` and `categories` (comma-separated) are
    /// compared in lower case.
    public static func isStudy(summary: String, categories: String) -> Bool {
        let summary = summary.lowercased()
        let words = ["study", "studying", "studio", "revision"]
        let categoryWords = categories.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return categoryWords.contains { words.contains($0) } || words.contains { summary.hasPrefix($0) } || summary.contains("study session")
    }
}
