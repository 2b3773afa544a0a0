import FuzzChecks

// libFuzzer's entry: PayloadCheck on each input (Fuzz/Checks/PayloadCheck.swift says what it holds).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    do {
        try PayloadCheck.check(UnsafeRawBufferPointer(start: start, count: count))
    } catch {
        fatalError(error.description)
    }
    return 0
}
