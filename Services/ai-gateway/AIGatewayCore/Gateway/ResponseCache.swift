import Bus
import Foundation
import GRDB
import Logging
import ServiceKit
import Storage
import Synchronization
import Wire

/// What a cached answer is keyed by: provider, model and prompt, as a 128-bit hash (the prompt,
/// possibly megabytes of study text, is not kept).
struct CacheKey: Hashable, Sendable {
    let hash: String
    let provider: String
    let model: String

    init(provider: String, model: String, prompt: String) {
        self.provider = provider
        self.model = model
        var bytes = Array(provider.utf8)
        bytes.append(0)
        bytes += model.utf8
        bytes.append(0)
        bytes += prompt.utf8
        hash = StableHash.hex128(bytes)
    }
}

/// Canonical text of a task's input, the prompt part of its cache key: the task and the
/// request as JSON with sorted keys (callers clear the `provider` field first: the key names
/// the provider anyway).
enum CacheInput {
    static func of<Input: Encodable>(_ task: GatewayTask, _ input: Input) -> String {
        let encoder = WireCoding.encoder()
        encoder.outputFormatting.insert(.sortedKeys)
        let json = (try? encoder.encode(input)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return task.rawValue + "\n" + json
    }
}

/// A hash that is the same in every process and on every machine (Swift's `Hasher` is seeded
/// per process), for keys that live on disk: two independent 64-bit lanes of
/// multiply-rotate mixing over 8-byte words, each finished with splitmix64's avalanche.
enum StableHash {
    static func hex128(_ bytes: [UInt8]) -> String {
        var a: UInt64 = 0x243F_6A88_85A3_08D3 ^ UInt64(bytes.count)
        var b: UInt64 = 0x1319_8A2E_0370_7344 &+ UInt64(bytes.count)
        bytes.withUnsafeBytes { raw in
            let words = raw.count / 8
            for index in 0..<words {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
                a = rotate(a ^ (word &* 0x9E37_79B9_7F4A_7C15), 31) &* 0xBF58_476D_1CE4_E5B9
                b = rotate(b ^ (word &* 0xC2B2_AE3D_27D4_EB4F), 29) &* 0x94D0_49BB_1331_11EB
            }
            var tail: UInt64 = 0
            for index in (words * 8)..<raw.count { tail |= UInt64(raw[index]) << (8 * UInt64(index - words * 8)) }
            a = rotate(a ^ (tail &* 0x9E37_79B9_7F4A_7C15), 31) &* 0xBF58_476D_1CE4_E5B9
            b = rotate(b ^ (tail &* 0xC2B2_AE3D_27D4_EB4F), 29) &* 0x94D0_49BB_1331_11EB
        }
        return hex(finish(a)) + hex(finish(b ^ a))
    }

    private static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 { (value << count) | (value >> (64 - count)) }

    private static func finish(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Answers already given, by provider, model and prompt: an in-memory LRU in front of the
/// gateway's SQLite file, both with a TTL. Local answers stay in memory only (they are cheap to
/// make again); remote ones also go to disk, so a restart keeps them.
final class ResponseCache: Sendable {
    private struct Entry {
        var value: Data
        var expires: Date
    }

    private let memory: Mutex<LRUCache<CacheKey, Entry>>
    private let database: ServiceDatabase?
    private let ttl: TimeInterval
    private let diskEntries: Int
    private let clock: any WallClock
    let logger: Logger

    init(database: ServiceDatabase?, ttl: TimeInterval, memoryEntries: Int, diskEntries: Int, clock: any WallClock, logger: Logger) {
        memory = Mutex(LRUCache(capacity: max(1, memoryEntries)))
        self.database = database
        self.ttl = ttl
        self.diskEntries = diskEntries
        self.clock = clock
        self.logger = logger
    }

    var isEnabled: Bool { ttl > 0 }

    /// The cached answer for `key`, if there is one that has not expired.
    func get(_ key: CacheKey) -> Data? {
        guard isEnabled else { return nil }
        let now = clock.now()
        let inMemory = memory.withLock { cache -> Data? in
            guard let entry = cache.get(key) else { return nil }
            if entry.expires <= now {
                cache.remove(key)
                return nil
            }
            return entry.value
        }
        if let inMemory { return inMemory }
        guard let database else { return nil }
        do {
            let row = try database.pool.read { db in
                try Row.fetchOne(db, sql: "SELECT response, expiresAt FROM response_cache WHERE key = ? AND expiresAt > ?",
                                 arguments: [key.hash, now.timeIntervalSince1970])
            }
            guard let row else { return nil }
            let value: Data = row["response"]
            let expires = Date(timeIntervalSince1970: row["expiresAt"])
            memory.withLock { _ = $0.set(key, Entry(value: value, expires: expires)) }
            return value
        } catch {
            logger.warning("response cache read failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Caches `value` under `key`; with `persist`, also in the database.
    func put(_ key: CacheKey, _ value: Data, persist: Bool) {
        guard isEnabled else { return }
        let now = clock.now()
        let expires = now.addingTimeInterval(ttl)
        memory.withLock { _ = $0.set(key, Entry(value: value, expires: expires)) }
        guard persist, let database, diskEntries > 0 else { return }
        do {
            try database.pool.write { db in
                try db.execute(sql: """
                    INSERT OR REPLACE INTO response_cache (key, provider, model, response, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?, ?)
                    """, arguments: [key.hash, key.provider, key.model, value, now.timeIntervalSince1970, expires.timeIntervalSince1970])
            }
        } catch {
            logger.warning("response cache write failed", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes expired rows and, beyond the disk limit, the oldest ones.
    func purge() {
        guard let database else { return }
        let now = clock.now().timeIntervalSince1970
        let limit = diskEntries
        do {
            try database.pool.write { db in
                try db.execute(sql: "DELETE FROM response_cache WHERE expiresAt <= ?", arguments: [now])
                try db.execute(sql: """
                    DELETE FROM response_cache WHERE key IN
                    (SELECT key FROM response_cache ORDER BY createdAt DESC LIMIT -1 OFFSET ?)
                    """, arguments: [limit])
            }
        } catch {
            logger.warning("response cache purge failed", metadata: ["error": "\(error)"])
        }
    }

    /// Rows on disk (tests, operations).
    func diskCount() -> Int {
        (try? database?.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM response_cache") }) ?? 0
    }
}
