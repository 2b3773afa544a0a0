import Foundation
import TestSupport
import Testing

extension SystemTests {
    /// Where the browser test keeps its screenshot: under .build, which git ignores.
    static let consoleScreenshot = DevSystem.repository.appending(path: ".build/test-artifacts/console.png")

    @Test("the operator console in headless Chromium: every service, a call and its event in the tail, a screenshot")
    func consoleInABrowser() async throws {
        try await DevSystem.run { system in
            let base = try #require(system.environment["STUDYBUS_METRICS_BASE"], "the broker's monitoring port (scripts/dev.d/00-broker)")
            try FileManager.default.createDirectory(at: Self.consoleScreenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: Self.consoleScreenshot)
            let keys = system.data.appending(path: "keys").path
            var environment = system.environment
            environment["CONSOLE_URL"] = "http://127.0.0.1:\(base)/console"
            environment["CONSOLE_TOKEN_FILE"] = "\(keys)/console.token"
            environment["CONSOLE_SERVICES"] = SystemTests.services.joined(separator: ",")
            environment["CONSOLE_SCREENSHOT"] = Self.consoleScreenshot.path
            environment["BUSCTL"] = builtProductsDirectory.appending(path: "busctl").path
            environment["BUS_KEY"] = "\(keys)/busctl.key_secret"
            environment["BUS_BROKER_KEY"] = "\(keys)/broker.key"
            let log = system.data.appending(path: "console-browser.out")
            let script = DevSystem.repository.appending(path: "Tests/SystemTests/console_browser.py").path
            let process = try ChildProcess(executable: PythonServer.python, arguments: ["-u", script], environment: environment, logFile: log.path)
            let status = await process.waitForExit(timeout: .seconds(120))
            if status == nil { process.send(SIGKILL) }
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            print("console browser test (screenshot \(Self.consoleScreenshot.path)):\n\(output)")
            #expect(status == 0, "console_browser.py \(status.map { "exited \($0)" } ?? "timed out"):\n\(output)")
            #expect(output.contains("CONSOLE OK"))
            #expect(FileManager.default.fileExists(atPath: Self.consoleScreenshot.path))
        }
    }
}
