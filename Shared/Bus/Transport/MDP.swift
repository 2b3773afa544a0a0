import Foundation
import Wire

/// The constant frames of 7/MDP (https://rfc.zeromq.org/spec/7/) as StudyBus uses them.
public enum MDP {
    /// Protocol frame of client requests and replies.
    public static let client = "MDPC01"
    /// Protocol frame of worker commands.
    public static let worker = "MDPW01"

    /// The worker command byte (frame 2 of worker messages).
    public enum Command: UInt8, Sendable {
        case ready = 0x01
        case request = 0x02
        case reply = 0x03
        case heartbeat = 0x04
        case disconnect = 0x05

        /// The command as its one-byte frame.
        public var frame: Data {
            switch self {
            case .ready: Frames.ready
            case .request: Frames.request
            case .reply: Frames.reply
            case .heartbeat: Frames.heartbeat
            case .disconnect: Frames.disconnect
            }
        }
    }

    /// Constant frames, built once.
    public enum Frames {
        public static let empty = Data()
        public static let client = Data("MDPC01".utf8)
        public static let worker = Data("MDPW01".utf8)
        static let ready = Data([Command.ready.rawValue])
        static let request = Data([Command.request.rawValue])
        static let reply = Data([Command.reply.rawValue])
        static let heartbeat = Data([Command.heartbeat.rawValue])
        static let disconnect = Data([Command.disconnect.rawValue])
    }

    /// Heartbeat interval of the Majordomo reference, in milliseconds.
    public static let defaultHeartbeatIntervalMs = 2500
    /// Heartbeats a peer may miss before it is considered gone.
    public static let defaultHeartbeatLiveness = 3
}
