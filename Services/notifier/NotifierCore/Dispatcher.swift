import Bus
import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import ServiceLifecycle
import Storage
import Synchronization
import Wire

/// Moves notifications through their lives: releases due ones (respecting quiet hours),
/// claims pending deliveries, sends them concurrently, and records the outcomes — all state in
/// the database, so a restart resumes where the last process stopped.
///
/// One loop owns the database work; sends run as child tasks and hand their outcomes back
/// through `finished`. The loop wakes on ``wake()`` (new work committed), on a finished send, and
/// every `pollInterval` (scheduled times, retries, the wall clock moving).
public final class Dispatcher: Service, Sendable {
    private let database: ServiceDatabase
    private let configuration: NotifierConfiguration
    private let clock: any WallClock
    private let senders: [ChannelType: any ChannelSender]
    private let logger: Logger
    private let policy: RetryPolicy
    private let wakeups: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    private let finished = Mutex<[DeliveryResult]>([])

    init(database: ServiceDatabase, configuration: NotifierConfiguration, clock: any WallClock, senders: [ChannelType: any ChannelSender], logger: Logger) {
        self.database = database
        self.configuration = configuration
        self.clock = clock
        self.senders = senders
        self.logger = logger
        policy = RetryPolicy(base: configuration.retryBase, maximum: configuration.retryMaximum, maximumAttempts: configuration.maximumAttempts)
        (wakeups, wakeContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the loop to look for work now (after a commit that created some).
    public func wake() {
        wakeContinuation.yield()
    }

    /// Runs until graceful shutdown; then claims nothing new, lets the sends in flight finish and
    /// records them.
    public func run() async throws {
        let recovered = try await database.pool.write { [clock] db in try DeliveryStore.recoverInterrupted(db, now: clock.now().unixMilliseconds) }
        if recovered > 0 { logger.notice("resending deliveries interrupted by the last stop (same ids)", metadata: ["count": "\(recovered)"]) }
        let stopping = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { [wakeContinuation, configuration] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: configuration.pollInterval)
                        wakeContinuation.yield()
                    }
                }
                var inFlight = 0
                wakeContinuation.yield()
                for await _ in wakeups {
                    let results = finished.withLock { results in
                        defer { results.removeAll() }
                        return results
                    }
                    inFlight -= results.count
                    let draining = stopping.load(ordering: .relaxed)
                    let jobs = await round(results: results, claimLimit: draining ? 0 : configuration.maximumInFlight - inFlight)
                    inFlight += jobs.count
                    for job in jobs {
                        group.addTask { await self.deliver(job) }
                    }
                    if draining && inFlight == 0 { break }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: { [wakeContinuation] in
            stopping.store(true, ordering: .relaxed)
            wakeContinuation.yield()
        }
        logger.info("dispatcher stopped")
    }

    /// One pass: record outcomes, release what is due, claim what can be sent now.
    private func round(results: [DeliveryResult], claimLimit: Int) async -> [DeliveryJob] {
        let now = clock.now().unixMilliseconds
        do {
            return try await database.pool.write { [configuration, policy] db in
                if !results.isEmpty {
                    try DeliveryStore.record(db, results, now: now, policy: policy, disableAfter: configuration.disableAfter)
                }
                _ = try DeliveryStore.releaseDue(db, now: now, alarmInterval: configuration.alarmInterval)
                return try DeliveryStore.claim(db, now: now, limit: claimLimit, perChannel: configuration.maximumInFlightPerChannel)
            }
        } catch {
            // The outcomes are not lost: put them back for the next pass.
            finished.withLock { $0.insert(contentsOf: results, at: 0) }
            logger.error("dispatcher pass failed; retrying", metadata: ["error": "\(error)"])
            return []
        }
    }

    private func deliver(_ job: DeliveryJob) async {
        let outcome: DeliveryOutcome
        if let sender = senders[job.channel.type] {
            outcome = await sender.send(job, now: clock.now())
        } else {
            outcome = .failed(status: nil, error: "\(job.channel.type.rawValue) is not configured on this server")
        }
        log(job, outcome)
        DeliveryMetrics.count(job.channel.type, outcome)
        finished.withLock { $0.append(DeliveryResult(job: job, outcome: outcome)) }
        wakeContinuation.yield()
    }

    private func log(_ job: DeliveryJob, _ outcome: DeliveryOutcome) {
        var metadata: Logger.Metadata = [
            "delivery": "\(job.deliveryId)", "channel": "\(job.channel.type.rawValue)", "attempt": "\(job.attempt)",
        ]
        switch outcome {
        case .sent:
            if logger.logLevel <= .debug { logger.debug("delivered", metadata: metadata) }
        case .retry(_, let error, _), .failed(_, let error), .disableChannel(_, let error), .removeChannel(_, let error):
            metadata["error"] = "\(error)"
            logger.warning("delivery attempt did not succeed", metadata: metadata)
        }
    }
}
