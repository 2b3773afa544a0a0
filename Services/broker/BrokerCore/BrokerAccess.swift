import Bus
import Foundation
import Wire

/// What each key the broker admits may do on the bus: the allowlist (`BUS_ALLOWLIST`) read into
/// the lookups the broker makes for every message, and the rules of each role
/// (docs/operations.md, "Keys and roles").
///
/// | role | serve (READY) | publish | subscribe |
/// |---|---|---|---|
/// | `service NAME` | `NAME` only | the topics NAME's contract declares | declared topics, exactly |
/// | `operator` | nothing | anything | anything, `bus.rpc` included |
/// | `edge` | nothing | nothing | declared topics, exactly; `ai.stream.` streams |
/// | `user` | nothing | nothing | nothing (its events reach it through the edge) |
///
/// Calls are for every role; the called service checks the method's audience against the
/// `caller` the broker stamps, and the broker itself refuses a `user` key naming another user.
struct BrokerAccess {
    /// What one admitted key may do, found with one hash lookup per message by the key's Z85
    /// text, which is the `User-Id` the ZAP handler gives its connections.
    struct Key {
        let identity: BusIdentity
        /// The `caller` member the broker appends to this key's requests.
        let callerMember: [UInt8]
        /// The topics it may publish: its service's, every topic for an operator, none for others.
        let publishes: TopicRules.Names?

        /// Why this key may not register as a worker for `service`, if it may not.
        func readyRefusal(service: String) -> String? {
            guard identity.role == .service else { return "\(identity.role.withArticle) key may not serve any service" }
            guard identity.name == service else { return "the key of service \(identity.name ?? "") may not serve \(service)" }
            return nil
        }

        /// Why this key may not publish on `topic`, if it may not.
        func publishRefusal(topic: UnsafeRawBufferPointer) -> String? {
            if identity.role == .operator { return nil }
            guard identity.role == .service, let name = identity.name else { return "\(identity.role.withArticle) key may not publish events" }
            guard let publishes else { return "service \(name) has no contract that declares topics" }
            return publishes.admits(topic) ? nil : "service \(name)'s contract does not declare this topic"
        }

        /// Why this key may not act for `user`, named by a request header, if it may not.
        func userRefusal(user: String?) -> String? {
            guard identity.role == .user, let user, user != identity.name else { return nil }
            return "a user key may act only for its own user"
        }
    }

    /// Where the allowlist was read from.
    let path: String
    let loadedAt: Date
    /// The topics each service may publish, and those others may subscribe to.
    let topics: TopicRules
    private let keys: [String: Key]

    init(path: String, allowlist: Allowlist, topics: TopicRules, loadedAt: Date = Date()) {
        self.path = path
        self.topics = topics
        self.loadedAt = loadedAt
        keys = Dictionary(uniqueKeysWithValues: allowlist.entries.map { entry in
            let identity = entry.identity
            let publishes = identity.role == .service ? identity.name.flatMap { topics.published[$0] } : nil
            return (entry.key.z85, Key(identity: identity, callerMember: RequestHeader.callerMember(identity), publishes: publishes))
        })
    }

    /// Reads the allowlist at `path`.
    /// - Throws: `FAILED_PRECONDITION` naming the file and line of what is wrong.
    static func read(path: String, topics: TopicRules) throws(BusError) -> BrokerAccess {
        BrokerAccess(path: path, allowlist: try Allowlist.read(path: path), topics: topics)
    }

    /// The key written as Z85 `userID` (a connection's `User-Id`, or a handshake's key); nil
    /// for a key not listed (or no longer: the allowlist was reloaded without it).
    func key(_ userID: String) -> Key? {
        keys[userID]
    }

    var keyCount: Int { keys.count }

    // MARK: The rules

    /// Why `identity` may not subscribe to `prefix`, if it may not.
    func subscribeRefusal(_ identity: BusIdentity, prefix: UnsafeRawBufferPointer) -> String? {
        switch identity.role {
        case .operator:
            return nil
        case .user:
            return "a user key may not subscribe: its events reach it through the edge"
        case .service, .edge:
            if topics.declared.admitsExactly(prefix) { return nil }
            if identity.role == .edge && topics.declared.admitsTemplatePrefix(prefix) { return nil }
            return "\(identity.role.withArticle) key may subscribe only to declared topics by their whole name"
        }
    }

}

/// The event topics of every contract, as the publish and subscribe rules match them.
struct TopicRules: Sendable {
    /// A set of topic names: exact names, and templates (`ai.stream.<requestId>`) by their
    /// fixed start.
    struct Names: Sendable {
        var exact: Set<Data> = []
        var templatePrefixes: [Data] = []

        mutating func add(_ name: String) {
            if let open = name.firstIndex(of: "<") {
                templatePrefixes.append(Data(name[..<open].utf8))
            } else {
                exact.insert(Data(name.utf8))
            }
        }

        func admitsExactly(_ topic: UnsafeRawBufferPointer) -> Bool {
            exact.contains(Data(topic))
        }

        /// A template's fixed start and at least one byte more (a topic published on it).
        func admitsTemplate(_ topic: UnsafeRawBufferPointer) -> Bool {
            templatePrefixes.contains { prefix in topic.count > prefix.count && topic.starts(with: prefix) }
        }

        /// A prefix that selects only topics of a template: its fixed start, and maybe more.
        func admitsTemplatePrefix(_ prefix: UnsafeRawBufferPointer) -> Bool {
            templatePrefixes.contains { start in prefix.count >= start.count && prefix.starts(with: start) }
        }

        func admits(_ topic: UnsafeRawBufferPointer) -> Bool {
            admitsExactly(topic) || admitsTemplate(topic)
        }
    }

    /// What each service publishes, by service name.
    let published: [String: Names]
    /// Every declared topic.
    let declared: Names

    init(contracts: [any ServiceContract]) {
        var published: [String: Names] = [:]
        var declared = Names()
        for contract in contracts {
            var names = Names()
            for topic in contract.topics {
                names.add(topic.name)
                declared.add(topic.name)
            }
            published[type(of: contract).serviceName] = names
        }
        self.published = published
        self.declared = declared
    }
}

/// Refusals of keys acting beyond their role: counted by kind, and each key's first refusal of
/// each kind logged with the reason (a key that keeps trying is not logged again).
struct Refusals {
    enum Kind: String, CaseIterable, Sendable {
        /// A handshake with a key the allowlist does not list.
        case connection
        /// A READY for a service the key may not serve.
        case ready
        /// An event on a topic the key may not publish.
        case publish
        /// A subscription the key may not make.
        case subscription
        /// A call the key may not make (a `user` key naming another user).
        case call
        /// A message on a connection whose key the allowlist no longer lists.
        case revoked
    }

    private(set) var counts: [Kind: Int] = [:]
    private var logged: Set<String> = []
    /// Keys logged at most; beyond, refusals are still counted but only the next reload clears
    /// the memory, so a stream of new keys cannot grow it.
    static let maximumLogged = 10_000

    /// Counts a refusal; returns true when it is the first of its kind for `key` and should be logged.
    mutating func record(_ kind: Kind, key: String) -> Bool {
        counts[kind, default: 0] += 1
        guard logged.count < Self.maximumLogged else { return false }
        return logged.insert("\(kind.rawValue) \(key)").inserted
    }

    /// Forgets which keys were logged (after a reload, a key may be refused for a new reason).
    mutating func forgetLogged() { logged.removeAll() }
}

extension BusRole {
    /// `a service`, `an operator`: for messages.
    var withArticle: String { self == .operator || self == .edge ? "an \(rawValue)" : "a \(rawValue)" }
}
