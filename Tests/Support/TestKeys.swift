import Bus
import Foundation
import Wire

/// Key files for a test's secure bus, in a directory of their own: the broker's pair and any
/// client's, written by the same code as `busctl keys new`, and the broker's allowlist
/// (`allowlist`), which lists each key made with an identity.
public struct TestKeys: Sendable {
    public let directory: String
    /// The broker's pair, `broker.key` and `broker.key_secret`.
    public let broker: CurveKeyPair

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "studybus-keys-\(UUID().uuidString)").path
        broker = try CurveKeyPair.generate()
        try KeyFile.write(broker, name: "broker", directory: directory)
    }

    /// A new pair written as `<name>.key` and `<name>.key_secret`, listed in the allowlist as
    /// `identity` when one is given (a key made without one is unknown to the broker).
    public func make(_ name: String, as identity: BusIdentity? = nil) throws -> CurveKeyPair {
        let pair = try CurveKeyPair.generate()
        try KeyFile.write(pair, name: name, directory: directory)
        if let identity { try allow(pair.publicKey, as: identity) }
        return pair
    }

    /// Lists `key` as `identity` in the allowlist (read by brokers started after, or on reload).
    public func allow(_ key: CurveKey, as identity: BusIdentity) throws {
        try appendLine(Allowlist.line(for: key, identity))
    }

    /// Writes the allowlist anew with `lines`.
    public func rewriteAllowlist(_ lines: [String]) throws {
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: allowlistPath))
    }

    private func appendLine(_ line: String) throws {
        let existing = (try? String(contentsOfFile: allowlistPath, encoding: .utf8)) ?? ""
        try rewriteAllowlist(existing.split(separator: "\n").map(String.init) + [line])
    }

    /// The broker's allowlist.
    public var allowlistPath: String { "\(directory)/allowlist" }

    /// A key pair listed as a service of `name` / an operator / a user, with its file named `name`.
    public func service(_ name: String) throws -> BusSecurity { security(try make(name, as: try BusIdentity(role: .service, name: name))) }
    public func `operator`(_ name: String = "operator") throws -> BusSecurity { security(try make(name, as: try BusIdentity(role: .operator, name: nil))) }
    public func user(_ id: String) throws -> BusSecurity { security(try make("user-\(id)", as: try BusIdentity(role: .user, name: id))) }
    public func edge(_ name: String = "edge") throws -> BusSecurity { security(try make(name, as: try BusIdentity(role: .edge, name: nil))) }

    public func publicPath(_ name: String) -> String { "\(directory)/\(name)\(KeyFile.publicSuffix)" }
    public func secretPath(_ name: String) -> String { "\(directory)/\(name)\(KeyFile.secretSuffix)" }

    /// The security of a client with `pair` towards this broker.
    public func security(_ pair: CurveKeyPair) -> BusSecurity {
        .curve(CurveClientKeys(keyPair: pair, brokerKey: broker.publicKey))
    }

    /// The environment that gives a process the key called `name` (`BUS_KEY`, `BUS_BROKER_KEY`).
    public func environment(_ name: String) -> [String: String] {
        ["BUS_SECURITY": "on", "BUS_KEY": secretPath(name), "BUS_BROKER_KEY": publicPath("broker")]
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
