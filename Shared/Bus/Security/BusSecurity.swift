import Foundation
import Wire
import ZMQ

/// Whether a process's bus sockets use CurveZMQ, and with which keys.
///
/// Read from the environment once, with the other bus settings
/// (``BusConfiguration/fromEnvironment(service:_:)``):
///
/// | variable | meaning |
/// |---|---|
/// | `BUS_SECURITY` | `on` (default) or `off` |
/// | `BUS_KEY` | this process's secret key file (`<name>.key_secret`, mode 600) |
/// | `BUS_BROKER_KEY` | the broker's public key file (`broker.key`) |
///
/// With security on, every socket the process opens to the broker — calls, its worker
/// connection, publishing, subscribing, a ``BlockingClient`` — is a CURVE client that knows the
/// broker's public key: traffic is encrypted, and the broker knows which key connected. The
/// broker uses `BUS_KEY` as its own server key.
public enum BusSecurity: Sendable, Equatable {
    /// No encryption, no authentication: any process that reaches the broker is believed.
    /// Only with an explicit `BUS_SECURITY=off` (and in configurations built in code).
    case off
    /// CurveZMQ with this process's key pair, towards the broker's public key.
    case curve(CurveClientKeys)

    /// The keys, when security is on.
    public var keys: CurveClientKeys? {
        if case .curve(let keys) = self { return keys }
        return nil
    }

    /// What a process logs at start while security is off.
    public static let offWarning =
        "BUS_SECURITY=off: bus traffic is neither encrypted nor authenticated, and any process that reaches the broker may call, serve, publish and subscribe as anyone"

    /// Reads `BUS_SECURITY`, `BUS_KEY` and `BUS_BROKER_KEY`.
    /// - Throws: `INVALID_ARGUMENT` for a `BUS_SECURITY` that is neither `on` nor `off`;
    ///   `FAILED_PRECONDITION` naming the variable and file when security is on and a key is
    ///   missing or unusable (a secret key file others may read is unusable).
    public static func fromEnvironment(_ environment: [String: String]) throws(BusError) -> BusSecurity {
        switch environment["BUS_SECURITY"]?.lowercased() ?? "" {
        case "", "on": break
        case "off": return .off
        case let other: throw .invalidArgument("environment variable BUS_SECURITY must be on or off, got '\(other)'")
        }
        func required(_ path: String?, _ name: String, _ what: String) throws(BusError) -> String {
            guard let path, !path.isEmpty else {
                throw .failedPrecondition(
                    "BUS_SECURITY is on (the default) but \(name) is not set: give the path of \(what) (busctl keys new makes one), or set BUS_SECURITY=off to run without authentication")
            }
            return path
        }
        let ownKeyPath = try required(environment["BUS_KEY"], "BUS_KEY", "this process's secret key file (<name>\(KeyFile.secretSuffix))")
        let brokerKeyPath = try required(environment["BUS_BROKER_KEY"], "BUS_BROKER_KEY", "the broker's public key file (broker\(KeyFile.publicSuffix))")
        let keyPair: CurveKeyPair, brokerKey: CurveKey
        do { keyPair = try KeyFile.readSecret(path: ownKeyPath) } catch { throw .failedPrecondition("BUS_KEY: \(error.message)") }
        do { brokerKey = try KeyFile.readPublic(path: brokerKeyPath).publicKey } catch { throw .failedPrecondition("BUS_BROKER_KEY: \(error.message)") }
        return .curve(CurveClientKeys(keyPair: keyPair, brokerKey: brokerKey))
    }

    /// Makes `socket` a CURVE client of the broker when security is on; set before connecting.
    func apply(to socket: ZMQSocket) throws(ZMQError) {
        guard case .curve(let keys) = self else { return }
        try socket.makeCurveClient(serverKey: keys.brokerKey.bytes, publicKey: keys.keyPair.publicKey.bytes, secretKey: keys.keyPair.secretKey.bytes)
    }
}

/// A CURVE client's keys: its own pair and the server's (the broker's) public key.
public struct CurveClientKeys: Sendable, Equatable {
    public var keyPair: CurveKeyPair
    public var brokerKey: CurveKey

    public init(keyPair: CurveKeyPair, brokerKey: CurveKey) {
        self.keyPair = keyPair
        self.brokerKey = brokerKey
    }
}
