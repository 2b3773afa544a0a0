import Foundation
import Threads
#if canImport(Glibc)
import Glibc
#endif

/// What a monitoring port answered.
public struct HTTPProbeResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: String
}

/// Sends `request` as it is (any bytes, well-formed or not) to 127.0.0.1:`port` on a new
/// connection and reads until the server closes it or `timeout` passes; returns the raw answer.
/// Plain sockets on purpose: a test of what strangers send must be able to send anything. They
/// block a thread of their own, never one of the cooperative pool the server's tasks need.
public func rawHTTP(port: Int, _ request: [UInt8], timeout: Duration = .seconds(10)) async throws -> String {
    try await offThePool { () throws(any Error) in try blockingRawHTTP(port: port, request, timeout: timeout) }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`; the caller closes it.
public func connectLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let error = POSIXError(.init(rawValue: errno) ?? .ECONNREFUSED)
        close(fd)
        throw error
    }
    return fd
}

private func blockingRawHTTP(port: Int, _ request: [UInt8], timeout: Duration) throws -> String {
    let fd = try connectLoopback(port: port)
    defer { close(fd) }
    var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    var sent = 0
    while sent < request.count {
        let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { break }
        sent += n
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        answer += buffer[0..<n]
    }
    return String(decoding: answer, as: UTF8.self)
}

/// `GET path` (or another method) on 127.0.0.1:`port`, one request per connection.
public func httpGet(port: Int, _ path: String, method: String = "GET", headers: [String: String] = [:], body: String? = nil) async throws -> HTTPProbeResponse {
    var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for (name, value) in headers.sorted(by: { $0.key < $1.key }) { request += "\(name): \(value)\r\n" }
    if let body { request += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)" } else { request += "\r\n" }
    let raw = try await rawHTTP(port: port, Array(request.utf8))
    guard let split = raw.range(of: "\r\n\r\n") else { return HTTPProbeResponse(status: 0, headers: [:], body: raw) }
    let lines = raw[..<split.lowerBound].components(separatedBy: "\r\n")
    let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return HTTPProbeResponse(status: status, headers: headers, body: String(raw[split.upperBound...]))
}

/// The value of the sample `series` (`name{labels}` exactly as exposed) in a Prometheus text
/// exposition, or nil when it is not there.
public func metricValue(_ exposition: String, _ series: String) -> Double? {
    for line in exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1).split(separator: " ").first ?? "")
    }
    return nil
}
