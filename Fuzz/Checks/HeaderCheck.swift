import Foundation
import Wire

/// The header readers take bytes straight off the network. Whatever they are given, they either
/// throw a BusError or return a header that encodes and reads back to itself; a request header
/// they admit, stamped with a caller as the broker does, reads back with that caller.
public enum HeaderCheck {
    private static let stampedCaller = try! BusIdentity(role: .user, name: "fuzz-user")

    public static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        if let request = try? RequestHeader.decode(bytes: bytes) {
            guard (try? RequestHeader.decode(request.encoded())) == request else { throw FuzzFailure("request header does not read back: \(request)") }
            // What the broker forwards: the same header with its caller, whatever caller it had.
            guard let stamped = RequestHeader.stamping(bytes, with: RequestHeader.callerMember(stampedCaller)),
                  let read = try? RequestHeader.decode(Data(stamped)), read.caller == stampedCaller, read.id == request.id, read.user == request.user
            else { throw FuzzFailure("a header the broker admits does not read back stamped: \(request)") }
        }
        if let event = try? EventHeader.decode(bytes: bytes) {
            guard (try? EventHeader.decode(event.encoded())) == event else { throw FuzzFailure("event header does not read back: \(event)") }
        }
        if let reply = try? ReplyHeader.decode(bytes: bytes) {
            guard (try? ReplyHeader.decode(reply.encoded())) == reply else { throw FuzzFailure("reply header does not read back: \(reply)") }
        }
    }
}
