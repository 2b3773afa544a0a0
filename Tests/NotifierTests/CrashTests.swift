import BrokerCore
import Bus
import Contracts
import Foundation
import GRDB
import TestSupport
import Testing
import Wire

@Suite("The notifier binary: kill -9 during a burst", .serialized)
struct CrashTests {
    @Test("kill -9 during a burst, restart: every delivery arrives, none is lost, a repeat carries the same id")
    func killDuringBurst() async throws {
        try await withWorld(WebhookReceiver()) { receiver in
            try await withBroker(startBroker()) { broker, endpoints in
                let directory = try temporaryDirectory()
                let store = try FakeProducer(service: "store", endpoints: endpoints, directory: directory)
                let client = try Bus(configuration: busConfiguration(endpoints, source: "client"), logger: testLogger("client"))
                let environment = [
                    "BUS_RPC": endpoints.rpc, "BUS_PUB": endpoints.pub, "BUS_SUB": endpoints.sub, "BUS_HEARTBEAT_MS": String(testHeartbeatMs), "BUS_SECURITY": "off",
                    "DATA_DIR": directory.appending(path: "notifier").path, "LOG_LEVEL": "warning", "NOTIFIER_RETRY_BASE_MS": "50",
                    "NOTIFIER_ALLOWED_NETWORKS": "127.0.0.0/8",  // the receiver's
                ]
                let binary = builtProductsDirectory.appending(path: "notifier").path
                func start() async throws -> ChildProcess {
                    let process = try ChildProcess(executable: binary, environment: environment, logFile: directory.appending(path: "notifier.log").path)
                    try await eventually("notifier serves", timeout: Wait.startup) { (try? await client.call(Reserved.health("notifier"), Empty())) != nil }
                    return process
                }
                var notifier = try await start()
                _ = try await client.call(Notifier.channelsAdd, AddChannelRequest(type: .webhook, url: receiver.url("/ok/burst"), secret: testSecret),
                                          options: CallOptions(user: "u1"))
                let total = 400
                for n in 1...total {
                    try store.publish("ingest.failed", Payloads.ingestFailed("m\(n)", user: "u1", title: "Doc \(n)"), user: "u1")
                }
                try await eventually("the burst is under way") { try await receiver.received("/ok/burst").count >= 40 }
                notifier.send(SIGKILL)
                #expect(await notifier.waitForExit() == 128 + SIGKILL)
                let atKill = try await receiver.received("/ok/burst").count
                notifier = try await start()
                try await eventually("every notification delivered", timeout: .seconds(60)) {
                    Set(try await receiver.received("/ok/burst").compactMap { $0.headers["webhook-id"] }).count == total
                }
                let received = try await receiver.received("/ok/burst")
                let ids = received.compactMap { $0.headers["webhook-id"] }
                #expect(Set(ids).count == total, "none lost")
                #expect(ids.count - total <= 64, "only deliveries in flight at the kill may come twice (same id): \(ids.count - total)")
                #expect(atKill < total, "the kill landed during the burst")
                notifier.send(SIGTERM)
                #expect(await notifier.waitForExit() == 0)
                let database = try DatabaseQueue(path: directory.appending(path: "notifier/notifier.sqlite").path)
                let states = try await database.read { db in
                    try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM delivery GROUP BY state").map { "\($0["state"] as String)=\($0["n"] as Int)" }
                }
                #expect(states == ["sent=\(total)"])
                let notifications = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification") }
                #expect(notifications == total, "each event handled once")
                try database.close()
                await store.stop()
                await client.shutdown()
            }
        }
    }
}
