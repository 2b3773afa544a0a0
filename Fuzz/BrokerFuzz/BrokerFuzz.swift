import BrokerCore
import Dispatch
import FuzzChecks
import Logging

// libFuzzer's entry: each input through one BrokerCheck (Fuzz/Checks/BrokerCheck.swift says
// what it holds) on a broker of its own, both made at the first input and kept for the run.

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
nonisolated(unsafe) private var check: BrokerCheck?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBroker(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    do {
        if check == nil {
            let broker = try Broker(configuration: BrokerCheck.configuration, logger: Logger(label: "broker") { _ in SwiftLogNoOpLogHandler() })
            check = try BrokerCheck(endpoints: blocking { try await broker.start() })
        }
        try check!.feed(UnsafeRawBufferPointer(start: start, count: count))
    } catch {
        fatalError("\(error)")
    }
    return 0
}
