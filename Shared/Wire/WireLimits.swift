import Foundation

/// The ranges of the numbers the wire carries, and conversions of numbers from outside that
/// cannot trap.
///
/// Swift stops the process on integer overflow and on converting a `Double` that does not fit to
/// an integer. Every number that comes from outside (a header, a payload, a document, a
/// provider's answer) is therefore checked against these ranges where it is decoded, and
/// converted with ``Swift/FixedWidthInteger/init(saturating:)`` or `init(exactly:)`; the
/// `Duration` helpers below saturate. docs/wire-protocol.md, addition 1, states the ranges.
public enum WireLimits {
    /// 0001-01-01T00:00:00.000Z in Unix milliseconds: the earliest instant the date form (four
    /// digits of year, ISO 8601 without sign) can write.
    public static let earliestUnixMilliseconds: Int64 = -62_135_596_800_000
    /// 9999-12-31T23:59:59.999Z in Unix milliseconds: the latest instant the date form can write.
    public static let latestUnixMilliseconds: Int64 = 253_402_300_799_999
    /// Every instant the date form can write, in Unix milliseconds: event `ts`, dates in payloads.
    public static let unixMilliseconds: ClosedRange<Int64> = earliestUnixMilliseconds...latestUnixMilliseconds

    /// The largest `seq` of an event stream: 2^53 − 1, the largest integer every JSON reader
    /// (JavaScript's numbers included) holds exactly. A stream publishing a million events a
    /// second would reach it in 285 years; far below `Int64.max`, `seq + 1` cannot overflow.
    public static let maximumSeq: Int64 = 9_007_199_254_740_991
    /// The `seq` of an event: 1 through ``maximumSeq``.
    public static let seq: ClosedRange<Int64> = 1...maximumSeq

    /// A request header's `deadline`, in Unix milliseconds: from the epoch (long past, so the
    /// answer is DEADLINE_EXCEEDED) to the latest instant the date form can write.
    public static let deadline: ClosedRange<Int64> = 0...latestUnixMilliseconds

    /// The longest span of time, in seconds, from the earliest date to the latest: no duration
    /// from outside is longer, so adding one to a date or converting it to milliseconds (about
    /// 3.2 × 10^14) or to a `Duration` cannot overflow.
    public static let maximumSeconds = Double(latestUnixMilliseconds - earliestUnixMilliseconds) / 1000

    /// `milliseconds` moved into ``unixMilliseconds``: the nearest instant the date form can write.
    public static func clampedUnixMilliseconds(_ milliseconds: Int64) -> Int64 {
        min(max(milliseconds, earliestUnixMilliseconds), latestUnixMilliseconds)
    }
}

extension FixedWidthInteger {
    /// `value` rounded toward zero and clamped to the type's range; NaN reads as zero. For
    /// numbers from outside, where `Int64(value)` would stop the process when out of range.
    public init<Source: BinaryFloatingPoint>(saturating value: Source) {
        if value.isNaN {
            self = 0
        } else if let exact = Self(exactly: value.rounded(.towardZero)) {
            self = exact
        } else {
            self = value < 0 ? .min : .max
        }
    }
}

extension Duration {
    /// `seconds` as a duration, clamped to ±``WireLimits/maximumSeconds`` (NaN reads as zero):
    /// `Duration.seconds(_: Double)` stops the process for a value it cannot hold.
    public static func seconds(saturating seconds: Double) -> Duration {
        guard !seconds.isNaN else { return .zero }
        return .seconds(min(max(seconds, -WireLimits.maximumSeconds), WireLimits.maximumSeconds))
    }

    /// `milliseconds` as a duration, clamped as ``seconds(saturating:)`` clamps.
    public static func milliseconds(saturating milliseconds: Double) -> Duration {
        seconds(saturating: milliseconds / 1000)
    }

    /// The duration in whole microseconds, rounded toward zero; saturates at the bounds of
    /// `Int64` (a duration from outside may be longer than 292,000 years).
    public var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (sum, carry) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        return overflow || carry ? (seconds < 0 ? .min : .max) : sum
    }
}
