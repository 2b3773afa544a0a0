/// The W3C `traceparent` a piece of work belongs to, carried in request and event `meta` and
/// held, while that work runs, in a task-local, so that everything it causes carries it on:
/// calls it makes, events it writes to an outbox (in the same task: GRDB's async writes run
/// their closure in the caller's task), and, from a consumed event, what its handler writes.
///
/// ```swift
/// try await TraceParent.$current.withValue(TraceParent.valid(meta["traceparent"])) { try await handle() }
/// ```
public enum TraceParent {
    /// The key in `meta`.
    public static let key = "traceparent"

    /// The `traceparent` of the work the current task does, if it came with a valid one.
    @TaskLocal public static var current: String?

    /// `value` if it is a well-formed `traceparent` (`VV-<32 hex>-<16 hex>-<2 hex>`, lower case,
    /// version not `ff`, ids not all zeros), else nil: what comes from outside is passed on only
    /// in the form the standard allows, never as arbitrary text.
    public static func valid(_ value: String?) -> String? {
        guard let value, value.utf8.count == 55 else { return nil }
        let bytes = Array(value.utf8)
        let isHex = { (byte: UInt8) in (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) }
        for (index, byte) in bytes.enumerated() {
            if index == 2 || index == 35 || index == 52 {
                guard byte == UInt8(ascii: "-") else { return nil }
            } else if !isHex(byte) {
                return nil
            }
        }
        guard !(bytes[0] == UInt8(ascii: "f") && bytes[1] == UInt8(ascii: "f")),
              bytes[3..<35].contains(where: { $0 != UInt8(ascii: "0") }),
              bytes[36..<52].contains(where: { $0 != UInt8(ascii: "0") })
        else { return nil }
        return value
    }

    /// `meta` with the current `traceparent` added, unless it has one already.
    public static func propagated(into meta: [String: String]) -> [String: String] {
        guard meta[key] == nil, let current else { return meta }
        var meta = meta
        meta[key] = current
        return meta
    }

    /// The trace id and parent (span) id of a valid `traceparent`, for log lines.
    public static func ids(_ traceparent: String) -> (traceID: Substring, spanID: Substring) {
        let parts = traceparent.split(separator: "-")
        return (parts[1], parts[2])
    }
}
