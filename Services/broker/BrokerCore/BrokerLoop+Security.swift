import Bus
import Foundation
import Logging
import Wire
import ZMQ

// The broker's half of bus security (docs/wire-protocol.md, Additions 9, 10 and 12): the ZAP
// handler admits the keys of the allowlist, and every READY, event, subscription and request
// is checked against the role of the key its connection authenticated with.
extension BrokerLoop {
    // MARK: Handshakes (ZAP, RFC 27)

    /// Answers the ZAP requests waiting: a listed key is admitted with its Z85 text as the
    /// connection's `User-Id`, any other is refused (the client's handshake fails).
    func answerHandshakes() {
        guard let zap else { return }
        for _ in 0..<Self.readBatch {
            let request: [Data]
            do {
                guard let received = try zap.receive(dontWait: true) else { return }
                request = received
            } catch {
                logger.warning("ZAP receive failed", metadata: ["error": "\(error)"])
                return
            }
            // [routing id, empty, version, request id, domain, address, identity, mechanism, credentials…]
            guard request.count >= 8, request[2] == Data("1.0".utf8) else { continue }
            let mechanism = String(decoding: request[7], as: UTF8.self)
            var status = ("400", "only CURVE clients whose key the allowlist lists may connect")
            var userID = ""
            if mechanism == "CURVE", request.count >= 9, let key = CurveKey(bytes: Array(request[8])) {
                if access?.key(key.z85) != nil {
                    status = ("200", "OK")
                    userID = key.z85
                } else {
                    refuse(.connection, key: key.z85, identity: nil, "the key is not in the allowlist",
                           ["address": "\(String(decoding: request[5], as: UTF8.self))"])
                }
            }
            let reply = [request[0], Data(), Data("1.0".utf8), request[3], Data(status.0.utf8), Data(status.1.utf8), Data(userID.utf8), Data()]
            do {
                _ = try zap.send(reply)
            } catch {
                logger.warning("ZAP reply failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Reads the allowlist again (SIGHUP). Connections stay; from the next message on, each is
    /// judged by the new list, so a key taken off it can do nothing more. A list with an error
    /// is not used: the broker keeps the one it has and says why.
    func reloadAllowlist() {
        guard let current = access else {
            logger.notice("SIGHUP: bus security is off, there is no allowlist to reload")
            return
        }
        do {
            let reloaded = try BrokerAccess.read(path: current.path, topics: current.topics)
            access = reloaded
            refusals.forgetLogged()
            logger.notice("allowlist reloaded", metadata: ["allowlist": "\(reloaded.path)", "keys": "\(reloaded.keyCount)", "before": "\(current.keyCount)"])
        } catch {
            logger.error("allowlist not reloaded; the broker keeps the one it has", metadata: ["error": "\(error.message)", "keys": "\(current.keyCount)"])
        }
    }

    // MARK: Who sent a message

    /// The key that sent a message whose metadata gives `userID`. nil means a key no longer
    /// listed (counted and logged as revoked), or security off.
    func key(userID: String?) -> BrokerAccess.Key? {
        guard let access, let userID else { return nil }
        if let key = access.key(userID) { return key }
        refuse(.revoked, key: userID, identity: nil, "the key is no longer in the allowlist")
        return nil
    }

    /// Counts a refusal of `key`, and logs it when it is the key's first of this kind.
    func refuse(_ kind: Refusals.Kind, key: String, identity: BusIdentity?, _ reason: String, _ extra: Logger.Metadata = [:]) {
        guard refusals.record(kind, key: key) else { return }
        var metadata: Logger.Metadata = ["refused": "\(kind.rawValue)", "key": "\(key)", "reason": "\(reason)"]
        if let identity { metadata["identity"] = "\(identity)" }
        metadata.merge(extra) { first, _ in first }
        logger.warning("refused a key acting beyond its role (logged once per key and kind)", metadata: metadata)
    }

    // MARK: Events

    /// Whether the event whose topic frame is `frame` may be forwarded; counts and logs it when not.
    func mayPublish(_ frame: ZMQFrame) -> Bool {
        let userID = frame.property(.userID)
        guard let key = key(userID: userID) else { return false }
        guard let refusal = frame.withUnsafeBytes({ key.publishRefusal(topic: $0) }) else { return true }
        refuse(.publish, key: userID ?? "", identity: key.identity, refusal, ["topic": "\(Self.printable(frame.withUnsafeBytes { Data($0) }))"])
        return false
    }

    /// Admits, refuses or applies one subscription message of the manual XPUB, and tells the
    /// tracer. libzmq applies an admitted subscription to the connection it came from when it
    /// is set right after the message is received, as here.
    func admitSubscription(_ frame: ZMQFrame) {
        frame.withUnsafeBytes { message in
            guard let kind = message.first, kind <= 1 else { return }
            let prefix = UnsafeRawBufferPointer(rebasing: message.dropFirst())
            guard let userID = frame.property(.userID) else {
                // An unsubscribe libzmq made for a connection that closed: nothing to apply.
                tracer.apply(subscriptionMessage: message, from: .disconnected)
                return
            }
            // A key no longer listed is counted as revoked and may do nothing.
            guard let identity = key(userID: userID)?.identity else {
                tracer.apply(subscriptionMessage: message, from: .refused)
                return
            }
            let sender: RPCTracer.Sender = identity.role == .operator ? .trusted : .refused
            if kind == 0 {
                // Removing what a connection does not have changes nothing.
                try? xpub.unsubscribe(bytes: prefix)
                tracer.apply(subscriptionMessage: message, from: sender)
                return
            }
            if let refusal = access?.subscribeRefusal(identity, prefix: prefix) {
                tracer.apply(subscriptionMessage: message, from: .refused)
                refuse(.subscription, key: userID, identity: identity, refusal, ["prefix": "\(Self.printable(Data(prefix)))"])
                return
            }
            do {
                try xpub.subscribe(bytes: prefix)
                tracer.apply(subscriptionMessage: message, from: sender)
            } catch {
                logger.warning("cannot admit a subscription", metadata: ["error": "\(error)"])
            }
        }
    }

    /// `bytes` for a log line: UTF-8 with control characters escaped, at most 128 bytes.
    static func printable(_ bytes: Data) -> String {
        let text = String(decoding: bytes.prefix(128), as: UTF8.self)
        return text.unicodeScalars.map { $0.properties.generalCategory == .control ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
            + (bytes.count > 128 ? "…" : "")
    }

    // MARK: Requests and workers

    /// The key of the connection `message` came on; nil (and answered, or dropped for a
    /// worker) when security is on and its key is no longer listed.
    func senderKey() -> BrokerAccess.Key? {
        key(userID: senderUserID)
    }

    /// The `User-Id` of the connection `message` came on. Read from the delimiter frame, which
    /// came off the wire: libzmq 4.3.4's ROUTER does not always copy the connection's metadata
    /// to the routing-id frame it makes itself.
    var senderUserID: String? {
        message.count > 1 ? message.property(.userID, of: 1) : nil
    }

    /// The security counters and allowlist, for the broker's `security` method.
    var securityStatus: BrokerSecurityStatus {
        BrokerSecurityStatus(
            security: access == nil ? "off" : "on",
            allowlist: access.map { .init(path: $0.path, keys: $0.keyCount, loadedAt: $0.loadedAt) },
            refused: Dictionary(uniqueKeysWithValues: Refusals.Kind.allCases.map { ($0.rawValue, refusals.counts[$0] ?? 0) }))
    }
}
