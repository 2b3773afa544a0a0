import Foundation

/// A string enum that appears in payloads; its cases show up in `_describe` as `a|b|c`.
public protocol WireEnum: CaseIterable, RawRepresentable, Codable, Sendable where RawValue == String {}

extension WireEnum {
    /// The raw values of every case, as they appear on the wire.
    public static var wireValues: [String] { allCases.map(\.rawValue) }

    /// Some case, for placeholders.
    static var anyCase: Self { Array(allCases)[0] }
}
