import BrokerCore
import Bus
import Foundation
import Glibc
import TestSupport
import Testing
import Wire

@Suite("Bus connections stay alive through idle-cutting networks")
struct KeepaliveTests {
    /// This process's TCP sockets connected to 127.0.0.1:`port`, with their keepalive settings.
    private func socketsConnected(to port: Int) throws -> [(keepalive: Int32, idle: Int32, interval: Int32)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { name -> (Int32, Int32, Int32)? in
            guard let fd = Int32(name) else { return nil }
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard named == 0, peer.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: peer.sin_port)) == port else { return nil }
            func option(_ level: Int32, _ name: Int32) -> Int32 {
                var value: Int32 = -1
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, level, name, &value, &size)
                return value
            }
            return (option(SOL_SOCKET, SO_KEEPALIVE), option(Int32(IPPROTO_TCP), TCP_KEEPIDLE), option(Int32(IPPROTO_TCP), TCP_KEEPINTVL))
        }
    }

    @Test("every connection a bus makes to the broker probes with TCP keepalive after 300 s of silence")
    func keepalive() async throws {
        try await withWorld(EchoWorld.start()) { world in
            _ = try await world.client.call(Echo.echo, EchoRequest(text: "hi"), options: CallOptions(user: "u1"))
            let collector = try await EventCollector.active(world.client, Echo.echoed, probe: EchoReply(text: "probe"))
            for endpoint in [world.endpoints.rpc, world.endpoints.pub, world.endpoints.sub] {
                let port = Int(endpoint.split(separator: ":").last!)!
                let sockets = try socketsConnected(to: port)
                #expect(!sockets.isEmpty, "no connection to \(endpoint)")
                for socket in sockets {
                    #expect(socket.keepalive == 1 && socket.idle == 300 && socket.interval == 60, "\(endpoint): \(socket)")
                }
            }
            collector.cancel()
        }
    }
}
