import Crypto
import Foundation
import GRDB
import Logging
import Wire

extension ServiceDatabase {
    /// An online copy of this database for `_backup` (`busctl backup SERVICE FILE`): its bytes
    /// and description. Blocks while the file is copied, read and hashed; call it off the
    /// cooperative pool.
    ///
    /// The copy is SQLite's online backup of one read snapshot, written to a temporary file in
    /// the database's folder (the service's volume, so no other disk must have room), read and
    /// deleted. Writes go on meanwhile. A copy larger than `limit` (the broker's largest frame,
    /// `BROKER_MAX_MESSAGE_BYTES`) is refused: sending it would only get the service
    /// disconnected by the broker.
    /// - Throws: `RESOURCE_EXHAUSTED` when the copy is larger than `limit`; `INTERNAL` when the
    ///   copy cannot be made or read.
    public func snapshot(service: String, limit: Int64) throws(BusError) -> (BackupInfo, Data) {
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

    /// Deletes temporary copies a process that died while backing up left behind; call it at
    /// start, when no backup of this file can be running (one process owns it).
    public func removeLeftoverCopies() {
        let folder = url.deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(Self.copyPrefix) {
            try? FileManager.default.removeItem(at: folder.appending(path: name))
        }
    }
}
