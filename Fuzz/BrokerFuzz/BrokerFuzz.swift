import BrokerCore
import Bus
import Foundation
import Logging
import Wire
import ZMQ

// A real broker on loopback, fed by a peer that sends whatever the fuzzer makes: each input is a
// multipart message, frames as [2-byte big-endian length, bytes]. After each input an honest
// client must still get an answer from the broker within two seconds; a trap, a hang or a
// broker that stops answering fails the run.

/// Everything the fuzz loop touches, owned by libFuzzer's single thread.
final class BrokerUnderFuzz {
    let broker: Broker
    let endpoints: Broker.Endpoints
    let context: ZMQContext
    var peer: ZMQSocket
    var inputs = 0
    let client: BlockingClient

    init() throws {
        var configuration = BrokerConfiguration()
        configuration.rpcBind = "tcp://127.0.0.1:0"
        configuration.pubBind = "tcp://127.0.0.1:0"
        configuration.subBind = "tcp://127.0.0.1:0"
        configuration.heartbeatInterval = .milliseconds(250)
        broker = try Broker(configuration: configuration, logger: Logger(label: "broker") { _ in SwiftLogNoOpLogHandler() })
        endpoints = try blocking { [broker] in try await broker.start() }
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

    func feed(_ input: UnsafeRawBufferPointer) throws {
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
        // A fresh peer now and then, so that what one registered (a worker, subscriptions) is
        // also seen going away.
        if inputs % 500 == 0 {
            peer.close()
            peer = try Self.connectPeer(context, endpoints.rpc)
        }
        _ = try client.call(BrokerProtocol.services, Empty(), options: CallOptions(timeout: .seconds(2)))
    }
}

/// Runs async `body` to completion from a thread that is not the cooperative pool's.
func blocking<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    // Written by the task before it signals, read after the wait: never at the same time.
    nonisolated(unsafe) var result: Result<Value, any Error>?
    Task {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result!.get()
}

// libFuzzer calls the entry point on one thread, one input at a time.
nonisolated(unsafe) private var state: BrokerUnderFuzz?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBroker(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    do {
        if state == nil { state = try BrokerUnderFuzz() }
        try state!.feed(UnsafeRawBufferPointer(start: start, count: count))
    } catch {
        fatalError("the broker stopped answering an honest client: \(error)")
    }
    return 0
}
