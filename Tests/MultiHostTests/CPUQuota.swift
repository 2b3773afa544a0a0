import Foundation
import Glibc

/// A host's CPU: a cgroup with a quota, so the processes of an emulated host share `cores` of a
/// core between them, as on a small machine of their own. Both cgroup layouts are supported: v2
/// (`cpu.max`, usage in `cpu.stat`) where the unified hierarchy has the cpu controller, else v1
/// (`cpu.cfs_quota_us` and `cpu.cfs_period_us` in the cpu hierarchy, usage in cpuacct's
/// `cpuacct.usage`, which may be a hierarchy of its own).
struct CPUQuota: Sendable {
    /// The cgroup's directories: one on v2, the cpu and the cpuacct hierarchy's on v1 (one when
    /// both controllers share a mount). A process joins by writing its pid into each.
    let directories: [String]
    private let layout: Layout

    enum Layout: Sendable {
        case v2(root: String)
        case v1(cpu: String, cpuacct: String?)
    }

    /// The length of a quota period. 100 ms is the kernel's default.
    static let periodMicroseconds = 100_000

    /// The layout this machine has, from /proc/mounts.
    static func layout() throws -> Layout {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        var v1CPU: String?
        var v1CPUAcct: String?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 4 else { continue }
            let (mountPoint, type, options) = (fields[1], fields[2], Set(fields[3].split(separator: ",").map(String.init)))
            if type == "cgroup2" {
                let controllers = (try? String(contentsOfFile: "\(mountPoint)/cgroup.controllers", encoding: .utf8)) ?? ""
                if controllers.split(whereSeparator: \.isWhitespace).contains("cpu") { return .v2(root: mountPoint) }
            } else if type == "cgroup" {
                if options.contains("cpu") { v1CPU = mountPoint }
                if options.contains("cpuacct") { v1CPUAcct = mountPoint }
            }
        }
        guard let v1CPU else { throw Unavailable(description: "no cgroup hierarchy with the cpu controller is mounted") }
        return .v1(cpu: v1CPU, cpuacct: v1CPUAcct == v1CPU ? nil : v1CPUAcct)
    }

    /// Makes the cgroup `name` with a quota of `cores` (e.g. 0.25: a quarter of a core).
    init(name: String, cores: Double) throws {
        layout = try Self.layout()
        switch layout {
        case .v2(let root):
            // The controller must be on for the root's children; writing it again is harmless.
            try? Self.write("+cpu", to: "\(root)/cgroup.subtree_control")
            directories = ["\(root)/\(name)"]
        case .v1(let cpu, let cpuacct):
            directories = ["\(cpu)/\(name)"] + (cpuacct.map { ["\($0)/\(name)"] } ?? [])
        }
        for directory in directories where mkdir(directory, 0o755) != 0 && errno != EEXIST {
            let code = errno
            remove()
            throw Unavailable(description: "cannot make the cgroup \(directory): \(String(cString: strerror(code)))")
        }
        do {
            try limit(cores: cores)
        } catch {
            remove()
            throw error
        }
    }

    /// Sets the quota to `cores`, also while processes run: a host that slows down.
    func limit(cores: Double) throws {
        precondition(cores > 0 && cores <= 64)
        let quota = max(1000, Int(cores * Double(Self.periodMicroseconds)))
        switch layout {
        case .v2:
            try Self.write("\(quota) \(Self.periodMicroseconds)", to: "\(directories[0])/cpu.max")
        case .v1:
            try Self.write(String(Self.periodMicroseconds), to: "\(directories[0])/cpu.cfs_period_us")
            try Self.write(String(quota), to: "\(directories[0])/cpu.cfs_quota_us")
        }
    }

    /// The files a process writes its pid into to join.
    var processListFiles: [String] { directories.map { "\($0)/cgroup.procs" } }

    /// The CPU time the cgroup's processes have used.
    func usage() throws -> Duration {
        switch layout {
        case .v2:
            return .microseconds(try Self.statistic("usage_usec", in: "\(directories[0])/cpu.stat"))
        case .v1:
            let text = try String(contentsOfFile: "\(directories.last!)/cpuacct.usage", encoding: .utf8)
            guard let nanoseconds = Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw Unavailable(description: "cpuacct.usage reads '\(text)'")
            }
            return .nanoseconds(nanoseconds)
        }
    }

    /// How many quota periods the cgroup's processes were stopped in for having used their quota.
    func throttledPeriods() throws -> Int64 { try Self.statistic("nr_throttled", in: "\(directories[0])/cpu.stat") }

    /// Kills what is still in the cgroup (a service's own children too) and removes it.
    func remove() {
        let deadline = ContinuousClock.now + .seconds(5)
        for directory in directories.reversed() {
            while true {
                Self.killMembers(of: directory)
                if rmdir(directory) == 0 || errno == ENOENT || ContinuousClock.now > deadline { break }
                usleep(20_000)  // the killed are not gone from the cgroup until they are reaped
            }
        }
    }

    /// Removes cgroups named `prefix…` that a test which crashed left behind.
    static func removeLeftovers(prefix: String) {
        guard let layout = try? layout() else { return }
        let parents: [String]
        switch layout {
        case .v2(let root): parents = [root]
        case .v1(let cpu, let cpuacct): parents = [cpu] + (cpuacct.map { [$0] } ?? [])
        }
        for parent in parents {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [] where name.hasPrefix(prefix) {
                killMembers(of: "\(parent)/\(name)")
                rmdir("\(parent)/\(name)")
            }
        }
    }

    private static func killMembers(of directory: String) {
        let members = (try? String(contentsOfFile: "\(directory)/cgroup.procs", encoding: .utf8)) ?? ""
        for pid in members.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
    }

    private static func statistic(_ name: String, in file: String) throws -> Int64 {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, fields[0] == name, let value = Int64(fields[1]) { return value }
        }
        throw Unavailable(description: "\(file) has no \(name)")
    }

    private static func write(_ text: String, to file: String) throws {
        guard let handle = FileHandle(forWritingAtPath: file) else { throw Unavailable(description: "cannot open \(file)") }
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data(text.utf8))
        } catch {
            throw Unavailable(description: "cannot write '\(text)' to \(file): \(error)")
        }
    }

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }
}
