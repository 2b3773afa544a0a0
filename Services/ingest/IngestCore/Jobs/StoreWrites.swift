import Bus
import Contracts
import Crypto
import Foundation
import Wire

/// The job's writes to the store: everything in one `materials.put` (calendar entries as tasks
/// and sessions included). Each write can be repeated safely — a retry after a lost reply, or
/// `ingest.retry` after a failure — so calls that find the store unavailable are tried again.
struct StoreWrites: Sendable {
    let bus: Bus

    /// `materials.put` under the job's idempotency key.
    func put(_ request: MaterialPut, job: IngestJob) async throws(BusError) -> MaterialPutResult {
        try await call(Store.putMaterial, request, job: job, idempotencyKey: "ingest-" + job.id)
    }

    /// Refuses chunks whose `materials.put` would not fit one bus message (the broker drops a
    /// larger frame, and the connection with it): only a text of tens of megabytes comes near.
    /// - Throws: `INVALID_ARGUMENT` saying to split the file.
    static func checkFits(_ chunks: [Chunk], messageLimit: Int, fileName: String) throws(BusError) {
        let textBytes = chunks.reduce(0) { $0 + $1.bytes.count }
        guard textBytes > messageLimit / 4 else { return }  // far below: not worth counting
        // The request's JSON: each chunk's text, escaped, and its other fields; a margin for the rest.
        var size = 1 << 20
        for chunk in chunks {
            size += 160 + chunk.text.utf8.count
            for byte in chunk.text.utf8 where byte == 0x0A || byte == 0x22 || byte == 0x5C || byte == 0x2F || byte < 0x20 { size += 5 }
        }
        guard size <= messageLimit else {
            throw .invalidArgument(
                "'\(fileName)' holds too much text for one material: its chunks take about \(size >> 20) MiB, and the bus carries at most \(messageLimit >> 20) MiB in one message (BROKER_MAX_MESSAGE_BYTES); split the file")
        }
    }

    /// `ics-` and 40 hex digits of SHA-256 over the material id and the entry's key.
    static func entryID(material: String, key: String) -> String {
        "ics-" + SHA256.hash(data: Data((material + "\n" + key).utf8)).prefix(20).map { String(format: "%02x", $0) }.joined()
    }

    /// Calls the store for the job's user within the job's time (or `deadline`), trying again
    /// (three times in all, 0.2 s then 1 s apart) while the store is unavailable.
    func call<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, job: IngestJob, idempotencyKey: String? = nil, deadline: Date? = nil
    ) async throws(BusError) -> Response {
        let options = CallOptions(user: job.user, deadline: deadline ?? job.wallDeadline, meta: job.meta, idempotencyKey: idempotencyKey)
        var attempt = 0
        while true {
            do throws(BusError) {
                return try await bus.call(method, request, options: options)
            } catch where error.code == .unavailable && attempt < 2 && !Task.isCancelled {
                attempt += 1
                try? await Task.sleep(for: attempt == 1 ? .milliseconds(200) : .seconds(1))
            } catch {
                throw BusError(error.code, "the store could not \(method.name) (\(error.code.name): \(error.message))", details: error.details)
            }
        }
    }
}
