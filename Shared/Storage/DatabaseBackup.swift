import Crypto
import Foundation
import GRDB
import Glibc
import Logging
import Synchronization
import Wire

/// How `_backup` copies are made: besides the one-at-a-time rule, how much of the disk a copy
/// may take.
public struct BackupPolicy: Sendable {
    /// Bytes the disk holding the database must still have free after the copy
    /// (`BACKUP_MIN_FREE_BYTES`): a backup must never fill the disk the service writes to.
    public var minimumFreeBytes: Int64

    /// 256 MiB: room for the service's own writes and its write-ahead log while the copy
    /// exists, on disks of any size.
    public static let defaultMinimumFreeBytes: Int64 = 256 << 20

    public init(minimumFreeBytes: Int64 = defaultMinimumFreeBytes) {
        self.minimumFreeBytes = minimumFreeBytes
    }
}

extension ServiceDatabase {
    /// An online copy of this database for `_backup` (`busctl backup SERVICE FILE`): its bytes
    /// and description. Blocks while the file is copied and hashed; call it off the cooperative
    /// pool.
    ///
    /// The copy is SQLite's online backup of one read snapshot, written to a temporary file in
    /// the database's folder (the service's volume, so no other disk must have room), mapped
    /// into memory rather than read (its pages stay the kernel's, to drop under pressure) and
    /// deleted. Writes go on meanwhile. One copy is made at a time: each is a whole file on disk
    /// and a whole message in flight. It is refused before anything is written when the disk
    /// would keep less than `policy.minimumFreeBytes` free, or when the database is larger than
    /// `limit` (the broker's largest frame, `BROKER_MAX_MESSAGE_BYTES`): sending it would only
    /// get the service disconnected by the broker.
    /// - Throws: `RESOURCE_EXHAUSTED` when another copy is being made, when the disk has too
    ///   little room, or when the copy is larger than `limit`; `INTERNAL` when the copy cannot
    ///   be made or read.
    public func snapshot(service: String, limit: Int64, policy: BackupPolicy = BackupPolicy()) throws(BusError) -> (BackupInfo, Data) {
        let slot = try reserveBackupSlot(service: service)
        defer { slot.release() }
        let estimate = try pageBytes()
        try checkFits(estimate, service: service, limit: limit, policy: policy)
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
        guard bytes <= limit else { throw Self.tooLarge(service, bytes: bytes, limit: limit, file: url.lastPathComponent) }
        let data: Data
        do {
            // Mapped, the file outlives its name until the mapping goes with the reply.
            data = try Data(contentsOf: temporary, options: .alwaysMapped)
        } catch {
            throw .internal("cannot read the backup copy \(temporary.path): \(error.localizedDescription)")
        }
        let sha256 = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        let info = BackupInfo(
            service: service, file: url.lastPathComponent, bytes: Int64(data.count), sha256: sha256, migrations: migrations, takenAt: takenAt)
        return (info, data)
    }

    /// The right to make the one copy of this database that may be made at a time; release it
    /// when the copy is done.
    /// - Throws: `RESOURCE_EXHAUSTED` while another copy is being made.
    func reserveBackupSlot(service: String) throws(BusError) -> BackupSlot {
        guard backupInProgress.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw BusError(.resourceExhausted, "a backup of \(service) is being made already; one is made at a time, try again when it is done",
                           details: .object(["reason": .string("backup in progress")]))
        }
        return BackupSlot(database: self)
    }

    /// The size of the database's pages: what a copy will take, give or take the writes made
    /// while it is made.
    private func pageBytes() throws(BusError) -> Int64 {
        do {
            return try pool.read { db in
                (try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0) * (try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
            }
        } catch {
            throw .internal("cannot read the size of \(url.lastPathComponent): \(error)")
        }
    }

    /// Refuses a copy of about `bytes` that could not be sent, or would leave the disk with
    /// less than the policy's margin.
    private func checkFits(_ bytes: Int64, service: String, limit: Int64, policy: BackupPolicy) throws(BusError) {
        guard bytes <= limit else { throw Self.tooLarge(service, bytes: bytes, limit: limit, file: url.lastPathComponent) }
        var stats = statvfs()
        let folder = url.deletingLastPathComponent().path
        guard statvfs(folder, &stats) == 0 else {
            throw .internal("cannot read the free space of \(folder): \(String(cString: strerror(errno)))")
        }
        let free = Int64(clamping: UInt64(stats.f_bavail).multipliedReportingOverflow(by: UInt64(stats.f_frsize)).partialValue)
        guard free - bytes < policy.minimumFreeBytes else { return }
        throw BusError(
            .resourceExhausted,
            "not enough free disk for a backup of \(service): the copy takes about \(bytes) bytes and \(free) are free, "
                + "but BACKUP_MIN_FREE_BYTES = \(policy.minimumFreeBytes) must stay free; free some space or lower the setting",
            details: .object([
                "bytes": .int(bytes), "free": .int(free), "minimumFree": .int(policy.minimumFreeBytes), "setting": .string("BACKUP_MIN_FREE_BYTES"),
            ]))
    }

    private static func tooLarge(_ service: String, bytes: Int64, limit: Int64, file: String) -> BusError {
        .messageTooLarge(
            "the backup of \(service)", bytes: Int(bytes), limit: limit,
            advice: "raise BROKER_MAX_MESSAGE_BYTES for the broker and \(service) above the database's size, or copy "
                + "\(file) with the sqlite3 shell in the service's container (docs/operations.md, Backups)")
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

/// The one backup of a database that may be in progress (``ServiceDatabase/reserveBackupSlot(service:)``).
struct BackupSlot {
    let database: ServiceDatabase

    func release() {
        database.backupInProgress.store(false, ordering: .releasing)
    }
}
