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
    let connection = try LoopbackConnection.open(port: port)
    defer { connection.close() }
    connection.send(request)
    return connection.receive(timeout: timeout).text
}

/// A blocking loopback connection whose test chooses what it sends and when it reads; the
/// caller closes it.
public struct LoopbackConnection: Sendable {
    public let fd: Int32

    /// - Parameter receiveBuffer: the socket's receive buffer in bytes, small for a slow client.
    public static func open(port: Int, receiveBuffer: Int32? = nil) throws -> LoopbackConnection {
        let fd = try connectLoopback(port: port)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        return LoopbackConnection(fd: fd)
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Reads until `done` holds for what was read, the peer closes or `timeout` passes between
    /// two reads; what was read and whether the peer closed. Blocks its thread.
    public func receive(timeout: Duration, until done: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (String(decoding: answer, as: UTF8.self), n == 0) }
            answer += buffer[0..<n]
            if done(String(decoding: answer, as: UTF8.self)) { return (String(decoding: answer, as: UTF8.self), false) }
        }
    }

    /// ``receive(timeout:until:)`` on a thread of its own, off the cooperative pool.
    public func read(timeout: Duration = .seconds(10), until done: @escaping @Sendable (String) -> Bool = { _ in false }) async -> (text: String, closed: Bool) {
        await offThePool { receive(timeout: timeout, until: done) }
    }

    /// Closes this side for writing only (a FIN), as a client that has sent all it will.
    public func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    public func close() { _ = Glibc.close(fd) }
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
