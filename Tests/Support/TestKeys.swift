import Bus
import Foundation

/// Key files for a test's secure bus, in a directory of their own: the broker's pair and any
/// client's, written by the same code as `busctl keys new`.
public struct TestKeys: Sendable {
    public let directory: String
    /// The broker's pair, `broker.key` and `broker.key_secret`.
    public let broker: CurveKeyPair

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "studybus-keys-\(UUID().uuidString)").path
        broker = try CurveKeyPair.generate()
        try KeyFile.write(broker, name: "broker", directory: directory)
    }

    /// A new pair written as `<name>.key` and `<name>.key_secret`.
    public func make(_ name: String) throws -> CurveKeyPair {
        let pair = try CurveKeyPair.generate()
        try KeyFile.write(pair, name: name, directory: directory)
        return pair
    }

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
