import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Wire

/// A file sent with a call: the attachment frame and what the request said about it.
struct Upload: Sendable {
    var data: Data
    var fileName: String?
    var contentType: String?
}

/// Files in and out: uploads as a raw body or as `multipart/form-data`, and replies with an
/// attachment as the file itself.
enum Files {
    /// A call's JSON request and its file, from a body that is not JSON.
    ///
    /// - A raw body is the file; its `Content-Type` the file's, `Content-Disposition`'s
    ///   `filename` its name, and the JSON request the `request` query parameter (or `{}`).
    /// - `multipart/form-data` holds one file part and optionally a `request` field with the
    ///   JSON request.
    ///
    /// A method whose request has `fileName` or `mimeType` fields gets them filled from the
    /// file when the JSON request leaves them out.
    /// - Throws: `RESOURCE_EXHAUSTED` (413) for a file over `limit`, `INVALID_ARGUMENT` for a
    ///   form or request that cannot be read.
    static func read(_ request: Request, contentType: String, limit: Int, shape: JSONValue) async throws(BusError) -> (json: Data, upload: Upload) {
        var json: Data
        var upload: Upload
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            guard let boundary = parameters(contentType)["boundary"], (1...70).contains(boundary.utf8.count) else {
                throw .invalidArgument("a multipart/form-data body needs a boundary of 1 to 70 characters", details: .object(["field": .string("Content-Type")]))
            }
            // The form's own lines around the file: a few kilobytes at most.
            let body = try await BodyReader.collect(request, limit: limit + formOverheadBytes)
            (json, upload) = try Multipart.read(body, boundary: boundary)
            guard upload.data.count <= limit else { throw BodyReader.tooLarge(limit: limit) }
        } else {
            let body = try await BodyReader.collect(request, limit: limit)
            json = Data((formValue("request", in: request.uri.query) ?? "{}").utf8)
            let disposition = request.headers[.contentDisposition].map(parameters) ?? [:]
            upload = Upload(data: body, fileName: disposition["filename"].map(safeFileName), contentType: contentType)
        }
        return (try filled(json, with: upload, shape: shape), upload)
    }

    /// The value of `name` in a query string as HTML forms, JavaScript's URLSearchParams and
    /// Python's urlencode write it: `+` is a space, `%XX` a byte. (Hummingbird's
    /// `queryParameters` leaves `+` alone, which breaks JSON such as `{"wait":+true}`.)
    static func formValue(_ name: String, in query: String?) -> String? {
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard decoded(parts[0]) == name else { continue }
            return parts.count == 2 ? decoded(parts[1]) : ""
        }
        return nil
    }

    /// The room a form's boundaries, part headers and `request` field may take beside the file.
    static let formOverheadBytes = 64 * 1024

    /// The JSON request with `fileName` and `mimeType` taken from the file where the method has
    /// such fields and the request left them out.
    private static func filled(_ json: Data, with upload: Upload, shape: JSONValue) throws(BusError) -> Data {
        guard case .object(var object)? = try? JSONValue.parse(json) else {
            throw .invalidArgument("the 'request' of an upload must be a JSON object", details: .object(["field": .string("request")]))
        }
        let fields = shape.objectValue ?? [:]
        func has(_ key: String) -> Bool { fields[key] != nil || fields[key + "?"] != nil }
        if has("fileName"), object["fileName"] == nil, let name = upload.fileName { object["fileName"] = .string(name) }
        if has("mimeType"), object["mimeType"] == nil, let type = upload.contentType { object["mimeType"] = .string(type) }
        return JSONValue.object(object).jsonData
    }

    /// The answer for a reply with an attachment: the file, with the content type and file
    /// name the reply names (`contentType` or `mimeType`, `fileName`).
    static func response(reply payload: Data, attachment: Data) -> Response {
        let reply = (try? JSONValue.parse(payload))?.objectValue ?? [:]
        var headers: HTTPFields = [:]
        let type = (reply["contentType"] ?? reply["mimeType"])?.stringValue
        headers[.contentType] = type.flatMap { isContentType($0) ? $0 : nil } ?? "application/octet-stream"
        if let name = reply["fileName"]?.stringValue.map(safeFileName), !name.isEmpty {
            headers[.contentDisposition] = contentDisposition(name)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: attachment)))
    }

    /// `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266): an ASCII name for old
    /// clients, the exact one percent-encoded for the rest.
    static func contentDisposition(_ name: String) -> String {
        let ascii = String(name.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || ". _-()".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: ".-_"))) ?? ascii
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    /// A file name without folders or control characters, at most 255 characters.
    static func safeFileName(_ name: String) -> String {
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        return String(String.UnicodeScalarView(last.unicodeScalars.filter { $0.properties.generalCategory != .control }).prefix(255))
    }

    /// Whether `value` is a media type as a header may carry it: `type/subtype` and parameters,
    /// printable ASCII, at most 200 characters.
    static func isContentType(_ value: String) -> Bool {
        guard (3...200).contains(value.utf8.count), value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return false }
        let essence = value.split(separator: ";", maxSplits: 1)[0].trimmingCharacters(in: .whitespaces)
        let halves = essence.split(separator: "/", omittingEmptySubsequences: false)
        let token = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "!#$&^_.+-"))
        return halves.count == 2 && halves.allSatisfy { !$0.isEmpty && $0.unicodeScalars.allSatisfy(token.contains) }
    }

    /// The `key=value` parameters of a header such as `Content-Type` or `Content-Disposition`,
    /// keys lowercased, quotes removed.
    static func parameters(_ header: String) -> [String: String] {
        var result: [String: String] = [:]
        for item in header.split(separator: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            result[pair[0].trimmingCharacters(in: .whitespaces).lowercased()] = value
        }
        return result
    }
}

/// Reads a `multipart/form-data` body (RFC 7578) of one file part and an optional `request` field.
enum Multipart {
    /// - Throws: `INVALID_ARGUMENT` for a body that is not such a form.
    static func read(_ body: Data, boundary: String) throws(BusError) -> (json: Data, upload: Upload) {
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n--\(boundary)".utf8)
        guard var position = find(delimiter, in: bytes, from: 0) else { throw malformed("it has no boundary line") }
        position += delimiter.count
        var json: Data?
        var upload: Upload?
        while true {
            // After a delimiter: `--` ends the form, CRLF starts a part.
            guard position + 2 <= bytes.count else { throw malformed("it ends without its closing boundary") }
            if bytes[position] == UInt8(ascii: "-"), bytes[position + 1] == UInt8(ascii: "-") { break }
            guard bytes[position] == 13, bytes[position + 1] == 10 else { throw malformed("a boundary line is followed by something else") }
            position += 2
            guard let headerEnd = find(Array("\r\n\r\n".utf8), in: bytes, from: position), headerEnd - position <= 8192 else {
                throw malformed("a part's headers do not end")
            }
            guard let next = find(separator, in: bytes, from: headerEnd + 4) else { throw malformed("a part does not end") }
            let headers = String(decoding: bytes[position..<headerEnd], as: UTF8.self)
            let content = Data(bytes[(headerEnd + 4)..<next])
            var disposition: [String: String] = [:], type: String?
            for line in headers.split(separator: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                guard pair.count == 2 else { continue }
                switch pair[0].trimmingCharacters(in: .whitespaces).lowercased() {
                case "content-disposition": disposition = Files.parameters(String(pair[1]))
                case "content-type": type = pair[1].trimmingCharacters(in: .whitespaces)
                default: break
                }
            }
            if let name = disposition["filename"] {
                guard upload == nil else { throw malformed("it has more than one file part") }
                upload = Upload(data: content, fileName: Files.safeFileName(name), contentType: type.flatMap { Files.isContentType($0) ? $0 : nil })
            } else if disposition["name"] == "request" {
                guard json == nil else { throw malformed("it has more than one 'request' field") }
                json = content
            } else {
                throw malformed("it has a field other than the file and 'request'")
            }
            position = next + separator.count
        }
        guard let upload else { throw malformed("it has no file part") }
        return (json ?? Data("{}".utf8), upload)
    }

    private static func malformed(_ why: String) -> BusError {
        .invalidArgument("the multipart/form-data body cannot be read: \(why)", details: .object(["field": .string("body")]))
    }

    /// The index of `needle`'s first occurrence in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, start >= 0, haystack.count - start >= needle.count else { return nil }
        let first = needle[0]
        var index = start
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
