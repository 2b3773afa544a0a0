import Dispatch
import Foundation
import FuzzChecks

// libFuzzer's entry: IngestCheck on each input (Fuzz/Checks/IngestCheck.swift says what it
// holds), run to completion from libFuzzer's thread.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIngest(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Data(UnsafeRawBufferPointer(start: start, count: count))
    let done = DispatchSemaphore(value: 0)
    Task {
        await IngestCheck.check(input)
        done.signal()
    }
    done.wait()
    return 0
}
