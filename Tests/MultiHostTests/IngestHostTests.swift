import Bus
import Contracts
import Foundation
import Glibc
import TestSupport
import Testing
import Wire

/// Ingest as users scale it: the broker, store and ai-gateway each on a host of their own, and
/// ingest workers on hosts of theirs, all with bus security on — five hosts on one network.
private struct IngestHosts: HostWorld {
    let network: VirtualHosts
    let keys: TestKeys
    let client: Bus
    let logs: String
    let common: [String: String]

    static let heartbeatMs = 500
    static let workerHosts = ["ingest-a", "ingest-b"]
    /// Short job limits, so the sweep finds a lost worker's material within seconds: a job may
    /// take 4 s, a material processing for 5 s lost its worker, each worker sweeps every second.
    static let ingestLimits = ["INGEST_JOB_TIMEOUT_SECONDS": "4", "INGEST_STUCK_AFTER_SECONDS": "5", "INGEST_SWEEP_INTERVAL_SECONDS": "1"]

    static func start() async throws -> IngestHosts {
        let network = try VirtualHosts(hosts: ["broker", "store", "ai-gateway"] + workerHosts, cpuCores: ["ingest-a": 1])
        let keys = try TestKeys()
        do {
            for service in ["store", "ai-gateway", "ingest"] { _ = try keys.service(service) }
            let broker = network.address("broker")
            let endpoints = ["BUS_RPC": "tcp://\(broker):5555", "BUS_PUB": "tcp://\(broker):5556", "BUS_SUB": "tcp://\(broker):5557"]
            let common = ["BUS_HEARTBEAT_MS": String(heartbeatMs), "LOG_LEVEL": "info", "BUS_BROKER_KEY": keys.publicPath("broker"), "BUS_SECURITY": "on"]
                .merging(endpoints) { $1 }
            try network.start(
                on: "broker", builtProductsDirectory.appending(path: "broker").path,
                environment: common.merging([
                    "BUS_KEY": keys.secretPath("broker"), "BUS_ALLOWLIST": keys.allowlistPath, "BUS_RPC_BIND": endpoints["BUS_RPC"]!,
                    "BUS_PUB_BIND": endpoints["BUS_PUB"]!, "BUS_SUB_BIND": endpoints["BUS_SUB"]!,
                ]) { $1 },
                logFile: "\(keys.directory)/broker.log")
            let client = try hostClient(source: "ingest-host-test", endpoints: endpoints, heartbeatMs: heartbeatMs, security: try keys.operator("client"))
            let hosts = IngestHosts(network: network, keys: keys, client: client, logs: keys.directory, common: common)
            for service in ["store", "ai-gateway"] {
                try network.start(
                    on: service, builtProductsDirectory.appending(path: service).path,
                    environment: common.merging(["BUS_KEY": keys.secretPath(service), "DATA_DIR": "\(keys.directory)/\(service)"]) { $1 },
                    logFile: "\(keys.directory)/\(service).log")
            }
            return hosts
        } catch {
            network.remove()
            keys.remove()
            throw error
        }
    }

    /// Starts an ingest worker on `host`.
    @discardableResult
    func startWorker(on host: String) throws -> ChildProcess {
        try network.start(
            on: host, builtProductsDirectory.appending(path: "ingest").path,
            environment: common.merging(Self.ingestLimits) { $1 }.merging(["BUS_KEY": keys.secretPath("ingest"), "DATA_DIR": "\(logs)/\(host)"]) { $1 },
            logFile: "\(logs)/\(host).log")
    }

    /// The ingest workers the broker has registered, or nil when it does not answer.
    func ingestWorkers() async -> Int? {
        let reply = try? await client.callRaw(service: BrokerProtocol.mmiServices, method: "list", payload: Data(), options: CallOptions(timeout: .seconds(1)))
        let services = reply.flatMap { try? WireCoding.decode([ServiceStatus].self, from: $0.payload) }
        return services.map { $0.first { $0.name == IngestContract.serviceName }?.workers ?? 0 }
    }

    func serving(_ service: String) async -> Bool {
        (try? await client.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1))))?.status == .serving
    }

    func materials(user: String) async throws -> [Material] {
        try await client.call(Store.listMaterials, MaterialList(limit: 100), options: CallOptions(user: user)).items
    }
}

@Suite("Ingest across hosts", .serialized)
struct IngestHostTests {
    /// A document with definitions, from which ai-gateway's local provider makes flashcards.
    static let document = Data((1...300).map { index in
        "## Term \(index)\n\nOsmoregulator \(index) is the process by which cell type \(index) keeps its water balance steady. " +
            "It depends on membrane channel \(index) and on the gradient of solute \(index).\n"
    }.joined(separator: "\n").utf8)

    @Test("an ingest host lost mid-job: the submit fails 'worker lost' in time, the sweep fails the material, a retry on the other host completes it once; the lost worker serves again within 10 s of the heal")
    func ingestHostLostMidJob() async throws {
        try await IngestHosts.run { hosts in
            let user = "lost-host"
            let lostWorker = try hosts.startWorker(on: "ingest-a")
            try await eventually("store, ai-gateway and one ingest worker serving", timeout: Wait.startup) {
                let storeUp = await hosts.serving("store")
                let aiGatewayUp = await hosts.serving("ai-gateway")
                let workers = await hosts.ingestWorkers()
                return storeUp && aiGatewayUp && workers == 1
            }
            // The host that will be lost slows to a fiftieth of a core, so its job is still
            // running when the host vanishes (its heartbeats still fit in that).
            try #require(hosts.network.cpu("ingest-a")).limit(cores: 0.02)

            let submitTimeout = Duration.seconds(20)
            let submit = Task { () -> Result<IngestResult, BusError> in
                do throws(BusError) {
                    return .success(try await hosts.client.call(
                        Ingest.submit, IngestSubmit(fileName: "osmosis.md"), options: CallOptions(user: user, timeout: submitTimeout, attachment: Self.document)))
                } catch {
                    return .failure(error)
                }
            }
            var inFlight: Material?
            try await eventually("the job is in flight on ingest-a", timeout: .seconds(20)) {
                inFlight = try await hosts.materials(user: user).first { $0.status == .processing }
                return inFlight != nil
            }
            let material = try #require(inFlight)
            try hosts.network.cut("ingest-a")
            let cutAt = ContinuousClock.now
            try hosts.startWorker(on: "ingest-b")

            // The broker expires the silent worker and answers its request; no caller waits past its deadline.
            let submitted = await submit.value
            let answeredAfter = ContinuousClock.now - cutAt
            #expect(answeredAfter < submitTimeout, "the submit was answered \(answeredAfter) after the cut")
            switch submitted {
            case .success(let result): Issue.record("the submit completed although its only worker was cut off: \(result.material.status)")
            case .failure(let error): #expect(error.code == .unavailable && error.message.contains("worker lost"), "the submit failed with \(error)")
            }

            // The other host's sweep fails the lost worker's material, as docs/flows.md says.
            try await eventually("the sweep fails the lost worker's material", timeout: .seconds(30)) {
                let now = try await hosts.client.call(Store.getMaterial, RecordID(id: material.id), options: CallOptions(user: user))
                return now.status == .failed && (now.failureReason ?? "").contains("worker lost")
            }
            let retried = try await hosts.client.call(
                Ingest.retry, IngestRetry(materialId: material.id), options: CallOptions(user: user, timeout: .seconds(30)))
            #expect(retried.material.status == .ready)
            let cards = try #require(retried.outcome).flashcardIds
            #expect(!cards.isEmpty, "the document makes flashcards")

            try #require(hosts.network.cpu("ingest-a")).limit(cores: 1)
            try hosts.network.heal("ingest-a")
            let healedAt = ContinuousClock.now
            try await eventually("the lost worker is registered again", timeout: Wait.startup) { await hosts.ingestWorkers() == 2 }
            let recovery = ContinuousClock.now - healedAt
            #expect(recovery < .seconds(10), "the lost worker was back in service \(recovery) after the heal")
            #expect(await lostWorker.waitForExit(timeout: .zero) == nil, "the lost worker was not restarted: it still runs")

            // Whatever the lost worker still had to say has arrived by now: nothing was applied twice.
            try await Task.sleep(for: .seconds(3))
            let materials = try await hosts.materials(user: user)
            #expect(materials.map(\.id) == [material.id] && materials.first?.status == .ready, "one material, ready: \(materials.map(\.status))")
            let stored = try await hosts.client.call(Store.listFlashcards, FlashcardList(limit: 500, materialId: material.id), options: CallOptions(user: user)).items
            #expect(Set(stored.map(\.id)) == Set(cards) && stored.count == cards.count, "the material's cards: \(stored.count), the retry made \(cards.count)")
            let documents = try await hosts.client.call(
                Store.listSourceDocuments, SourceDocumentList(limit: 10, materialId: material.id), options: CallOptions(user: user)).items
            #expect(documents.count == 1, "\(documents.count) source documents")

            // Jobs run again with both workers registered.
            for index in 0..<4 {
                let result = try await hosts.client.call(
                    Ingest.submit, IngestSubmit(fileName: "after-\(index).md"),
                    options: CallOptions(user: user, timeout: .seconds(30), attachment: Data("# After \(index)\n\nSodium \(index) is an element of group one.\n".utf8)))
                #expect(result.material.status == .ready)
            }
            let log = (try? String(contentsOfFile: "\(hosts.logs)/ingest-a.log", encoding: .utf8)) ?? ""
            #expect(!log.contains("stopped on error"), "the lost worker never stopped")
        }
    }
}
