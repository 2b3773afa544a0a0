import ArgumentParser
import Bus
import Crypto
import Foundation
import Glibc
import Wire

extension BusCtl {
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Back up a running service's SQLite file.",
            discussion: """
            Asks the service for an online copy of its database (_backup), checks its size and \
            SHA-256, and writes it to FILE atomically (a temporary file beside FILE, then a \
            rename), readable by its owner only. Writes to the service go on meanwhile.

            Only services that own data answer (store, scheduler, timer-ticker, ai-gateway, \
            notifier); others fail with UNIMPLEMENTED. A database larger than the broker's \
            BROKER_MAX_MESSAGE_BYTES fails with RESOURCE_EXHAUSTED. docs/operations.md tells \
            how to restore a backup.

            Example:
              busctl backup store backups/store-$(date +%F).sqlite
            """)

        @Argument(help: "The service, e.g. store.") var service: String
        @Argument(help: "Where to write the copy; replaced if it exists.") var file: String
        @Option(help: "Seconds to wait for the copy.") var timeout: Double = 300
        @Flag(help: "Print what was written as one JSON object: the service's description of the copy and the file.") var json = false
        @OptionGroup var endpoints: EndpointOptions

        func validate() throws {
            guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
        }

        func run() async throws {
            let destination = URL(fileURLWithPath: file)
            let (info, data) = try await withBus(endpoints, json: json) { bus in
                let options = CallOptions(timeout: .seconds(saturating: timeout))
                do {
                    let (info, attachment) = try await bus.callWithAttachment(Reserved.backup(service), Empty(), options: options)
                    return (info, try BackupCheck.verified(info, attachment))
                } catch let error as BusError where error.code == .unimplemented {
                    throw BusError(.unimplemented, "\(service) keeps no database to back up (\(error.message))")
                }
            }
            try AtomicFile.write(data, to: destination)
            if json {
                var fields = try JSONValue.parse(WireCoding.encode(info)).objectValue ?? [:]
                fields["path"] = .string(destination.path)
                Output.line(Output.printableJSON(JSONValue.object(fields).jsonText))
                return
            }
            Output.line("\(info.service): \(info.bytes) bytes, sha256 \(info.sha256), \(info.migrations.count) migrations"
                + (info.migrations.last.map { " (newest: \($0))" } ?? "") + " -> \(destination.path)")
        }
    }
}

/// Checks that a `_backup` attachment is what its description says.
enum BackupCheck {
    /// The attachment, if its size and SHA-256 match `info`.
    /// - Throws: `DATA_LOSS` when there is no attachment or it does not match.
    static func verified(_ info: BackupInfo, _ attachment: Data?) throws(BusError) -> Data {
        guard let attachment else { throw .init(.dataLoss, "the reply of \(info.service)/_backup has no attachment; try again") }
        guard attachment.count == info.bytes else {
            throw .init(.dataLoss, "the backup of \(info.service) arrived with \(attachment.count) bytes, not the \(info.bytes) sent; try again")
        }
        let sha256 = SHA256.hash(data: attachment).map { String(format: "%02x", $0) }.joined()
        guard sha256 == info.sha256 else {
            throw .init(.dataLoss, "the backup of \(info.service) arrived damaged: its SHA-256 is \(sha256), not \(info.sha256); try again")
        }
        return attachment
    }
}

/// Writes files so that readers see the old file or the whole new one, never a part.
enum AtomicFile {
    /// Writes `data` to a new temporary file beside `destination` (mode 0600), flushes it to
    /// disk, and renames it over `destination`.
    ///
    /// The temporary file is created with `O_EXCL | O_NOFOLLOW` under an unpredictable name: in
    /// a folder others can write to, a file or symbolic link planted under that name beforehand
    /// makes the open fail instead of the backup being written through it.
    static func write(_ data: Data, to destination: URL) throws(WriteFailed) {
        let folder = destination.deletingLastPathComponent()
        var temporary = ""
        var descriptor: Int32 = -1
        var attempts = 0
        repeat {
            let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            temporary = folder.appending(path: ".\(destination.lastPathComponent).partial-\(getpid())-\(suffix)").path
            descriptor = createNew(temporary)
            attempts += 1
        } while descriptor < 0 && errno == EEXIST && attempts < 8
        guard descriptor >= 0 else { throw WriteFailed("cannot create \(temporary)") }
        let written = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return fsync(descriptor) == 0
        }
        let failure = written ? nil : WriteFailed("cannot write \(temporary)")
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, destination.path) == 0 else {
            let failure = WriteFailed("cannot rename \(temporary) to \(destination.path)")
            unlink(temporary)
            throw failure
        }
    }
}

extension AtomicFile {
    /// Opens a new file at `path` for writing, mode 0600, only if nothing is there: not a file,
    /// not a symbolic link (which is not followed). -1 with `errno` set otherwise.
    static func createNew(_ path: String) -> Int32 {
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    }
}

/// A file that could not be written, with the system's reason.
struct WriteFailed: Error, CustomStringConvertible {
    let description: String

    /// Reads `errno` now, so call it right after the failing call.
    init(_ what: String) {
        description = "\(what): \(String(cString: strerror(errno)))"
    }
}
