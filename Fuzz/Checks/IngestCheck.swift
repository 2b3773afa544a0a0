import Foundation
import IngestCore

/// Ingest's document readers on arbitrary bytes: the first byte picks the format, the rest is the
/// file. Each must answer (a document) or throw a BusError; what fails is a trap, a hang
/// (libFuzzer's -timeout, the replay test's time limit) or runaway memory (-rss_limit_mb).
public enum IngestCheck {
    private static let scratch = FileManager.default.temporaryDirectory.appending(path: "studybus-ingest-fuzz")

    public static func check(_ input: Data) async {
        guard let first = input.first else { return }
        let format = DocumentProbe.formats[Int(first) % DocumentProbe.formats.count]
        _ = try? await DocumentProbe.read(format, Data(input.dropFirst()), scratch: scratch)
    }
}
