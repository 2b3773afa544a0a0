import Bus
import Contracts
import Foundation
import Synchronization
import TestSupport
import Testing
import Wire

/// The whole system over four hosts, the test as the app on a fifth address: the broker; store;
/// scheduler and timer-ticker; ingest, ai-gateway and notifier. All with bus security on.
private struct FlowHosts: HostWorld {
    let network: VirtualHosts
    let keys: TestKeys
    let client: Bus
    let logs: String
    let processes: [String: ChildProcess]

    static let placement = ["store": "store", "scheduler": "planning", "timer-ticker": "planning", "ingest": "workers", "ai-gateway": "workers", "notifier": "workers"]
    static var services: [String] { placement.keys.sorted() }
    /// A heartbeat for a network with 400 ms round trips: three of them (the liveness) leave room
    /// for a lost packet's retransmission, which 500 ms ones would not.
    static let heartbeatMs = 1000

    static func start() async throws -> FlowHosts {
        let network = try VirtualHosts(hosts: ["broker", "store", "planning", "workers"])
        let keys = try TestKeys()
        do {
            for service in services { _ = try keys.service(service) }
            let broker = network.address("broker")
            let endpoints = ["BUS_RPC": "tcp://\(broker):5555", "BUS_PUB": "tcp://\(broker):5556", "BUS_SUB": "tcp://\(broker):5557"]
            let common = [
                "BUS_HEARTBEAT_MS": String(heartbeatMs), "LOG_LEVEL": "info", "BUS_BROKER_KEY": keys.publicPath("broker"), "BUS_SECURITY": "on",
                "NOTIFIER_ALARM_INTERVAL_MS": "400", "NOTIFIER_REMINDER_WINDOW_SECONDS": "0",
            ].merging(endpoints) { $1 }
            var processes: [String: ChildProcess] = [:]
            processes["broker"] = try network.start(
                on: "broker", builtProductsDirectory.appending(path: "broker").path,
                environment: common.merging([
                    "BUS_KEY": keys.secretPath("broker"), "BUS_ALLOWLIST": keys.allowlistPath, "BUS_RPC_BIND": endpoints["BUS_RPC"]!,
                    "BUS_PUB_BIND": endpoints["BUS_PUB"]!, "BUS_SUB_BIND": endpoints["BUS_SUB"]!,
                ]) { $1 },
                logFile: "\(keys.directory)/broker.log")
            for service in services {
                processes[service] = try network.start(
                    on: placement[service]!, builtProductsDirectory.appending(path: service).path,
                    environment: common.merging(["BUS_KEY": keys.secretPath(service), "DATA_DIR": "\(keys.directory)/\(service)"]) { $1 },
                    logFile: "\(keys.directory)/\(service).log")
            }
            let client = try hostClient(source: "delayed-links-test", endpoints: endpoints, heartbeatMs: heartbeatMs, security: try keys.operator("client"))
            let hosts = FlowHosts(network: network, keys: keys, client: client, logs: keys.directory, processes: processes)
            try await eventually("every service serving across hosts", timeout: Wait.startup) { await hosts.unserved().isEmpty }
            return hosts
        } catch {
            network.remove()
            keys.remove()
            throw error
        }
    }

    /// The services that do not answer their health check within a second.
    func unserved() async -> [String] {
        await withTaskGroup(of: String?.self) { group in
            for service in Self.services {
                group.addTask {
                    let health = try? await client.call(Reserved.health(service), Empty(), options: CallOptions(timeout: .seconds(1)))
                    return health?.status == .serving ? nil : service
                }
            }
            return await group.reduce(into: []) { unserved, service in if let service { unserved.append(service) } }.sorted()
        }
    }
}

/// The flows' calls over bad links: each attempt must end within its deadline, with an answer or a
/// `BusError`; an attempt that failed with a code worth retrying is made again with the same
/// idempotency key after a pause that doubles (0.25 s up to 4 s), as an app would. A worker whose
/// heartbeats a retransmission held back is expired by the broker and registers again a few
/// seconds later; the pauses span that.
private final class PatientCaller: Sendable {
    let client: Bus
    /// How far past its deadline an attempt may end: the machine is shared and busy.
    static let grace = Duration.seconds(1)
    static let retryable: Set<StatusCode> = [.unavailable, .deadlineExceeded, .resourceExhausted, .aborted]

    private let failures = Mutex<[String]>([])
    private let attempts = Mutex(0)

    init(client: Bus) { self.client = client }

    /// The failed attempts so far, each as "method: code".
    var failed: [String] { failures.withLock { $0 } }
    /// The attempts so far, answered or not.
    var attempted: Int { attempts.withLock { $0 } }

    func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, user: String, idem: String? = nil, attachment: Data? = nil,
        timeout: Duration = .seconds(10), tries: Int = 8
    ) async throws -> Response {
        var lastError: BusError?
        var pause = Duration.milliseconds(250)
        for attempt in 0..<tries {
            if attempt > 0 {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(4))
            }
            attempts.withLock { $0 += 1 }
            let started = ContinuousClock.now
            do throws(BusError) {
                return try await client.call(method, request, options: CallOptions(user: user, timeout: timeout, idempotencyKey: idem, attachment: attachment))
            } catch {
                let took = ContinuousClock.now - started
                #expect(took < timeout + Self.grace, "\(method.name) failed \(took) after it began, past its \(timeout) deadline: \(error)")
                failures.withLock { $0.append("\(method.name): \(error.code.name)") }
                guard Self.retryable.contains(error.code) else { throw error }
                lastError = error
            }
        }
        Issue.record("\(method.name) failed \(tries) times; the last: \(lastError!)")
        throw lastError!
    }

    /// A first attempt whose deadline is shorter than the way to the service and back (four
    /// crossings of the bridge): the caller must hear DEADLINE_EXCEEDED in time. The request may
    /// still arrive and be applied; the retry, with the same key, must not apply it again.
    func tooSoon<Request, Response>(_ method: Method<Request, Response>, _ request: Request, user: String, idem: String, attachment: Data? = nil, deadline: Duration) async {
        attempts.withLock { $0 += 1 }
        let started = ContinuousClock.now
        do throws(BusError) {
            let answer = try await client.call(method, request, options: CallOptions(user: user, timeout: deadline, idempotencyKey: idem, attachment: attachment))
            Issue.record("\(method.name) answered within \(deadline), faster than the links allow: \(answer)")
        } catch {
            let took = ContinuousClock.now - started
            #expect(error.code == .deadlineExceeded && took < deadline + Self.grace, "\(method.name) with a \(deadline) deadline failed \(took) after it began: \(error)")
            failures.withLock { $0.append("\(method.name): \(error.code.name) (deadline \(deadline))") }
        }
    }
}

@Suite("Across hosts: every link slow and lossy while the five flows run", .serialized)
struct DelayedLinksTests {
    /// 200 ms and 5 % on every link in CI; scripts/partitions adds jitter and a lossier network
    /// (STUDYBUS_LONG_PARTITIONS=1).
    static let faults = [LinkFault(delay: .milliseconds(200), loss: 0.05)]
        + (ProcessInfo.processInfo.environment["STUDYBUS_LONG_PARTITIONS"] == "1"
            ? [LinkFault(delay: .milliseconds(200), jitter: .milliseconds(100), loss: 0.05), LinkFault(delay: .milliseconds(300), loss: 0.10)] : [])

    @Test("the five flows of docs/flows.md complete over links that delay every packet and lose some: no call outlives its deadline, nothing acknowledged is lost or applied twice, consumers catch up, timers fire once; every process serves within 10 s of the heal",
          arguments: faults)
    func fiveFlows(fault: LinkFault) async throws {
        try await FlowHosts.run { hosts in
            let links = try hosts.network.impairLinks(fault)
            defer { links.heal() }
            let caller = PatientCaller(client: hosts.client)
            let fire = Self.nextReminderMinute()

            try await withThrowingTaskGroup(of: Void.self) { flows in
                flows.addTask { try await Self.materialToReview(caller, fire: fire) }
                flows.addTask { try await Self.timerAlarm(caller) }
                flows.addTask { try await Self.habitReminder(caller, fire: fire) }
                flows.addTask { try await Self.tutor(caller) }
                flows.addTask { try await Self.deleteSet(caller) }
                try await flows.waitForAll()
            }
            let counted = links.delayLine.total
            #expect(counted.dropped > 0, "the links lost no packet: \(counted)")
            let brokerLog = (try? String(contentsOfFile: "\(hosts.logs)/broker.log", encoding: .utf8)) ?? ""
            let expiries = brokerLog.components(separatedBy: "no heartbeat for").count - 1
            print("delayed links \(fault.testDescription): \(counted.passed) packets passed, \(counted.dropped) dropped; \(caller.attempted) calls, failed: \(caller.failed); workers expired by the broker: \(expiries)")

            links.heal()
            let healedAt = ContinuousClock.now
            try await eventually("every service serving after the heal", timeout: Wait.startup) { await hosts.unserved().isEmpty }
            let recovery = ContinuousClock.now - healedAt
            #expect(recovery < .seconds(10), "every service back in service \(recovery) after the heal")
            print("delayed links \(fault.testDescription): every service serving \(recovery) after the heal")
            // Whatever was still on its way has arrived by now: still nothing twice.
            try await Task.sleep(for: .seconds(2))
            let healthy = PatientCaller(client: hosts.client)
            #expect(try await healthy.call(Store.listMaterials, MaterialList(limit: 100), user: "delay-flow1").items.count == 1)
            #expect(try await Self.inbox(healthy, user: "delay-flow2").filter { $0.kind == .alarm }.count == 12)
            #expect(try await Self.inbox(healthy, user: "delay-flow3").filter { $0.kind == .reminder }.count == 1)
            #expect(try await healthy.call(Store.listMaterials, MaterialList(limit: 100), user: "delay-flow4").items.count == 1)
            #expect(try await healthy.call(Store.listFlashcards, FlashcardList(), user: "delay-flow5").items.count == 1)
            #expect(healthy.failed.isEmpty, "calls failed on healed links: \(healthy.failed)")
            for (name, process) in hosts.processes {
                #expect(await process.waitForExit(timeout: .zero) == nil, "\(name) exited")
                let log = (try? String(contentsOfFile: "\(hosts.logs)/\(name).log", encoding: .utf8)) ?? ""
                #expect(!log.contains("stopped on error"), "\(name) stopped on an error")
            }
        }
    }

    // MARK: The flows, each with a user of its own

    /// 1: a submitted text becomes one ready material whose cards scheduler has (durable
    /// consumer), notifier says it is ready, the review reminder comes once.
    private static func materialToReview(_ caller: PatientCaller, fire: Date) async throws {
        let user = "delay-flow1"
        _ = try await caller.call(
            Scheduler.updateSettings, SettingsUpdate(timeZone: "UTC", reviewReminderTime: utc("HH:mm", fire)), user: user, idem: "\(user)-settings")
        await caller.tooSoon(
            Ingest.submit, IngestSubmit(fileName: "photosynthesis.md", wait: true), user: user, idem: "\(user)-submit",
            attachment: Data(photosynthesis.utf8), deadline: tooShort)
        let submitted = try await caller.call(
            Ingest.submit, IngestSubmit(fileName: "photosynthesis.md", wait: true), user: user, idem: "\(user)-submit",
            attachment: Data(photosynthesis.utf8), timeout: .seconds(60), tries: 3)
        let materials = try await caller.call(Store.listMaterials, MaterialList(limit: 100), user: user).items
        #expect(materials.map(\.id) == [submitted.materialId], "one material, however often the submit was tried: \(materials.map(\.id))")
        #expect(materials.first?.status == .ready)
        let cards = try await caller.call(Store.listFlashcards, FlashcardList(limit: 500, materialId: submitted.materialId), user: user).items.map(\.id)
        #expect(cards.count >= 3, "the text makes cards: \(cards.count)")
        try await eventually("scheduler has every card of the material, due now", timeout: .seconds(60)) {
            let due = try await caller.call(Scheduler.dueCards, DueRequest(limit: 1000), user: user).cards.map(\.cardId)
            return due.sorted() == cards.sorted()
        }
        try await eventually("notifier says the material is ready", timeout: .seconds(60)) {
            try await inbox(caller, user: user).contains { $0.kind == .material }
        }
        try await eventually("the review reminder arrives", timeout: .seconds(fire.timeIntervalSinceNow + 40)) {
            try await inbox(caller, user: user).contains { $0.kind == .reminder }
        }
        try await Task.sleep(for: .seconds(2))
        let items = try await inbox(caller, user: user)
        #expect(items.filter { $0.kind == .material }.count == 1, "material notices: \(items.map(\.title))")
        #expect(items.filter { $0.kind == .reminder }.count == 1, "review reminders: \(items.map(\.title))")
    }

    /// 2: a timer fires once: exactly the 12 alarms of one completion reach the inbox.
    private static func timerAlarm(_ caller: PatientCaller) async throws {
        let user = "delay-flow2"
        await caller.tooSoon(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 3), user: user, idem: "\(user)-tea", deadline: tooShort)
        let timer = try await caller.call(TimerTicker.createTimer, CreateTimerRequest(label: "Tea", seconds: 3), user: user, idem: "\(user)-tea")
        let timers = try await caller.call(TimerTicker.listTimers, ListTimersRequest(), user: user).timers
        #expect(timers.map(\.id) == [timer.id], "one timer, however often the create was tried")
        try await eventually("the 12 alarms ring", timeout: .seconds(60)) { try await alarms(caller, user: user, timer: timer.id).count >= 12 }
        try await Task.sleep(for: .seconds(5))
        let rung = try await alarms(caller, user: user, timer: timer.id)
        #expect(rung.count == 12 && Set(rung).count == 12, "alarms of the timer: \(rung.sorted())")
    }

    /// 3: one habit reminder at its time, none for the task checked in before it.
    private static func habitReminder(_ caller: PatientCaller, fire: Date) async throws {
        let user = "delay-flow3"
        let time = utc("HH:mm", fire)
        let reading = try await caller.call(
            Scheduler.createSystem, HabitSystemCreate(name: "Reading", identity: "a Consistent Reader"), user: user, idem: "\(user)-system")
        let due = try await caller.call(
            Scheduler.createTask, HabitTaskCreate(systemId: reading.id, name: "Read 10 pages", frequency: .daily, reminderTime: time), user: user,
            idem: "\(user)-read")
        let done = try await caller.call(
            Scheduler.createTask, HabitTaskCreate(systemId: reading.id, name: "Stretch 5 minutes", frequency: .daily, reminderTime: time), user: user,
            idem: "\(user)-stretch")
        _ = try await caller.call(Scheduler.checkIn, CheckInRequest(taskId: done.id, date: utc("yyyy-MM-dd", Date())), user: user, idem: "\(user)-checkin")
        try await eventually("the habit reminder arrives", timeout: .seconds(fire.timeIntervalSinceNow + 40)) {
            try await inbox(caller, user: user).contains { $0.kind == .reminder }
        }
        try await Task.sleep(for: .seconds(2))
        let reminders = try await inbox(caller, user: user).filter { $0.kind == .reminder }.map { "\($0.title) \($0.body)" }
        #expect(reminders.count == 1 && reminders.first?.contains(due.name) == true, "habit reminders: \(reminders)")
    }

    /// 4: the tutor answers from a material; the conversation holds the question and the answer
    /// once, however often the chat was tried (its ids derive from the idempotency key).
    private static func tutor(_ caller: PatientCaller) async throws {
        let user = "delay-flow4"
        let material = try await caller.call(
            Ingest.submit, IngestSubmit(fileName: "photosynthesis.md", wait: true), user: user, idem: "\(user)-submit",
            attachment: Data(photosynthesis.utf8), timeout: .seconds(60), tries: 3)
        let conversation = try await caller.call(
            Store.createConversation, ConversationCreate(title: "Questions", materialId: material.materialId), user: user, idem: "\(user)-conversation")
        let question = "Why do plants look green?"
        let chat = ChatRequest(
            requestId: "\(user)-chat", messages: [ChatMessage(role: .user, content: question)], conversationId: conversation.id, materialId: material.materialId)
        await caller.tooSoon(AIGateway.chat, chat, user: user, idem: "\(user)-chat", deadline: tooShort)
        let reply = try await caller.call(AIGateway.chat, chat, user: user, idem: "\(user)-chat", timeout: .seconds(30))
        #expect(reply.text.contains("reflects green light"), "the answer draws on the material: \(reply.text)")
        let stored = try await caller.call(Store.listMessages, MessageList(conversationId: conversation.id), user: user).items
        #expect(stored.map(\.role) == [.user, .assistant] && stored.map(\.text) == [question, reply.text], "the conversation: \(stored.map(\.text))")
    }

    /// 5: deleting a set drops its cards in store and, by `flashcard.deleted`, in scheduler; the
    /// other set's card stays.
    private static func deleteSet(_ caller: PatientCaller) async throws {
        let user = "delay-flow5"
        let doomed = try await caller.call(Store.createSet, FlashcardSetCreate(name: "Old deck"), user: user, idem: "\(user)-doomed")
        let kept = try await caller.call(Store.createSet, FlashcardSetCreate(name: "Keep"), user: user, idem: "\(user)-kept")
        await caller.tooSoon(
            Store.createFlashcard, FlashcardCreate(front: "Q1", back: "A1", setId: doomed.id), user: user, idem: "\(user)-card1", deadline: tooShort)
        for n in 1...3 {
            _ = try await caller.call(
                Store.createFlashcard, FlashcardCreate(front: "Q\(n)", back: "A\(n)", setId: doomed.id), user: user, idem: "\(user)-card\(n)")
        }
        let keptCard = try await caller.call(
            Store.createFlashcard, FlashcardCreate(front: "Keep?", back: "Yes", setId: kept.id), user: user, idem: "\(user)-kept-card").id
        let cards = try await caller.call(Store.listFlashcards, FlashcardList(), user: user).items
        #expect(cards.count == 4, "four cards, however often each create was tried: \(cards.count)")
        try await eventually("scheduler has every card", timeout: .seconds(60)) {
            try await caller.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.count == 4
        }
        _ = try await caller.call(Store.deleteSet, RecordID(id: doomed.id), user: user, idem: "\(user)-delete")
        try await eventually("scheduler dropped the deleted cards", timeout: .seconds(60)) {
            try await caller.call(Scheduler.dueCards, DueRequest(limit: 100), user: user).cards.map(\.cardId) == [keptCard]
        }
        #expect(try await caller.call(Store.listFlashcards, FlashcardList(), user: user).items.map(\.id) == [keptCard])
    }

    // MARK: Helpers

    /// A deadline no call can meet over the slow links: a call and its reply cross the bridge four
    /// times through the broker, each crossing held at least 100 ms in every variant.
    private static let tooShort = Duration.milliseconds(200)

    private static func inbox(_ caller: PatientCaller, user: String) async throws -> [NotificationRecord] {
        try await caller.call(Notifier.inboxList, InboxListRequest(limit: 100), user: user).items
    }

    /// The ids of the alarm notifications of `timer` in the inbox.
    private static func alarms(_ caller: PatientCaller, user: String, timer: String) async throws -> [String] {
        try await inbox(caller, user: user).filter { $0.kind == .alarm && $0.timerId == timer }.map(\.id)
    }

    /// The next whole minute at least 30 s away: reminder times have minute resolution, and the
    /// settings must reach the scheduler through the slow links before the minute begins.
    static func nextReminderMinute() -> Date {
        let now = Date().timeIntervalSince1970
        let minute = (now / 60).rounded(.down) * 60
        return Date(timeIntervalSince1970: minute + (now - minute < 30 ? 60 : 120))
    }

    /// A short study text with definitions ("X is Y"), from which the local provider makes cards.
    static let photosynthesis = """
        # Photosynthesis

        Photosynthesis is the process by which green plants turn light energy into chemical energy.
        Chlorophyll is the green pigment that absorbs red and blue light and reflects green light,
        which is why most plants look green.

        ## The Calvin cycle

        The Calvin cycle is the set of light-independent reactions in the stroma. RuBisCO is the
        enzyme that captures carbon dioxide.
        """
}

extension LinkFault: CustomTestStringConvertible {
    var testDescription: String { "\(delay) ± \(jitter), \(Int(loss * 100)) % lost" }
}
