import Foundation
import HTTPTypes
import CompressNIO
import Hummingbird
import Wire

/// The HTTP status for a gRPC status code, as grpc-gateway maps them (`HTTPStatusFromCode`).
public func httpStatus(for code: StatusCode) -> HTTPResponse.Status {
    switch code {
    case .ok: .ok
    case .cancelled: .init(code: 499, reasonPhrase: "Client Closed Request")
    case .unknown, .internal, .dataLoss: .internalServerError
    case .invalidArgument, .failedPrecondition, .outOfRange: .badRequest
    case .deadlineExceeded: .gatewayTimeout
    case .notFound: .notFound
    case .alreadyExists, .aborted: .conflict
    case .permissionDenied: .forbidden
    case .unauthenticated: .unauthorized
    case .resourceExhausted: .tooManyRequests
    case .unimplemented: .notImplemented
    case .unavailable: .serviceUnavailable
    }
}

/// An error answer: the status from the error's code (413 for a body over the edge's limit)
/// and the body
/// `{"code","status","message","details"}` (gRPC's number and name, the message, the details
/// or null).
func errorResponse(_ error: BusError) -> Response {
    errorResponse(ErrorAnswer(error))
}

/// An error answer made already, with its headers (a refused admission's).
func errorResponse(_ answer: ErrorAnswer) -> Response {
    jsonResponse(answer.body, status: answer.status, headers: answer.headers)
}

/// An error answer's parts, for a response written without Hummingbird (event streams).
struct ErrorAnswer: Error {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: Data

    init(_ error: BusError, headers: HTTPFields = [:]) {
        let body: JSONValue = .object([
            "code": .int(Int64(error.code.rawValue)),
            "status": .string(error.code.name),
            "message": .string(error.message),
            "details": error.details ?? .null,
        ])
        let tooLarge = error.details?.objectValue?["reason"] == .string(BodyReader.payloadTooLarge)
        status = tooLarge ? .contentTooLarge : httpStatus(for: error.code)
        self.headers = headers
        self.body = body.jsonData
    }
}

/// A JSON answer with `bytes` as its body.
func jsonResponse(_ bytes: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
    var headers = headers
    headers[.contentType] = "application/json"
    return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// A JSON answer, gzipped when it is large and the client takes gzip (`Accept-Encoding`).
func jsonResponse(_ bytes: Data, for request: Request) -> Response {
    guard bytes.count >= gzipThreshold, acceptsGzip(request.headers[.acceptEncoding]) else { return jsonResponse(bytes) }
    var buffer = ByteBuffer(bytes: bytes)
    guard let compressed = try? buffer.compress(with: .gzip()) else { return jsonResponse(bytes) }
    let headers: HTTPFields = [.contentType: "application/json", .contentEncoding: "gzip", .vary: "Accept-Encoding"]
    return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: compressed))
}

/// Below this many bytes gzip saves less than it costs.
let gzipThreshold = 1024

/// Whether an `Accept-Encoding` value lists gzip (or `*`) without `q=0`.
func acceptsGzip(_ header: String?) -> Bool {
    guard let header else { return false }
    return header.lowercased().split(separator: ",").contains { item in
        let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let coding = parts.first, coding == "gzip" || coding == "*" else { return false }
        return !parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "").range(of: #"^q=0(\.0*)?$"#, options: .regularExpression) != nil }
    }
}
