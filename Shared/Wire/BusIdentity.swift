import Foundation

/// What a bus key may act as. Every key the broker admits has exactly one role, given by its
/// line in the allowlist (docs/operations.md, "Keys and roles").
public enum BusRole: String, WireEnum {
    /// A service process: serves its own name only, calls others' app and service methods.
    case service
    /// An operator's tool (busctl): every method, every event.
    case `operator`
    /// The HTTP edge: app-facing methods on behalf of the users it authenticated itself.
    case edge
    /// A trusted native client: app-facing methods as exactly one user, fixed by the key.
    case user

    /// Whether an identity of this role must have a name: a service's name, a user's id. An
    /// operator's or edge's name is an optional label for logs.
    public var requiresName: Bool { self == .service || self == .user }
}

/// Who a bus key belongs to: a role and, for a service or user, its name.
///
/// The broker knows it from the key that authenticated the connection and stamps it on each
/// request as the header's `caller` (docs/wire-protocol.md, Addition 10). On the wire:
/// `{"role":"service","name":"store"}`, `{"role":"operator"}`.
public struct BusIdentity: Sendable, Hashable, CustomStringConvertible {
    public let role: BusRole
    /// A service's name or a user's id (required); an operator's or edge's label (optional).
    public let name: String?

    /// The longest name, in Unicode scalars.
    public static let maximumNameLength = 128

    /// - Throws: `INVALID_ARGUMENT` when a service or user has no name, or the name is longer
    ///   than ``maximumNameLength``, or holds blanks or control characters, or starts with `#`.
    public init(role: BusRole, name: String?) throws(BusError) {
        if let name {
            guard Self.isValidName(name) else {
                throw .invalidArgument(
                    "the name of a \(role.rawValue) identity must be 1 to \(Self.maximumNameLength) characters without blanks or control characters, not starting with '#'")
            }
        } else if role.requiresName {
            throw .invalidArgument("a \(role.rawValue) identity needs a name (\(role == .service ? "the service" : "the user id"))")
        }
        self.role = role
        self.name = name
    }

    /// Whether `name` may name an identity.
    public static func isValidName(_ name: String) -> Bool {
        let scalars = name.unicodeScalars
        return (1...maximumNameLength).contains(scalars.count) && scalars.first != "#"
            && !scalars.contains { $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }

    /// `service store`, `operator`, `edge web`: as an allowlist line writes it.
    public var description: String {
        name.map { "\(role.rawValue) \($0)" } ?? role.rawValue
    }

    /// Writes the identity as the header's `caller` object.
    func write(to writer: inout JSONBytes) {
        writer.raw("{\"role\":")
        writer.string(role.rawValue)
        if let name {
            writer.raw(",\"name\":")
            writer.string(name)
        }
        writer.raw("}")
    }

    /// Reads a header's `caller` object.
    /// - Throws: `INVALID_ARGUMENT` naming what is wrong.
    static func decode(_ value: JSONValue, what: String) throws(BusError) -> BusIdentity {
        guard let object = value.objectValue, let roleText = object["role"]?.stringValue else {
            throw .invalidArgument("\(what) field 'caller' must be an object with a string 'role'")
        }
        guard let role = BusRole(rawValue: roleText) else {
            throw .invalidArgument("\(what) field 'caller.role' must be one of \(BusRole.wireValues.joined(separator: ", "))")
        }
        let name: String?
        switch object["name"] {
        case nil, .null?: name = nil
        case .string(let text)?: name = text
        default: throw .invalidArgument("\(what) field 'caller.name' must be a string")
        }
        do {
            return try BusIdentity(role: role, name: name)
        } catch {
            throw .invalidArgument("\(what) field 'caller': \(error.message)")
        }
    }
}

/// Who may call a method, declared once with the method in its contract
/// (`Method(…, audience: .app)`). The service's host enforces it from the request's `caller`
/// before the handler runs: `PERMISSION_DENIED` otherwise.
public enum Audience: String, WireEnum {
    /// Anyone the broker admits, even a request without a `caller`: `_health`, `_describe`.
    case any
    /// App-facing: acts for one user (the header's `user`); edge and user keys, services and operators.
    case app
    /// Service to service (`materials.put`, `cards.add`, `_events.replay`): services and operators.
    case service
    /// Operators only (`_backup`, `providers`).
    case `operator`

    /// Whether a caller of `role` may call a method of this audience.
    public func admits(_ role: BusRole) -> Bool {
        switch self {
        case .any, .app: true
        case .service: role == .service || role == .operator
        case .operator: role == .operator
        }
    }

    /// Who it admits, for messages: "services and operators".
    public var callers: String {
        switch self {
        case .any: "anyone"
        case .app: "apps (edge and user keys), services and operators"
        case .service: "services and operators"
        case .operator: "operators"
        }
    }
}
