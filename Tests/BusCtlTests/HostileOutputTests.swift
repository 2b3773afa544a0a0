@testable import BusCtlCore
import Bus
import Foundation
import Glibc
import TestSupport
import Testing
import Wire

@Suite("busctl with hostile input")
struct HostileOutputTests {
    /// Publishes, until cancelled, an event with an out-of-range `ts` and one whose every
    /// publisher-chosen text carries terminal control sequences.
    static func publishHostile(_ publisher: Bus) -> @Sendable () async throws -> Void {
        {
            var round: Int64 = 0
            while !Task.isCancelled {
                round += 1
                try publisher.publish(topic: "hostile.old", header: EventHeader(id: "old-\(round)", source: "evil", instance: "i", seq: round, ts: .min),
                                      payload: Data("{}".utf8))
                let header = EventHeader(id: "e\u{1B}[8m", source: "evil\u{202E}txt", instance: "i\u{9B}2J", seq: round, ts: Date().unixMilliseconds,
                                         user: "\u{1B}]0;owned\u{07}")
                try publisher.publish(topic: "hostile.x\u{1B}[2J", header: header, payload: Data("{\"text\":\"\u{1B}[31mred\u{9B}0m\"}".utf8))
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    @Test("tail shows control characters escaped, in lines and in JSON, and skips an event whose ts is out of range")
    func tailEscapes() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let plain = try await busctl(["tail", "hostile.>", "--count", "2"], world.endpoints, whileRunning: Self.publishHostile(world.serviceBus))
            #expect(plain.status == 0, "busctl: \(plain.err)")
            #expect(!plain.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x07 || $0.value == 0x202E })
            #expect(plain.out.contains(#"hostile.x\x1b[2J"#) && plain.out.contains(#"user=\x1b]0;owned\x07"#) && plain.out.contains(#"evil\u202etxt"#))
            #expect(plain.out.contains(#"\x1b[31mred\x9b0m"#))
            #expect(plain.out.split(separator: "\n").count == 2 && !plain.out.contains("hostile.old"), "the event with ts Int64.min is dropped")

            let json = try await busctl(["tail", "hostile.>", "--count", "1", "--json"], world.endpoints, whileRunning: Self.publishHostile(world.serviceBus))
            #expect(json.status == 0)
            #expect(!json.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x202E })
            let object = try JSONValue.parse(json.out.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(object["header"]?["user"] == .string("\u{1B}]0;owned\u{07}"), "JSON escapes keep the value")
            // The payload is not JSON (a raw control character in a string), so it is shown as a string.
            #expect(object["header"]?["instance"] == .string("i\u{9B}2J") && object["payload"] == .string("{\"text\":\"\u{1B}[31mred\u{9B}0m\"}"))
        }
    }

    @Test("a service's error message is printed with its control characters escaped")
    func errorMessageEscaped() async throws {
        try await withWorld(EchoWorld.start()) { world in
            let result = try await busctl(["call", "echo", "echo", #"{"text":1}"#, "--user", "\u{1B}[2J"], world.endpoints)
            #expect(result.status == 3)
            #expect(result.err.contains("INVALID_ARGUMENT: request header field 'user' must be a user id"))
            #expect(!result.err.unicodeScalars.contains { $0.value == 0x1B })
        }
    }

    @Test("the backup's temporary file is never opened through something planted at its name")
    func exclusiveCreate() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "busctl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let victim = folder.appending(path: "victim")
        try Data("keep me".utf8).write(to: victim)
        let link = folder.appending(path: ".backup.partial").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim.path)
        #expect(AtomicFile.createNew(link) == -1 && errno == EEXIST)
        let danglingLink = folder.appending(path: ".dangling").path
        try FileManager.default.createSymbolicLink(atPath: danglingLink, withDestinationPath: folder.appending(path: "created-through-link").path)
        #expect(AtomicFile.createNew(danglingLink) == -1)
        #expect(!FileManager.default.fileExists(atPath: folder.appending(path: "created-through-link").path))
        #expect(String(decoding: try Data(contentsOf: victim), as: UTF8.self) == "keep me")
        let fresh = AtomicFile.createNew(folder.appending(path: "fresh").path)
        #expect(fresh >= 0)
        close(fresh)
        try? FileManager.default.removeItem(at: folder)
    }
}
