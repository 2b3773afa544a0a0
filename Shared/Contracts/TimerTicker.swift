import Foundation
import Wire

// timer-ticker: labelled countdown timers (the QuickLabelTimer app) and their presets. It fires
// `timer.completed` at each timer's end: on time, once per run, across restarts.

/// The contract of the `timer-ticker` service; call as `bus.call(TimerTicker.createTimer, …)`.
public let TimerTicker = TimerTickerContract()

/// The methods and events of `timer-ticker`. Every method acts for the request header's `user`;
/// another user's timer or preset is NOT_FOUND.
public struct TimerTickerContract: ServiceContract {
    /// The service name on the bus.
    public static let serviceName = "timer-ticker"

    // MARK: Timers

    /// Starts a timer, from fields or from a preset (fields given override the preset's).
    public let createTimer = Method<CreateTimerRequest, CountdownTimer>(
        Self.self, "timers.create",
        "Start a labelled countdown (running at once), from fields or a preset. RESOURCE_EXHAUSTED beyond the running/paused limit.", audience: .app)
    /// running -> paused; keeps the remaining time.
    public let pauseTimer = Method<TimerRef, CountdownTimer>(
        Self.self, "timers.pause", "Pause a running timer, keeping its remaining time.", audience: .app)
    /// paused -> running; the end date becomes now + remaining time.
    public let resumeTimer = Method<TimerRef, CountdownTimer>(
        Self.self, "timers.resume", "Resume a paused timer: it ends after its remaining time.", audience: .app)
    /// running|paused -> stopped; it will not fire.
    public let stopTimer = Method<TimerRef, CountdownTimer>(
        Self.self, "timers.stop", "Stop a running or paused timer; it will not fire.", audience: .app)
    /// any -> running with its full duration again (a new run).
    public let restartTimer = Method<TimerRef, CountdownTimer>(
        Self.self, "timers.restart", "Start a timer over with its full duration (a new run), from any state.", audience: .app)
    /// A new running timer with the same label, duration and flags.
    public let duplicateTimer = Method<TimerRef, CountdownTimer>(
        Self.self, "timers.duplicate", "Start a new running timer with the same label, duration, flags and preset.", audience: .app)
    /// Removes a timer in any state; publishes `timer.deleted`.
    public let deleteTimer = Method<TimerRef, Empty>(
        Self.self, "timers.delete", "Delete a timer in any state; pending notifications are cancelled via timer.deleted.", audience: .app)
    /// Edits a paused or stopped timer (the app's edit screen); a running one is FAILED_PRECONDITION.
    public let updateTimer = Method<UpdateTimerRequest, CountdownTimer>(
        Self.self, "timers.update",
        "Change the label, duration, sound or vibration flag of a paused or stopped timer; a running or completed one is FAILED_PRECONDITION.",
        audience: .app)
    /// One timer.
    public let getTimer = Method<TimerRef, CountdownTimer>(Self.self, "timers.get", "One timer of the user.", audience: .app)
    /// The user's timers, oldest first.
    public let listTimers = Method<ListTimersRequest, TimerList>(
        Self.self, "timers.list", "The user's timers, oldest first, optionally only some statuses.", audience: .app)

    // MARK: Presets (favourites)

    /// Saves a preset.
    public let createPreset = Method<CreatePresetRequest, TimerPreset>(
        Self.self, "presets.create", "Save a favourite (label, duration, flags); at most 20 per user.", audience: .app)
    /// Changes some fields of a preset.
    public let updatePreset = Method<UpdatePresetRequest, TimerPreset>(
        Self.self, "presets.update", "Change the given fields of a preset.", audience: .app)
    /// Saves a timer of the user (any state) as a new preset; the timer is unchanged.
    public let presetFromTimer = Method<PresetFromTimerRequest, TimerPreset>(
        Self.self, "presets.fromTimer", "Save a timer as a favourite: a new preset with its label, duration, flags and end action.", audience: .app)
    /// Removes a preset; timers started from it keep their copy of its fields.
    public let deletePreset = Method<PresetRef, Empty>(
        Self.self, "presets.delete", "Delete a preset; timers started from it are unaffected.", audience: .app)
    /// The user's presets, oldest first.
    public let listPresets = Method<Empty, PresetList>(Self.self, "presets.list", "The user's presets, oldest first.", audience: .app)

    // MARK: Events (durable: `_events.replay`)

    /// A timer was created (`timers.create` or `timers.duplicate`); it is running.
    public let timerCreated = Topic<CountdownTimer>(Self.self, "timer.created", "A timer was created and is running.")
    /// A timer was paused.
    public let timerPaused = Topic<CountdownTimer>(Self.self, "timer.paused", "A running timer was paused.")
    /// A paused timer runs again, with a new end date.
    public let timerResumed = Topic<CountdownTimer>(Self.self, "timer.resumed", "A paused timer runs again, with a new end date.")
    /// A paused or stopped timer was edited (`timers.update`).
    public let timerUpdated = Topic<CountdownTimer>(
        Self.self, "timer.updated", "A paused or stopped timer was edited: label, duration or alarm flags.")
    /// A timer was stopped and will not fire; cancel what was pending for it.
    public let timerStopped = Topic<CountdownTimer>(Self.self, "timer.stopped", "A timer was stopped and will not fire; cancel what is pending for it.")
    /// A timer started a new run; what was pending for its previous run should be cancelled.
    public let timerRestarted = Topic<CountdownTimer>(
        Self.self, "timer.restarted", "A timer started over (new run, new end date); cancel what is pending for its previous run.")
    /// A timer was deleted (by its user or discarded after completion); cancel its notifications.
    public let timerDeleted = Topic<TimerDeleted>(
        Self.self, "timer.deleted", "A timer was deleted, by its user or discarded after completion; cancel its pending notifications.")
    /// A timer reached its end: published once per run, with when it fired and how late.
    public let timerCompleted = Topic<TimerCompleted>(
        Self.self, "timer.completed", "A timer reached its end (once per run): the timer, its end date, when it fired and how late.")

    /// The contract; use the global ``TimerTicker``.
    public init() {}
}

// MARK: - Records

/// A timer's state. Allowed transitions: running -> paused|stopped|completed,
/// paused -> running|stopped, and any state -> running by `timers.restart`.
public enum TimerStatus: String, WireEnum {
    case running, paused, stopped, completed
}

/// What happens to a timer after it completes.
public enum TimerEndAction: String, WireEnum {
    /// Deleted a while after completion (`pendingDeletionAt`), publishing `timer.deleted`.
    case discard
    /// Kept as completed until its user deletes or restarts it.
    case keep
}

/// The limits of timer-ticker's methods (INVALID_ARGUMENT or RESOURCE_EXHAUSTED beyond them).
public enum TimerLimits {
    /// Longest label, in characters, after sanitizing.
    public static let maximumLabelLength = 100
    /// Longest duration: 24 hours.
    public static let maximumDurationSeconds = 86_400
    /// Default maximum of running plus paused timers per user (`TIMER_MAX_ACTIVE`).
    public static let defaultMaximumActiveTimers = 6
    /// Most presets per user.
    public static let maximumPresets = 20
    /// Default time a `discard` timer is kept after completion (`TIMER_DISCARD_AFTER_SECONDS`).
    public static let defaultDiscardAfterSeconds = 30
}

/// A labelled countdown timer.
///
/// Records written by an older version without a newer field still decode: every field but
/// `id`, `label`, `hours`, `minutes`, `seconds`, `status` and `createdAt` has a default.
public struct CountdownTimer: Codable, Sendable, Equatable {
    /// The timer id (a lowercase UUID).
    public var id: String
    /// The user who owns it.
    public var userId: String
    /// Trimmed, control characters removed, runs of whitespace collapsed; may be empty.
    public var label: String
    /// The duration: hours 0...24.
    public var hours: Int
    /// The duration: minutes 0...59.
    public var minutes: Int
    /// The duration: seconds 0...59.
    public var seconds: Int
    /// Play a sound at the end (default true).
    public var isSoundOn: Bool
    /// Vibrate at the end (default true).
    public var isVibrationOn: Bool
    /// Where it is in the status machine.
    public var status: TimerStatus
    /// When the current run ends (running) or ended (completed); nil when paused or stopped.
    public var endDate: Date?
    /// Seconds left: counting down while running (as of the response), frozen when paused or
    /// stopped, 0 when completed.
    public var remainingSeconds: Double
    /// When a completed `discard` timer will be deleted; nil otherwise.
    public var pendingDeletionAt: Date?
    /// What happens after completion (default `discard`).
    public var endAction: TimerEndAction
    /// The preset the timer was started from, if any.
    public var presetId: String?
    /// The run number: 1 at creation, +1 on every restart. A completion belongs to one run.
    public var run: Int
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    /// The full duration in seconds.
    public var durationSeconds: Int { hours * 3600 + minutes * 60 + seconds }

    public init(
        id: String, userId: String, label: String, hours: Int, minutes: Int, seconds: Int, isSoundOn: Bool, isVibrationOn: Bool,
        status: TimerStatus, endDate: Date?, remainingSeconds: Double, pendingDeletionAt: Date?, endAction: TimerEndAction,
        presetId: String?, run: Int, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        self.status = status
        self.endDate = endDate
        self.remainingSeconds = remainingSeconds
        self.pendingDeletionAt = pendingDeletionAt
        self.endAction = endAction
        self.presetId = presetId
        self.run = run
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    private enum CodingKeys: String, CodingKey {
        case id, userId, label, hours, minutes, seconds, isSoundOn, isVibrationOn, status, endDate, remainingSeconds
        case pendingDeletionAt, endAction, presetId, run, createdAt, updatedAt
    }

    /// Decodes, giving fields an older writer did not know their defaults.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        userId = try container.decodeIfPresent(String.self, forKey: .userId) ?? ""
        label = try container.decode(String.self, forKey: .label)
        hours = try container.decode(Int.self, forKey: .hours)
        minutes = try container.decode(Int.self, forKey: .minutes)
        seconds = try container.decode(Int.self, forKey: .seconds)
        isSoundOn = try container.decodeIfPresent(Bool.self, forKey: .isSoundOn) ?? true
        isVibrationOn = try container.decodeIfPresent(Bool.self, forKey: .isVibrationOn) ?? true
        status = try container.decode(TimerStatus.self, forKey: .status)
        endDate = try container.decodeIfPresent(Date.self, forKey: .endDate)
        let duration = Double(hours * 3600 + minutes * 60 + seconds)
        remainingSeconds = try container.decodeIfPresent(Double.self, forKey: .remainingSeconds) ?? (status == .completed ? 0 : duration)
        pendingDeletionAt = try container.decodeIfPresent(Date.self, forKey: .pendingDeletionAt)
        endAction = try container.decodeIfPresent(TimerEndAction.self, forKey: .endAction) ?? .discard
        presetId = try container.decodeIfPresent(String.self, forKey: .presetId)
        run = try container.decodeIfPresent(Int.self, forKey: .run) ?? 1
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decodeIfPresent(Date.self, forKey: .updatedAt) ?? createdAt
    }
}

/// A saved favourite to start timers from.
public struct TimerPreset: Codable, Sendable, Equatable {
    /// The preset id.
    public var id: String
    /// The user who owns it.
    public var userId: String
    /// Sanitized as a timer label.
    public var label: String
    /// The duration: hours 0...24.
    public var hours: Int
    /// The duration: minutes 0...59.
    public var minutes: Int
    /// The duration: seconds 0...59.
    public var seconds: Int
    /// Timers started from it play a sound.
    public var isSoundOn: Bool
    /// Timers started from it vibrate.
    public var isVibrationOn: Bool
    /// Timers started from it end this way.
    public var endAction: TimerEndAction
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    public init(
        id: String, userId: String, label: String, hours: Int, minutes: Int, seconds: Int, isSoundOn: Bool, isVibrationOn: Bool,
        endAction: TimerEndAction, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        self.endAction = endAction
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

// MARK: - Requests and responses

/// `timers.create`: fields, or a preset whose fields are used for those not given.
/// Durations: hours 0...24, minutes and seconds 0...59, in total 1 s to 24 h.
public struct CreateTimerRequest: Codable, Sendable, Equatable {
    /// The label (sanitized; at most 100 characters); default the preset's, or empty.
    public var label: String?
    /// Hours 0...24; default the preset's, or 0.
    public var hours: Int?
    /// Minutes 0...59; default the preset's, or 0.
    public var minutes: Int?
    /// Seconds 0...59; default the preset's, or 0.
    public var seconds: Int?
    /// Default the preset's, or true.
    public var isSoundOn: Bool?
    /// Default the preset's, or true.
    public var isVibrationOn: Bool?
    /// Default the preset's, or `discard`.
    public var endAction: TimerEndAction?
    /// A preset of the user to take the fields not given from.
    public var presetId: String?

    public init(
        label: String? = nil, hours: Int? = nil, minutes: Int? = nil, seconds: Int? = nil, isSoundOn: Bool? = nil,
        isVibrationOn: Bool? = nil, endAction: TimerEndAction? = nil, presetId: String? = nil
    ) {
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        self.endAction = endAction
        self.presetId = presetId
    }
}

/// `timers.update`: the fields given change, the others stay. Only a paused or stopped timer can be
/// edited. A changed duration also resets the remaining time to it; otherwise that stays.
public struct UpdateTimerRequest: Codable, Sendable, Equatable {
    /// The timer to edit.
    public var id: String
    /// A new label (sanitized; at most 100 characters), if given.
    public var label: String?
    /// New hours 0...24, if given.
    public var hours: Int?
    /// New minutes 0...59, if given.
    public var minutes: Int?
    /// New seconds 0...59, if given; the resulting duration must be 1 s to 24 h.
    public var seconds: Int?
    /// A new sound flag, if given.
    public var isSoundOn: Bool?
    /// A new vibration flag, if given.
    public var isVibrationOn: Bool?

    public init(
        id: String, label: String? = nil, hours: Int? = nil, minutes: Int? = nil, seconds: Int? = nil, isSoundOn: Bool? = nil,
        isVibrationOn: Bool? = nil
    ) {
        self.id = id
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
    }
}

/// Names one timer.
public struct TimerRef: Codable, Sendable, Equatable {
    /// The timer id.
    public var id: String
    public init(id: String) { self.id = id }
}

/// `timers.list`: optionally only some statuses; `limit` 1...1000 (default 1000).
public struct ListTimersRequest: Codable, Sendable, Equatable {
    /// Only timers in these states (default all).
    public var statuses: [TimerStatus]?
    /// At most this many, 1...1000 (default 1000).
    public var limit: Int?
    public init(statuses: [TimerStatus]? = nil, limit: Int? = nil) {
        self.statuses = statuses
        self.limit = limit
    }
}

/// `timers.list` response.
public struct TimerList: Codable, Sendable, Equatable {
    /// Oldest first.
    public var timers: [CountdownTimer]
    public init(timers: [CountdownTimer]) { self.timers = timers }
}

/// `presets.create`: the same fields and limits as a timer.
public struct CreatePresetRequest: Codable, Sendable, Equatable {
    /// Sanitized as a timer label; at most 100 characters.
    public var label: String
    /// Hours 0...24.
    public var hours: Int
    /// Minutes 0...59.
    public var minutes: Int
    /// Seconds 0...59; in total 1 s to 24 h.
    public var seconds: Int
    /// Default true.
    public var isSoundOn: Bool?
    /// Default true.
    public var isVibrationOn: Bool?
    /// Default `discard`.
    public var endAction: TimerEndAction?

    public init(
        label: String, hours: Int = 0, minutes: Int = 0, seconds: Int = 0, isSoundOn: Bool? = nil, isVibrationOn: Bool? = nil,
        endAction: TimerEndAction? = nil
    ) {
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        self.endAction = endAction
    }
}

/// `presets.update`: the fields given change; the others stay.
public struct UpdatePresetRequest: Codable, Sendable, Equatable {
    /// The preset to change.
    public var id: String
    /// A new label, if given.
    public var label: String?
    /// New hours, if given.
    public var hours: Int?
    /// New minutes, if given.
    public var minutes: Int?
    /// New seconds, if given.
    public var seconds: Int?
    /// A new sound flag, if given.
    public var isSoundOn: Bool?
    /// A new vibration flag, if given.
    public var isVibrationOn: Bool?
    /// A new end action, if given.
    public var endAction: TimerEndAction?

    public init(
        id: String, label: String? = nil, hours: Int? = nil, minutes: Int? = nil, seconds: Int? = nil, isSoundOn: Bool? = nil,
        isVibrationOn: Bool? = nil, endAction: TimerEndAction? = nil
    ) {
        self.id = id
        self.label = label
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.isSoundOn = isSoundOn
        self.isVibrationOn = isVibrationOn
        self.endAction = endAction
    }
}

/// `presets.fromTimer`: the timer to save as a favourite.
public struct PresetFromTimerRequest: Codable, Sendable, Equatable {
    /// A timer of the user, in any state.
    public var timerId: String
    public init(timerId: String) { self.timerId = timerId }
}

/// Names one preset.
public struct PresetRef: Codable, Sendable, Equatable {
    /// The preset id.
    public var id: String
    public init(id: String) { self.id = id }
}

/// `presets.list` response.
public struct PresetList: Codable, Sendable, Equatable {
    /// Oldest first.
    public var presets: [TimerPreset]
    public init(presets: [TimerPreset]) { self.presets = presets }
}

// MARK: - Event payloads

/// Why a timer was deleted.
public enum TimerDeletionReason: String, WireEnum {
    /// `timers.delete`.
    case deleted
    /// A `discard` timer reached its `pendingDeletionAt`.
    case discarded
}

/// `timer.deleted` payload.
public struct TimerDeleted: Codable, Sendable, Equatable {
    /// The timer as it was when deleted.
    public var timer: CountdownTimer
    /// Deleted by its user, or discarded after completion.
    public var reason: TimerDeletionReason
    public init(timer: CountdownTimer, reason: TimerDeletionReason) {
        self.timer = timer
        self.reason = reason
    }
}

/// `timer.completed` payload: published exactly once per timer run.
public struct TimerCompleted: Codable, Sendable, Equatable {
    /// The timer, completed (its `run` says which run ended).
    public var timer: CountdownTimer
    /// When the run was due to end.
    public var endDate: Date
    /// When the service actually fired it.
    public var firedAt: Date
    /// `firedAt - endDate` in seconds (never negative).
    public var latenessSeconds: Double
    /// True when the end passed while the service was down and it fired on the next start.
    public var late: Bool

    public init(timer: CountdownTimer, endDate: Date, firedAt: Date, latenessSeconds: Double, late: Bool) {
        self.timer = timer
        self.endDate = endDate
        self.firedAt = firedAt
        self.latenessSeconds = latenessSeconds
        self.late = late
    }
}
