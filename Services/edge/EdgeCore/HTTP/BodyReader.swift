import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Wire

/// Reads request bodies with a limit that holds before the body arrives: a `Content-Length`
/// over it is refused unread, and a body without one stops being read at the limit.
enum BodyReader {
    /// The whole body, at most `limit` bytes.
    /// - Throws: `RESOURCE_EXHAUSTED` naming the limit (answered 413), `CANCELLED` when the
    ///   client goes away meanwhile.
    static func collect(_ request: Request, limit: Int) async throws(BusError) -> Data {
        if let declared = request.headers[.contentLength] {
            guard let length = Int(declared), length >= 0 else {
                throw .invalidArgument("header 'Content-Length' must be a number of bytes")
            }
            guard length <= limit else { throw tooLarge(limit: limit) }
        }
        var body = Data()
        do {
            for try await buffer in request.body {
                guard buffer.readableBytes <= limit - body.count else { throw tooLarge(limit: limit) }
                body.append(contentsOf: buffer.readableBytesView)
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .cancelled("the request body could not be read: the client went away")
        }
        return body
    }

    /// The error for a body over `limit`; ``payloadTooLarge`` in its details makes it a 413.
    static func tooLarge(limit: Int) -> BusError {
        BusError(.resourceExhausted, "the request body is larger than \(limit) bytes", details: .object(["limit": .int(Int64(limit)), "reason": .string(payloadTooLarge)]))
    }

    static let payloadTooLarge = "PAYLOAD_TOO_LARGE"
}
