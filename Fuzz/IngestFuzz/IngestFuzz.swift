import Contracts
import Foundation
import IngestCore
import Wire

// Ingest's document readers on arbitrary bytes: the first byte picks the format, the rest is
// the file. Each must answer (a document whose put encodes) or throw a BusError; a trap, a hang
// (libFuzzer's -timeout) or runaway memory (-rss_limit_mb) fails the run.

private let scratch = FileManager.default.temporaryDirectory.appending(path: "studybus-ingest-fuzz")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIngest(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let format = DocumentProbe.formats[Int(bytes[0]) % DocumentProbe.formats.count]
    let data = Data(bytes[1...])
    let done = DispatchSemaphore(value: 0)
    Task {
        _ = try? await DocumentProbe.read(format, data, scratch: scratch)
        done.signal()
    }
    done.wait()
    return 0
}
