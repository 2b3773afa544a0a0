import FuzzChecks

// libFuzzer's entry: HeaderCheck on each input (Fuzz/Checks/HeaderCheck.swift says what it holds).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeaders(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    do {
        try HeaderCheck.check(UnsafeRawBufferPointer(start: start, count: count))
    } catch {
        fatalError(error.description)
    }
    return 0
}
