import Foundation
import Logging
import Synchronization
import Threads
import Wire
import ZMQ

/// Work handed to the I/O thread; it runs there, with the loop that owns every socket.
typealias LoopCommand = @Sendable (IOLoop) -> Void

/// The one thread per ``Bus`` that owns the ZeroMQ context and every socket.
///
/// Other threads never touch a socket: they ``submit(_:)`` commands, which are queued under a
/// mutex and wake the thread through an eventfd it polls together with its sockets.
///
/// A wake-up costs a system call for the submitter and a context switch for the loop, so
/// submitters signal only when the loop said it is about to block: while it is awake it takes
/// what was queued before it sleeps.
final class IOThread: Sendable {
    private enum LoopState {
        /// Running; it looks at the inbox again before it blocks.
        case awake
        /// Blocked (or about to block) in `zmq_poll`: a new command must signal the eventfd.
        case sleeping
        /// Blocked, and the eventfd has been signalled.
        case signalled
    }

    private struct Inbox {
        var commands: [LoopCommand] = []
        var loopState = LoopState.awake
        var accepting = true

        /// Whether the submitter that just changed the inbox must signal the eventfd.
        mutating func needsSignal() -> Bool {
            guard loopState == .sleeping else { return false }
            loopState = .signalled
            return true
        }
    }

    private enum Completion {
        case running([CheckedContinuation<Void, Never>])
        case finished
    }

    private let inbox = Mutex(Inbox())
    private let completion = Mutex(Completion.running([]))
    let wakeup: EventFD

    /// Starts the thread. `makeLoop` runs on it and builds the loop that owns the sockets.
    init(name: String, makeLoop: @escaping @Sendable (IOThread) -> IOLoop) throws(BusError) {
        do {
            wakeup = try EventFD()
        } catch {
            throw .internal("cannot create the I/O thread's eventfd: \(error)")
        }
        startThread(named: name) { [self] in
            blockAllSignalsOnCurrentThread()
            let loop = makeLoop(self)
            loop.run()
            finish()
        }
    }

    /// Queues `command` for the I/O thread.
    /// - Throws: `UNAVAILABLE` at once if the bus has been shut down.
    func submit(_ command: @escaping LoopCommand) throws(BusError) {
        let mustWake = try inbox.withLock { inbox throws(BusError) -> Bool in
            guard inbox.accepting else { throw .unavailable("the bus connection is shut down") }
            inbox.commands.append(command)
            return inbox.needsSignal()
        }
        if mustWake { wakeup.signal() }
    }

    /// Stops accepting commands; the loop runs what is queued, closes its sockets and exits.
    func requestStop() {
        let mustWake = inbox.withLock { inbox -> Bool in
            guard inbox.accepting else { return false }
            inbox.accepting = false
            return inbox.needsSignal()
        }
        if mustWake { wakeup.signal() }
    }

    /// Loop side: swaps every queued command into `commands` (which must be empty; its storage
    /// becomes the inbox's, so neither side allocates once both have grown), and returns whether
    /// the loop should keep running after running them. Once stopping, nothing more can be
    /// queued, so these are the last commands.
    func takeCommands(into commands: inout [LoopCommand]) -> Bool {
        inbox.withLock { inbox in
            swap(&commands, &inbox.commands)
            return inbox.accepting
        }
    }

    /// Loop side, just before a blocking poll: returns `false` if commands (or a stop) are
    /// waiting, so it must not block; otherwise from now on submitters signal the eventfd.
    func prepareToSleep() -> Bool {
        inbox.withLock { inbox in
            guard inbox.commands.isEmpty, inbox.accepting else { return false }
            inbox.loopState = .sleeping
            return true
        }
    }

    /// Loop side, after the blocking poll returned: submitters stop signalling.
    func awoke() {
        inbox.withLock { $0.loopState = .awake }
    }

    /// Suspends until the thread has closed its sockets and exited.
    func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = completion.withLock { state -> Bool in
                switch state {
                case .finished: return true
                case .running(var waiters):
                    waiters.append(continuation)
                    state = .running(waiters)
                    return false
                }
            }
            if finished { continuation.resume() }
        }
    }

    private func finish() {
        let waiters = completion.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard case .running(let waiters) = state else { return [] }
            state = .finished
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
