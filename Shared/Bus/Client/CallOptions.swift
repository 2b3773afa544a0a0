import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Wire
import ZMQ

/// Options of one call: who it acts for, its deadline, metadata, idempotency key, attachment.
public struct CallOptions: Sendable {
    /// The end user the call acts for (header `user`).
    public var user: String?
    /// How long to wait for the reply; `nil` uses the bus default (30 s).
    public var timeout: Duration?
    /// An absolute deadline, e.g. inherited from the request being served; the earlier of this
    /// and `timeout` wins.
    public var deadline: Date?
    /// Free metadata (header `meta`), e.g. `traceparent`.
    public var meta: [String: String]
    /// Idempotency key (header `idem`).
    public var idempotencyKey: String?
    /// Raw bytes sent as the attachment frame.
    public var attachment: Data?
    /// A `caller` written into the header by the client, for tests of a host's audience checks.
    /// It proves nothing: a broker that authenticates connections appends its own `caller`,
    /// which is the one services read (wire protocol, Addition 10). Not for services' calls.
    package var claimedCaller: BusIdentity?

    public init(
        user: String? = nil, timeout: Duration? = nil, deadline: Date? = nil, meta: [String: String] = [:],
        idempotencyKey: String? = nil, attachment: Data? = nil
    ) {
        self.user = user
        self.timeout = timeout
        self.deadline = deadline
        self.meta = meta
        self.idempotencyKey = idempotencyKey
        self.attachment = attachment
    }
}
