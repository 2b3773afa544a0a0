import Foundation
import Wire

// The header readers take bytes straight off the network. Whatever they are given, they either
// throw a BusError or return a header that encodes and reads back to itself.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeaders(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    if let request = try? RequestHeader.decode(bytes: bytes) {
        guard (try? RequestHeader.decode(request.encoded())) == request else { fatalError("request header does not read back: \(request)") }
    }
    if let event = try? EventHeader.decode(bytes: bytes) {
        guard (try? EventHeader.decode(event.encoded())) == event else { fatalError("event header does not read back: \(event)") }
    }
    if let reply = try? ReplyHeader.decode(bytes: bytes) {
        guard (try? ReplyHeader.decode(reply.encoded())) == reply else { fatalError("reply header does not read back: \(reply)") }
    }
    return 0
}
