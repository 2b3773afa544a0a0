import Wire

/// The store's errors, as the status codes the contract promises.
enum StoreError {
    /// `NOT_FOUND`: "material 'm1' not found" (also for another user's record).
    static func notFound<R: StoredRecord>(_ type: R.Type, _ id: String, field: String? = nil) -> BusError {
        let prefix = field.map { "field '\($0)': " } ?? ""
        return .notFound("\(prefix)\(R.noun) '\(id)' not found")
    }

    /// `ALREADY_EXISTS`: a client-chosen id the user already has.
    static func alreadyExists<R: StoredRecord>(_ type: R.Type, _ id: String) -> BusError {
        .alreadyExists("\(R.noun) '\(id)' already exists")
    }
}
