import Bus
import Contracts
import Foundation
import Wire

/// The input rules of timers and presets (QuickLabelTimer's), each failure an INVALID_ARGUMENT
/// naming the field and the limit.
public enum TimerRules {
    /// Cleans a label as the app does on submit: line breaks and runs of whitespace become one
    /// space, other control characters are removed, the ends are trimmed.
    /// - Throws: INVALID_ARGUMENT when more than ``TimerLimits/maximumLabelLength`` characters remain.
    public static func sanitizeLabel(_ raw: String, field: String = "label") throws(BusError) -> String {
        var cleaned = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in raw.unicodeScalars {
            if scalar.properties.isWhitespace || scalar == "\n" || scalar == "\r" {
                pendingSpace = !cleaned.isEmpty
                continue
            }
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format && scalar.value < 0x2000 {
                continue
            }
            if pendingSpace {
                cleaned.append(" ")
                pendingSpace = false
            }
            cleaned.append(scalar)
        }
        let label = String(cleaned)
        guard label.count <= TimerLimits.maximumLabelLength else {
            throw Field.invalid(field, "must be at most \(TimerLimits.maximumLabelLength) characters after trimming, got \(label.count)")
        }
        return label
    }

    /// A checked duration.
    public struct Duration: Equatable, Sendable {
        /// 0...24.
        public var hours: Int
        /// 0...59.
        public var minutes: Int
        /// 0...59.
        public var seconds: Int
        /// 1 to 86,400.
        public var totalSeconds: Int { hours * 3600 + minutes * 60 + seconds }
    }

    /// Checks hours 0...24, minutes and seconds 0...59, and a total of 1 s to 24 h.
    public static func duration(hours: Int, minutes: Int, seconds: Int) throws(BusError) -> Duration {
        guard (0...24).contains(hours) else { throw Field.invalid("hours", "must be 0 to 24, got \(hours)") }
        guard (0...59).contains(minutes) else { throw Field.invalid("minutes", "must be 0 to 59, got \(minutes)") }
        guard (0...59).contains(seconds) else { throw Field.invalid("seconds", "must be 0 to 59, got \(seconds)") }
        let duration = Duration(hours: hours, minutes: minutes, seconds: seconds)
        guard duration.totalSeconds > 0 else {
            throw .invalidArgument("fields 'hours', 'minutes', 'seconds' must add up to more than 0 seconds")
        }
        guard duration.totalSeconds <= TimerLimits.maximumDurationSeconds else {
            throw .invalidArgument(
                "fields 'hours', 'minutes', 'seconds' must add up to at most 24 hours (\(TimerLimits.maximumDurationSeconds) seconds), got \(duration.totalSeconds)")
        }
        return duration
    }
}

/// What can be done to a timer.
public enum TimerAction: String, CaseIterable, Sendable {
    /// The methods of the same names (`update` is `timers.update`, the edit screen).
    case pause, resume, stop, restart, duplicate, delete, update
    /// The engine firing at the end of a run.
    case complete
}

/// The result of an allowed action on a timer.
public enum TimerOutcome: Equatable, Sendable {
    /// The timer takes this status.
    case becomes(TimerStatus)
    /// The timer is unchanged (a copy of it is made).
    case copied
    /// The timer is removed.
    case removed
}

/// The status machine of a timer, as one function: which action is allowed in which state.
public enum TimerStateMachine {
    /// The outcome of `action` on a timer in `status`, nil when it is not allowed.
    public static func outcome(of action: TimerAction, on status: TimerStatus) -> TimerOutcome? {
        switch (action, status) {
        case (.pause, .running): .becomes(.paused)
        case (.resume, .paused): .becomes(.running)
        case (.stop, .running), (.stop, .paused): .becomes(.stopped)
        case (.complete, .running): .becomes(.completed)
        case (.update, .paused): .becomes(.paused)
        case (.update, .stopped): .becomes(.stopped)
        case (.restart, _): .becomes(.running)
        case (.duplicate, _): .copied
        case (.delete, _): .removed
        case (.pause, _), (.resume, _), (.stop, _), (.complete, _), (.update, _): nil
        }
    }

    /// The outcome of `action` on a timer in `status`.
    /// - Throws: FAILED_PRECONDITION naming both the state and the action when it is not allowed.
    public static func apply(_ action: TimerAction, to status: TimerStatus) throws(BusError) -> TimerOutcome {
        guard let outcome = outcome(of: action, on: status) else {
            let allowed = TimerStatus.allCases.filter { outcome(of: action, on: $0) != nil }.map(\.rawValue).joined(separator: " or ")
            let can = action == .update ? "can be edited" : "can \(action.rawValue)"
            let hint = action == .update && status == .running ? "; pause or stop it first" : ""
            throw .failedPrecondition(
                "cannot \(action.rawValue) a \(status.rawValue) timer (only a \(allowed) timer \(can)\(hint))",
                details: .object(["state": .string(status.rawValue), "action": .string(action.rawValue)]))
        }
        return outcome
    }
}
