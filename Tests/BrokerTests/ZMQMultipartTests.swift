import Foundation
import Testing
import ZMQ

@Suite("Message parts read in place and moved on (ZMQMultipart)")
struct ZMQMultipartTests {
    /// Two connected PAIR sockets over inproc, closed after `body`.
    private func withPair(_ body: (ZMQSocket, ZMQSocket) throws -> Void) throws {
        let context = try ZMQContext()
        let sender = try ZMQSocket(context: context, type: .pair), receiver = try ZMQSocket(context: context, type: .pair)
        defer {
            sender.close()
            receiver.close()
            context.terminate()
        }
        try receiver.bind("inproc://multipart")
        try sender.connect("inproc://multipart")
        try receiver.set(.receiveTimeoutMs, 2000)
        try body(sender, receiver)
    }

    @Test("a message of more parts than the capacity keeps the first ones and counts them all")
    func overflowIsCounted() throws {
        try withPair { sender, receiver in
            let message = ZMQMultipart(capacity: 4)
            try sender.send((0..<15).map { Data("part \($0)".utf8) })
            #expect(try message.receive(from: receiver, dontWait: false))
            #expect(message.count == 4 && message.receivedCount == 15)
            #expect((0..<4).map(message.string) == ["part 0", "part 1", "part 2", "part 3"])
            // The next message replaces it whole.
            try sender.send([Data("one".utf8)])
            #expect(try message.receive(from: receiver, dontWait: false))
            #expect(message.count == 1 && message.receivedCount == 1 && message.equals(0, "one"))
            #expect(try message.receive(from: receiver, dontWait: true) == false, "nothing is waiting")
        }
    }

    @Test("parts move to another message and are sent on without copying, leaving them empty")
    func moveAndSend() throws {
        try withPair { sender, receiver in
            let message = ZMQMultipart(), kept = ZMQMultipart(capacity: 3)
            let large = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
            try sender.send([Data("id".utf8), Data(), large])
            #expect(try message.receive(from: receiver, dontWait: false))
            #expect(message.size(from: 1) == large.count && message.equals(1, Data()))
            message.move(1..<3, to: kept)
            kept.appendEmpty()
            #expect(kept.count == 3 && kept.size(0) == 0 && kept.data(1) == large && kept.size(2) == 0)
            try kept.send(1, on: receiver, more: true)
            try message.send(0, on: receiver, more: false)
            #expect(kept.size(1) == 0, "a sent part is empty")
            let echoed = ZMQMultipart()
            #expect(try echoed.receive(from: sender, dontWait: false))
            #expect(echoed.count == 2 && echoed.data(0) == large && echoed.equals(1, "id"))
            kept.removeAll()
            #expect(kept.count == 0)
        }
    }
}
