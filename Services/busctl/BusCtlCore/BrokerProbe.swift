import Foundation
import Glibc
import Wire

/// Tells "nothing listens at the broker's address" apart from "the broker is slow": a ZeroMQ
/// socket connects in the background and retries for ever, so a call to an address where
/// nothing listens only ever ends in its deadline. After such a failure busctl tries a plain
/// TCP connection to the endpoint, once, for at most a second.
enum BrokerProbe {
    /// Why nothing can be reached at `endpoint` (`tcp://host:port`), or nil when a TCP connection
    /// succeeds (or the endpoint is not TCP, which this does not probe).
    static func unreachable(_ endpoint: String) -> String? {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        var host = String(endpoint[endpoint.index(endpoint.startIndex, offsetBy: 6)..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = String(endpoint[endpoint.index(after: colon)...])
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, port, &hints, &found)
        guard resolved == 0, let first = found else { return "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))" }
        defer { freeaddrinfo(found) }
        var reason = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            switch connectOnce(address.pointee) {
            case nil: return nil
            case let failure?: reason = failure
            }
            candidate = address.pointee.ai_next
        }
        return reason
    }

    /// Connects to one address with a one-second limit; nil on success, else why not.
    private static func connectOnce(_ address: addrinfo) -> String? {
        let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_NONBLOCK.rawValue), address.ai_protocol)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        if connect(fd, address.ai_addr, address.ai_addrlen) == 0 { return nil }
        guard errno == EINPROGRESS else { return String(cString: strerror(errno)) }
        var poll = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard Glibc.poll(&poll, 1, 1000) == 1 else { return "no answer within a second" }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0 ? nil : String(cString: strerror(error))
    }
}
