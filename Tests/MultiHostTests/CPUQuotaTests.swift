import Foundation
import Glibc
import TestSupport
import Testing

@Suite("Hosts with a CPU of their own: a cgroup quota per host", .serialized)
struct CPUQuotaTests {
    @Test("a busy loop on a host of a quarter of a core gets about a quarter of a core, and the harness removes the cgroup")
    func quarterCore() async throws {
        let network = try VirtualHosts(hosts: ["small"], cpuCores: ["small": 0.25])
        let quota = try #require(network.cpu("small"))
        let directories = quota.directories
        try await running(network, stop: { $0.remove() }) { network in
            let logs = FileManager.default.temporaryDirectory.appending(path: "cpu-quota-\(getpid()).log").path
            defer { unlink(logs) }
            try network.start(on: "small", "/bin/sh", arguments: ["-c", "while :; do :; done"], environment: [:], logFile: logs)
            try await Task.sleep(for: .milliseconds(500))  // past the start, which ran outside the loop

            let (usedBefore, throttledBefore, startedAt) = (try quota.usage(), try quota.throttledPeriods(), ContinuousClock.now)
            try await Task.sleep(for: .seconds(3))
            let (usedAfter, throttledAfter, elapsed) = (try quota.usage(), try quota.throttledPeriods(), ContinuousClock.now - startedAt)

            let cores = (usedAfter - usedBefore) / elapsed
            #expect((0.15...0.40).contains(cores), "the busy loop used \(cores) cores under a quota of 0.25")
            // Throttled in most of the ~30 periods: it wanted a whole core every time.
            #expect(throttledAfter - throttledBefore >= 10, "throttled in \(throttledAfter - throttledBefore) periods of 3 s")
        }
        for directory in directories {
            #expect(access(directory, F_OK) != 0, "\(directory) is left behind")
        }
    }
}
