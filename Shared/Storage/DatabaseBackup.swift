import Bus
import Crypto
import Foundation
import GRDB
import Logging

extension ServiceDatabase {
    /// Answers `_backup` on `host` with an online copy of this database, so an operator can back
    /// up a running service (`busctl backup SERVICE FILE`).
    ///
    /// The copy is SQLite's online backup of one read snapshot, written to a temporary file in
    /// the database's folder (the service's volume, so no other disk must have room), read into
    /// the reply's attachment frame and deleted. Writes go on meanwhile. A copy larger than the
    /// broker's largest frame (`BROKER_MAX_MESSAGE_BYTES`) is refused with `RESOURCE_EXHAUSTED`:
    /// sending it would only get this service disconnected by the broker.
    public func registerBackup(on host: ServiceHost) {
        let service = host.service
        removeLeftoverCopies()
        host.handle(Reserved.backup(service), withAttachment: { [self] _, context in
            let limit = context.bus.configuration.maxMessageBytes
            context.logger.info("backup requested")
            // The copy, the read and the hash block for as long as the file is large: keep them
            // off the cooperative pool, which every other request needs.
            let (info, data) = try await offThePool(qos: .utility) { () throws(BusError) in try self.snapshot(service: service, limit: limit) }
            context.logger.info("backup sent", metadata: ["bytes": "\(info.bytes)", "migrations": "\(info.migrations.count)"])
            return (info, data)
        })
    }

    /// Copies the database to a temporary file, and returns the copy's bytes and description.
    /// - Throws: `RESOURCE_EXHAUSTED` when the copy is larger than `limit`; `INTERNAL` when the
    ///   copy cannot be made or read.
    private func snapshot(service: String, limit: Int64) throws(BusError) -> (BackupInfo, Data) {
        let temporary = url.deletingLastPathComponent().appending(path: "\(Self.copyPrefix)\(UUID().uuidString.lowercased()).sqlite")
        defer {
            for suffix in ["", "-journal", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: temporary.path + suffix)
            }
        }
        let takenAt = Date()
        let migrations = try backup(to: temporary)
        let bytes: Int64
        do {
            bytes = (try FileManager.default.attributesOfItem(atPath: temporary.path)[.size] as? NSNumber)?.int64Value ?? 0
        } catch {
            throw .internal("cannot read the size of the backup copy \(temporary.path): \(error.localizedDescription)")
        }
        guard bytes <= limit else {
            throw .messageTooLarge(
                "the backup of \(service)", bytes: Int(bytes), limit: limit,
                advice: "raise BROKER_MAX_MESSAGE_BYTES for the broker and \(service) above the database's size, or copy "
                    + "\(url.lastPathComponent) with the sqlite3 shell in the service's container (docs/operations.md, Backups)")
        }
        let data: Data
        do {
            data = try Data(contentsOf: temporary)
        } catch {
            throw .internal("cannot read the backup copy \(temporary.path): \(error.localizedDescription)")
        }
        let sha256 = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        let info = BackupInfo(
            service: service, file: url.lastPathComponent, bytes: Int64(data.count), sha256: sha256, migrations: migrations, takenAt: takenAt)
        return (info, data)
    }

    /// How the temporary copies' names start.
    private static let copyPrefix = ".backup-"

    /// Deletes temporary copies a process that died while backing up left behind; called at
    /// start, when no backup of this file can be running (one process owns it).
    private func removeLeftoverCopies() {
        let folder = url.deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(Self.copyPrefix) {
            try? FileManager.default.removeItem(at: folder.appending(path: name))
        }
    }
}
