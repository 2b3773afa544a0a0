import Foundation
import Wire

// The header readers take bytes straight off the network. Whatever they are given, they either
// throw a BusError or return a header that encodes and reads back to itself; a request header
// they admit, stamped with a caller as the broker does, reads back with that caller.

private let stampedCaller = try! BusIdentity(role: .user, name: "fuzz-user")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeaders(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    if let request = try? RequestHeader.decode(bytes: bytes) {
        guard (try? RequestHeader.decode(request.encoded())) == request else { fatalError("request header does not read back: \(request)") }
        // What the broker forwards: the same header with its caller, whatever caller it had.
        guard let stamped = RequestHeader.stamping(bytes, with: RequestHeader.callerMember(stampedCaller)),
              let read = try? RequestHeader.decode(Data(stamped)), read.caller == stampedCaller, read.id == request.id, read.user == request.user
        else { fatalError("a header the broker admits does not read back stamped: \(request)") }
    }
    if let event = try? EventHeader.decode(bytes: bytes) {
        guard (try? EventHeader.decode(event.encoded())) == event else { fatalError("event header does not read back: \(event)") }
    }
    if let reply = try? ReplyHeader.decode(bytes: bytes) {
        guard (try? ReplyHeader.decode(reply.encoded())) == reply else { fatalError("reply header does not read back: \(reply)") }
    }
    return 0
}
