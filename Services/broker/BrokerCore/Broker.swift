import Bus
import CoreMetrics
import Foundation
import Logging
import Synchronization
import Threads
import Wire
import ZMQ

/// The StudyBus broker: 7/MDP request routing with credit, the XSUB/XPUB event proxy, and
/// `bus.rpc` call traces, on one thread running one synchronous poll loop.
///
/// ```swift
/// let broker = try Broker(configuration: BrokerConfiguration(), logger: logger)
/// let endpoints = try await broker.start()   // binds, or throws if it cannot
/// ...
/// await broker.stop()
/// ```
public final class Broker: Sendable {
    /// Where clients, workers, publishers and subscribers connect (ports resolved).
    public struct Endpoints: Sendable, Equatable {
        public var rpc: String
        public var pub: String
        public var sub: String

        public init(rpc: String, pub: String, sub: String) {
            self.rpc = rpc
            self.pub = pub
            self.sub = sub
        }
    }

    private enum State {
        case idle
        case starting(CheckedContinuation<Endpoints, any Error>)
        case running
        case stopped
    }

    public let configuration: BrokerConfiguration
    private let logger: Logger
    private let state = Mutex(State.idle)
    private let stopRequested = Atomic<Bool>(false)
    private let reloadRequested = Atomic<Bool>(false)
    /// The allowlist read at start, handed to the broker thread; nil while security is off.
    private let initialAccess: BrokerAccess?
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])
    private let wakeup: EventFD
    private let metricsFactory: any MetricsFactory
    /// What the operator console shows, fed by the broker thread; nil when there is no console.
    public let console: ConsoleFeed?

    /// A broker that records its metrics through `metrics`, by default swift-metrics'
    /// bootstrapped factory, and feeds `console` if given.
    /// - Throws: `FAILED_PRECONDITION` when the broker has CURVE keys but no allowlist, or the
    ///   allowlist cannot be read (naming the file and line).
    public init(configuration: BrokerConfiguration, logger: Logger, metrics: (any MetricsFactory)? = nil, console: ConsoleFeed? = nil) throws(BusError) {
        self.configuration = configuration
        self.logger = logger
        metricsFactory = metrics ?? MetricsSystem.factory
        self.console = console
        if configuration.curveServerKeys != nil {
            guard let path = configuration.allowlistPath, !path.isEmpty else {
                throw .failedPrecondition(
                    "BUS_SECURITY is on but BUS_ALLOWLIST is not set: give the allowlist of the keys the broker admits (busctl keys allow writes its lines)")
            }
            initialAccess = try BrokerAccess.read(path: path, topics: TopicRules(contracts: configuration.contracts))
        } else {
            initialAccess = nil
        }
        do {
            wakeup = try EventFD()
        } catch {
            throw .internal("cannot create the broker's eventfd: \(error)")
        }
    }

    /// Binds the three sockets and starts routing on the broker thread.
    /// - Returns: the bound endpoints, in a form local clients can connect to.
    /// - Throws: `UNAVAILABLE` if a socket cannot bind (e.g. the port is taken).
    public func start() async throws(BusError) -> Endpoints {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let mayStart = state.withLock { state -> Bool in
                    guard case .idle = state else { return false }
                    state = .starting(continuation)
                    return true
                }
                guard mayStart else {
                    continuation.resume(throwing: BusError.failedPrecondition("the broker was already started"))
                    return
                }
                startThread(named: "studybus-broker") { [self] in runOnThread() }
            }
        } catch let error as BusError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    private func runOnThread() {
        blockAllSignalsOnCurrentThread()
        let loop: BrokerLoop
        do {
            loop = try BrokerLoop(
                configuration: configuration, access: initialAccess, logger: logger, metrics: BrokerMetrics.make(factory: metricsFactory), console: console)
        } catch {
            let continuation = state.withLock { state -> CheckedContinuation<Endpoints, any Error>? in
                guard case .starting(let continuation) = state else { return nil }
                state = .stopped
                return continuation
            }
            continuation?.resume(throwing: BusError.unavailable("the broker cannot bind: \(error)"))
            markFinished()
            return
        }
        let continuation = state.withLock { state -> CheckedContinuation<Endpoints, any Error>? in
            guard case .starting(let continuation) = state else { return nil }
            state = .running
            return continuation
        }
        continuation?.resume(returning: loop.boundEndpoints)
        loop.run(
            wakeup: wakeup, stopRequested: { stopRequested.load(ordering: .acquiring) },
            takeReloadRequest: { reloadRequested.exchange(false, ordering: .acquiringAndReleasing) })
        state.withLock { $0 = .stopped }
        markFinished()
    }

    /// Reads the allowlist again on the broker thread (what SIGHUP does): connections stay, and
    /// each is judged by the new list from its next message on. A list with an error is not
    /// used; the broker logs why and keeps the one it has.
    public func reloadAllowlist() {
        reloadRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Whether the broker thread is routing: started and not stopped.
    public var isRouting: Bool {
        state.withLock { state in
            if case .running = state { return true }
            return false
        }
    }

    /// Stops routing: workers get DISCONNECT, queued requests UNAVAILABLE, sockets close.
    /// Returns when the broker thread has finished.
    public func stop() async {
        let wasStarted = state.withLock { state -> Bool in
            if case .idle = state {
                state = .stopped
                return false
            }
            return true
        }
        stopRequested.store(true, ordering: .releasing)
        wakeup.signal()
        guard wasStarted else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyFinished = finished.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters!.append(continuation)
                return false
            }
            if alreadyFinished { continuation.resume() }
        }
    }

    private func markFinished() {
        let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            let pending = waiters ?? []
            waiters = nil
            return pending
        }
        for waiter in waiters { waiter.resume() }
    }
}
