import BrokerCore
import Bus
import Foundation
import Wire
import ZMQ

/// A real broker on loopback, fed by a peer that sends whatever it is given: each input is a
/// multipart message, frames as [2-byte big-endian length, bytes]. After each input an honest
/// client must still get an answer from the broker within two seconds.
///
/// Owned by one thread, the one that calls ``feed(_:)`` (libFuzzer's, or a test's own): the peer
/// socket and the blocking client are used from it only. The caller starts and stops the broker.
public final class BrokerCheck {
    /// The broker's settings for the check: loopback on ephemeral ports, a short heartbeat so
    /// that what a peer registers expires within a run.
    public static var configuration: BrokerConfiguration {
        var configuration = BrokerConfiguration()
        configuration.rpcBind = "tcp://127.0.0.1:0"
        configuration.pubBind = "tcp://127.0.0.1:0"
        configuration.subBind = "tcp://127.0.0.1:0"
        configuration.heartbeatInterval = .milliseconds(250)
        return configuration
    }

    let endpoints: Broker.Endpoints
    let context: ZMQContext
    var peer: ZMQSocket
    var inputs = 0
    let client: BlockingClient

    /// Connects the peer and the honest client to the broker at `endpoints`.
    public init(endpoints: Broker.Endpoints) throws {
        self.endpoints = endpoints
        context = try ZMQContext()
        peer = try Self.connectPeer(context, endpoints.rpc)
        var busConfiguration = BusConfiguration(source: "fuzz")
        busConfiguration.rpcEndpoint = endpoints.rpc
        busConfiguration.pubEndpoint = endpoints.pub
        busConfiguration.subEndpoint = endpoints.sub
        client = try BlockingClient(configuration: busConfiguration)
    }

    static func connectPeer(_ context: ZMQContext, _ endpoint: String) throws(ZMQError) -> ZMQSocket {
        let socket = try ZMQSocket(context: context, type: .dealer)
        try socket.set(.linger, 0)
        try socket.connect(endpoint)
        return socket
    }

    /// Sends `input` as one message and checks that an honest client is still answered.
    public func feed(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        do {
            var frames: [Data] = []
            var offset = 0
            while offset + 2 <= input.count, frames.count < 12 {
                let length = Int(input[offset]) << 8 | Int(input[offset + 1])
                offset += 2
                let end = min(offset + length, input.count)
                frames.append(Data(input[offset..<end]))
                offset = end
            }
            if !frames.isEmpty { _ = try peer.send(frames, dontWait: true) }
            while try peer.receive(dontWait: true) != nil {}
            inputs += 1
            // A fresh peer now and then, so that what one registered (a worker, subscriptions)
            // is also seen going away.
            if inputs % 500 == 0 {
                peer.close()
                peer = try Self.connectPeer(context, endpoints.rpc)
            }
            _ = try client.call(BrokerProtocol.services, Empty(), options: CallOptions(timeout: .seconds(2)))
        } catch {
            throw FuzzFailure("the broker stopped answering an honest client: \(error)")
        }
    }

    /// Closes the peer and the client.
    public func close() {
        peer.close()
        context.terminate()
        client.close()
    }
}
