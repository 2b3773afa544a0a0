/// What a fuzz check found wrong with one input. The libFuzzer harnesses (Fuzz/<Name>Fuzz) turn
/// it into a crash, so libFuzzer saves the input; the replay tests (Tests/FuzzTests) record it.
public struct FuzzFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
