import Foundation
import Logging
import Synchronization
import Wire
import ZMQ

/// A reply as it arrived: the parsed header, the payload bytes and the optional attachment.
public struct RawReply: Sendable {
    public var header: ReplyHeader
    public var payload: Data
    public var attachment: Data?
}
