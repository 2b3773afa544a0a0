import BrokerCore
import Bus
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire

@Suite("Interoperability with a client and worker written in Python against the spec")
struct InteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "interop.py")

    @Test("a raw pyzmq client, worker, publisher and subscriber work with the Swift broker, host, client and subscriber")
    func python() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let events = EventCollector(try world.client.subscribe(["py."]))
            let python = try ChildProcess(
                executable: PythonServer.python, arguments: ["-u", Self.script.path, world.endpoints.rpc, world.endpoints.pub, world.endpoints.sub],
                captureOutput: true)
            #expect(await python.readLine() == "CLIENT OK")
            #expect(await python.readLine() == "PUBLISHED")
            #expect(await python.readLine() == "WORKER READY")
            try await world.waitForService("pyecho")

            let pyecho = Method<EchoRequest, EchoReply>(service: "pyecho", "echo", "The Python worker's echo.", audience: .app)
            let client = world.client
            let replies = try await withThrowingTaskGroup(of: EchoReply.self) { group in
                for index in 0..<20 {
                    group.addTask { try await client.call(pyecho, EchoRequest(text: "msg \(index)"), options: CallOptions(user: "u\(index)")) }
                }
                return try await group.reduce(into: [EchoReply]()) { $0.append($1) }
            }
            #expect(Set(replies.map(\.text)) == Set((0..<20).map { "MSG \($0)" }))
            #expect(Set(replies.compactMap(\.user)) == Set((0..<20).map { "u\($0)" }))
            let refusal = await #expect(throws: BusError.self) {
                _ = try await client.call(Method<Empty, Empty>(service: "pyecho", "boom", "", audience: .app), Empty())
            }
            #expect(refusal == BusError(.failedPrecondition, "python says no", details: .object(["why": .string("test")])))

            // Our events reach the Python subscriber; the Python ones reached ours.
            let publisher = world.serviceBus
            let pythonGotEvent = Task { await python.readLine(timeout: .seconds(15)) }
            let publishing = Task {
                while !Task.isCancelled {
                    try publisher.publish(topic: "swift.hello", payload: Data(#"{"from":"swift"}"#.utf8))
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(await pythonGotEvent.value == "GOT swift.hello")
            publishing.cancel()
            let hello = events.all.filter { $0.topic == "py.hello" }
            #expect(hello.map(\.header.seq) == [1, 2, 3])
            #expect(hello.allSatisfy { $0.header.source == "python" && $0.header.user == "py-user" && $0.gap == nil })

            _ = try await client.call(Method<Empty, Empty>(service: "pyecho", "quit", "", audience: .app), Empty())
            #expect(await python.readLine() == "SERVED 21")
            #expect(await python.waitForExit() == 0)
            events.cancel()
        }
    }

    @Test("a pyzmq client and publisher with CURVE keys from busctl's key files reach the Swift broker and service")
    func curve() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        // The Python process holds a second key of the echo service (as during a rotation).
        _ = try keys.make("python", as: try BusIdentity(role: .service, name: "echo"))
        try await withWorld(EchoWorld.start(keys: keys)) { world in
            let events = EventCollector(try world.client.subscribe([Echo.echoed.name, "timer.completed"]))
            let python = try ChildProcess(
                executable: PythonServer.python,
                arguments: ["-u", Self.script.path, "curve", world.endpoints.rpc, world.endpoints.pub, world.endpoints.sub,
                            keys.publicPath("broker"), keys.secretPath("python")],
                captureOutput: true)
            #expect(await python.readLine(timeout: .seconds(30)) == "CURVE OK")
            #expect(await python.waitForExit() == 0)
            try await eventually("an event published over CURVE") { events.all.contains { $0.topic == Echo.echoed.name && $0.header.source == "python" } }
            #expect(!events.all.contains { $0.topic == "timer.completed" }, "a topic echo's contract does not declare is not forwarded")
            events.cancel()
        }
    }
}
