import Bus
import Foundation
import Logging
import Storage
import Threads
import Wire

extension ServiceHost {
    /// Answers `_events.replay` from `outbox`: the stored events after a `seq`, at most
    /// ``Outbox/replayLimit`` per call; only the header user's when the request names one, and
    /// every user's only for services and operators (wire protocol, Addition 14).
    public func serveReplay(from outbox: Outbox) {
        let service = self.service
        handle(Reserved.eventsReplay(service)) { request, context in
            if context.user == nil { try context.require(.service, for: "\(service)/_events.replay of every user's events") }
            return try await outbox.replay(request, user: context.user)
        }
    }

    /// Answers `_backup` with an online copy of `database` (``ServiceDatabase/snapshot(service:limit:policy:)``),
    /// so an operator can back up a running service (`busctl backup SERVICE FILE`): one copy at
    /// a time, and only while the disk keeps `policy`'s margin free.
    public func serveBackup(of database: ServiceDatabase, policy: BackupPolicy = BackupPolicy()) {
        let service = self.service
        database.removeLeftoverCopies()
        handle(Reserved.backup(service), withAttachment: { _, context in
            let limit = context.bus.configuration.maxMessageBytes
            context.logger.info("backup requested")
            // The copy, the read and the hash block for as long as the file is large: keep them
            // off the cooperative pool, which every other request needs.
            let (info, data) = try await offThePool(qos: .utility) { () throws(BusError) in try database.snapshot(service: service, limit: limit, policy: policy) }
            context.logger.info("backup sent", metadata: ["bytes": "\(info.bytes)", "migrations": "\(info.migrations.count)"])
            return (info, data)
        })
    }
}
