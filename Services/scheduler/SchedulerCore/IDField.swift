import Wire

/// The check of the ids requests name: cards, sets and subjects as store or a client gave them,
/// and the scheduler's own systems, tasks, tests and plans. 1 to 128 characters of any kind,
/// kept as given: ``Field/id(_:_:maximum:allowed:)`` allows fewer characters, and would refuse
/// ids that `cards.add` took from clients and stored.
enum IDField {
    static let maximumLength = 128

    static func check(_ value: String, _ name: @autoclosure () -> String) throws(BusError) -> String {
        guard !value.isEmpty else { throw Field.invalid(name(), "must not be empty") }
        try Field.length(value, name(), maximum: maximumLength)
        return value
    }

    /// An optional id; absent is nil.
    static func optional(_ value: String?, _ name: @autoclosure () -> String) throws(BusError) -> String? {
        guard let value else { return nil }
        return try check(value, name())
    }
}
