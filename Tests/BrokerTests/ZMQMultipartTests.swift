import Foundation
import Testing
import ZMQ

/// Two connected PAIR sockets over inproc (a sender and a receiver with a 2 s receive timeout),
/// closed after `body`.
private func withPair(_ body: (ZMQSocket, ZMQSocket) throws -> Void) throws {
    let context = try ZMQContext()
    let sender = try ZMQSocket(context: context, type: .pair), receiver = try ZMQSocket(context: context, type: .pair)
    defer {
        sender.close()
        receiver.close()
        context.terminate()
    }
    try receiver.bind("inproc://pair")
    try sender.connect("inproc://pair")
    try receiver.set(.receiveTimeoutMs, 2000)
    try body(sender, receiver)
}

@Suite("Message parts read in place and moved on (ZMQMultipart)")
struct ZMQMultipartTests {
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
            #expect(message.size(from: 1) == large.count && message.size(1) == 0)
            message.move(1..<3, to: kept)
            #expect(kept.count == 2 && kept.receivedCount == 2 && kept.size(0) == 0 && kept.data(1) == large)
            try kept.send(1, on: receiver, more: true)
            try message.send(0, on: receiver, more: false)
            #expect(kept.size(1) == 0, "a sent part is empty")
            let echoed = ZMQMultipart()
            #expect(try echoed.receive(from: sender, dontWait: false))
            #expect(echoed.count == 2 && echoed.data(0) == large && echoed.equals(1, "id"))
        }
    }
}

@Suite("Waiting on sockets and descriptors (ZMQPoller)")
struct ZMQPollerTests {
    @Test("a wait ends when a message arrives, when a descriptor is signalled, or at its timeout")
    func wakesForEachSource() throws {
        try withPair { sender, receiver in
            let wakeup = try EventFD()
            defer { wakeup.close() }
            var poller = ZMQPoller()
            poller.add(receiver)
            poller.add(fileDescriptor: wakeup.fileDescriptor)
            let message = ZMQMultipart()
            #expect(try message.receive(from: receiver, dontWait: true) == false)

            let clock = ContinuousClock()
            var started = clock.now
            #expect(try poller.poll(timeoutMs: 200) == 0)
            #expect(clock.now - started >= .milliseconds(190), "nothing happened: the wait lasts its timeout")

            try sender.send([Data("hello".utf8)])
            started = clock.now
            #expect(try poller.poll(timeoutMs: 5000) == 1 && poller.isReadable(0) && !poller.isReadable(1))
            #expect(clock.now - started < .seconds(2))
            #expect(try message.receive(from: receiver, dontWait: true) && message.equals(0, "hello"))
            #expect(try message.receive(from: receiver, dontWait: true) == false)

            wakeup.signal()
            #expect(try poller.poll(timeoutMs: 5000) == 1 && poller.isReadable(1) && !poller.isReadable(0))
            wakeup.drain()
        }
    }

    @Test("a message that arrives while the socket sends is still reported, though the send took in its announcement")
    func messageArrivingDuringSends() throws {
        try withPair { peer, socket in
            var poller = ZMQPoller()
            poller.add(socket)
            let message = ZMQMultipart()
            for round in 0..<200 {
                #expect(try message.receive(from: socket, dontWait: true) == false)
                try peer.send([Data("m\(round)".utf8)])
                // Sends on the socket process its pending commands, the one announcing the message
                // among them, which leaves its descriptor quiet.
                for _ in 0..<20 { try socket.send([Data("out".utf8)]) }
                #expect(try poller.poll(timeoutMs: 2000) == 1, "round \(round)")
                #expect(try message.receive(from: socket, dontWait: true) && message.string(0) == "m\(round)")
                for _ in 0..<20 { _ = try peer.receive() }
            }
        }
    }
}
