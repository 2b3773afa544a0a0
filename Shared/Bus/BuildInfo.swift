import CBuildInfo
import Wire

/// What every binary says it is: `--version`, `_health` and `_describe`, the start log line,
/// and the `studybus_build_info` metric.
public enum BuildInfo {
    /// The release version; raised with each release.
    public static let version = "0.24.0"
    /// The git commit the binary was built from (12 hex digits, `-dirty` when the tree had
    /// changes), or `unknown`.
    public static let commit = String(cString: studybus_build_commit())
    /// What `_health` and `_describe` carry (wire protocol, Addition 17).
    public static let stamp = BuildStamp(version: version, commit: commit)
    /// `0.24.0 (commit 1a2b3c4d5e6f)`.
    public static var description: String { stamp.description }
}
