import Foundation

/// A payload type for methods that take or return nothing. Decodes from `{}` or an empty frame.
public struct Empty: Codable, Sendable, Equatable {
    public init() {}
}
