import Foundation
import Synchronization

/// A `GET` or `HEAD` to a path a process added to its monitoring port (the broker's console),
/// as ``MonitoringServer`` read it. The server bounds what it reads (headers by NIO's parser,
/// at most ``maximumQueryItems`` query items); nothing here is trusted.
public struct MonitoringRequest: Sendable {
    public static let maximumQueryItems = 16

    /// The path without the query, e.g. `/console/api/tail`.
    public let path: String
    /// The query's items, percent-decoded; the last of a name wins.
    public let query: [String: String]
    private let headers: [(name: String, value: String)]

    public init(uri: String, headers: [(name: String, value: String)]) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = parts.first.map(String.init) ?? ""
        var query: [String: String] = [:]
        if parts.count == 2 {
            for item in parts[1].split(separator: "&").prefix(Self.maximumQueryItems) {
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ text: Substring) -> String {
                    let spaced = text.replacingOccurrences(of: "+", with: " ")
                    return spaced.removingPercentEncoding ?? spaced
                }
                query[decoded(pair[0])] = pair.count == 2 ? decoded(pair[1]) : ""
            }
        }
        self.query = query
        self.headers = headers
    }

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// The answer to a ``MonitoringRequest``. The server adds `content-length` and `connection`.
public struct MonitoringResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    public var body: [UInt8]
    public var contentType: String
    /// More headers, e.g. `cache-control` or `www-authenticate`.
    public var headers: [(name: String, value: String)]

    public init(status: Int, body: [UInt8], contentType: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    /// Plain text, e.g. an error a person reads.
    public static func text(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> MonitoringResponse {
        MonitoringResponse(status: status, body: Array(text.utf8), contentType: "text/plain; charset=utf-8", headers: headers)
    }
}

/// Serves the requests to one path and the paths under it.
public typealias MonitoringHandler = @Sendable (MonitoringRequest) async -> MonitoringResponse

extension Monitoring {
    /// Serves `GET` and `HEAD` of `path` and of every path under it (`path/…`) with `handler`,
    /// beside `/metrics`, `/healthz` and `/readyz`, which it cannot replace. Only while
    /// monitoring is on: without an address there is no port.
    public func serve(_ path: String, _ handler: @escaping MonitoringHandler) {
        precondition(path.hasPrefix("/") && !Self.fixedPaths.contains(path), "a monitoring route needs its own path: \(path)")
        routes.withLock { $0.append((path, handler)) }
    }

    static let fixedPaths = ["/metrics", "/healthz", "/readyz"]

    /// The handler of `path`, if a route covers it.
    func handler(for path: String) -> MonitoringHandler? {
        routes.withLock { routes in
            routes.first { path == $0.path || path.hasPrefix($0.path + "/") }?.handler
        }
    }

    /// Every path served, for the answer to an unknown one.
    var servedPaths: [String] { Self.fixedPaths + routes.withLock { $0.map(\.path) } }
}
