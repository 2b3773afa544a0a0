import BrokerCore
import Foundation
import FuzzChecks
import TestSupport
import Testing

/// Every committed input of the fuzzers — the seeds (Fuzz/Corpus) and the inputs of past finds
/// (Fuzz/Regressions) — through the checks the libFuzzer harnesses run, in the ordinary test
/// build: a fixed find that comes back fails here, without a fuzzing build (scripts/fuzz fuzzes).
@Suite("Fuzz inputs replayed: each harness's seeds and past finds still hold")
struct FuzzReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../Fuzz").standardized

    /// The committed inputs of `fuzzer`, named by their folder and file.
    static func inputs(_ fuzzer: String) throws -> [(name: String, data: Data)] {
        var inputs: [(String, Data)] = []
        for folder in ["Corpus", "Regressions"] {
            let directory = fuzzFolder.appending(path: "\(folder)/\(fuzzer)")
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names.sorted() { inputs.append(("\(folder)/\(fuzzer)/\(name)", try Data(contentsOf: directory.appending(path: name)))) }
        }
        return inputs
    }

    @Test("each harness has committed inputs to replay")
    func inputsPresent() throws {
        for fuzzer in ["PayloadFuzz", "HeaderFuzz", "IngestFuzz", "BrokerFuzz"] {
            #expect(try !Self.inputs(fuzzer).isEmpty, "\(fuzzer) has no seeds in Fuzz/Corpus")
        }
    }

    @Test("the payload decoder agrees with Foundation's on every input, and parsed JSON reads back")
    func payloads() throws {
        for input in try Self.inputs("PayloadFuzz") {
            let failure = input.data.withUnsafeBytes { bytes -> FuzzFailure? in
                do throws(FuzzFailure) {
                    try PayloadCheck.check(bytes)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { Issue.record("\(input.name): \(failure)") }
        }
    }

    @Test("every header the readers admit reads back, stamped with a caller as the broker does")
    func headers() throws {
        for input in try Self.inputs("HeaderFuzz") {
            let failure = input.data.withUnsafeBytes { bytes -> FuzzFailure? in
                do throws(FuzzFailure) {
                    try HeaderCheck.check(bytes)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { Issue.record("\(input.name): \(failure)") }
        }
    }

    @Test("ingest's document readers answer or refuse every input within libFuzzer's 10 s")
    func documents() async throws {
        for input in try Self.inputs("IngestFuzz") {
            try await withTimeout(.seconds(10)) { await IngestCheck.check(input.data) }
        }
    }

    @Test("after every input a real broker still answers an honest client")
    func broker() async throws {
        let broker = try Broker(configuration: BrokerCheck.configuration, logger: testLogger("broker"))
        let endpoints = try await broker.start()
        let inputs = try Self.inputs("BrokerFuzz")
        try await running(broker, stop: { await $0.stop() }) { _ in
            let failures = try await onOwnThread {
                let check = try BrokerCheck(endpoints: endpoints)
                defer { check.close() }
                return inputs.compactMap { input -> String? in
                    input.data.withUnsafeBytes { bytes -> String? in
                        do throws(FuzzFailure) {
                            try check.feed(bytes)
                            return nil
                        } catch {
                            return "\(input.name): \(error)"
                        }
                    }
                }
            }
            for failure in failures { Issue.record(Comment(rawValue: failure)) }
        }
    }
}
