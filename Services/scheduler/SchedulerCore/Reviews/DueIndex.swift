import GRDB

/// The cards' due-date index, `card_due_by_set (user_id, set_id, due_at, review_count)`: each of
/// a user's sets, and the cards in no set, in due order. A review moves one entry of it. A second
/// index over all of a user's cards in due order would answer the questions about all of them
/// with one range, but every review would move an entry of it too, and reviews are what the
/// scheduler must do fast; those questions go through the user's sets one by one instead, a
/// seek each.
enum DueIndex {
    /// The user's sets that have cards, in order, with nil first when some cards are in no set.
    static func sets(_ db: Database, user: String) throws -> [String?] {
        var sets: [String?] = try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM card WHERE user_id = ? AND set_id IS NULL)
            """), arguments: [user]) == true ? [nil] : []
        // One seek per set, from each set to the next (SQLite scans no index entry in between).
        let next = try db.cachedStatement(sql: "SELECT set_id FROM card WHERE user_id = ? AND set_id > ? ORDER BY set_id LIMIT 1")
        var after = ""
        while let set = try String.fetchOne(next, arguments: [user, after]) {
            sets.append(set)
            after = set
        }
        return sets
    }

    /// A card's place in the due order: by due date, then fewer reviews, then card id (the
    /// index's own order within a set).
    struct Entry: Comparable {
        var dueAt: Int64
        var reviewCount: Int
        var cardId: String

        static func < (a: Entry, b: Entry) -> Bool {
            (a.dueAt, a.reviewCount, a.cardId) < (b.dueAt, b.reviewCount, b.cardId)
        }
    }

    /// The first `count` of all the user's cards due at or before `at`, in due order: each set's
    /// earliest merged into one list. A set is read only while its entries would still be in
    /// the list; the next is then sought, so each set costs one seek.
    static func earliest(_ db: Database, user: String, dueBy at: Int64, count: Int) throws -> [Entry] {
        var chosen: [Entry] = []
        func take(_ entries: [Entry]) {
            if !entries.isEmpty { chosen = merge(chosen, entries, count: count) }
        }
        let noSet = try db.cachedStatement(sql: """
            SELECT due_at, review_count, card_id FROM card WHERE user_id = ? AND set_id IS NULL AND due_at <= ? ORDER BY due_at LIMIT ?
            """)
        take(try Row.fetchAll(noSet, arguments: [user, at, count]).map(Entry.init(row:)))
        let fromSet = try db.cachedStatement(sql: """
            SELECT due_at, review_count, card_id, set_id FROM card WHERE user_id = ? AND set_id > ?
            ORDER BY set_id, due_at, review_count, card_id
            """)
        var after = ""
        seeking: while true {
            let rows = try Row.fetchCursor(fromSet, arguments: [user, after])
            var set = ""
            var earlier: [Entry] = []
            while let row = try rows.next() {
                let rowSet: String = row[3]
                if rowSet != set {
                    take(earlier)
                    earlier = []
                    set = rowSet
                }
                let entry = Entry(row: row)
                guard entry.dueAt <= at, earlier.count < count, chosen.count < count || entry < chosen[count - 1] else {
                    take(earlier)
                    after = set
                    continue seeking
                }
                earlier.append(entry)
            }
            take(earlier)
            return chosen
        }
    }

    /// The first `count` entries of two sorted lists, sorted.
    private static func merge(_ a: [Entry], _ b: [Entry], count: Int) -> [Entry] {
        var merged: [Entry] = []
        merged.reserveCapacity(min(count, a.count + b.count))
        var i = 0, j = 0
        while merged.count < count, i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) {
                merged.append(a[i])
                i += 1
            } else {
                merged.append(b[j])
                j += 1
            }
        }
        return merged
    }

    /// How many of the user's cards in `sets` fall due in each range `edges[i]..<edges[i + 1]`
    /// (`edges` ascending), leaving out the new cards of the set `newCardsLeftOutOf`. One pass
    /// over each set's part of the index, its due dates counted into the ranges as they come.
    static func counts(_ db: Database, user: String, sets: [String?], between edges: [Int64], newCardsLeftOutOf planned: String? = nil) throws -> [Int] {
        var counts = [Int](repeating: 0, count: max(edges.count - 1, 0))
        guard let first = edges.first, let last = edges.last, edges.count > 1 else { return counts }
        let statement = try db.cachedStatement(sql: """
            SELECT due_at FROM card WHERE user_id = ? AND set_id IS ? AND due_at >= ? AND due_at < ? AND review_count >= ? ORDER BY due_at
            """)
        for set in sets {
            let minimumReviews = set != nil && set == planned ? 1 : 0
            let dueDates = try Int64.fetchCursor(statement, arguments: [user, set, first, last, minimumReviews])
            var range = 0
            while let dueAt = try dueDates.next() {
                while dueAt >= edges[range + 1] { range += 1 }
                counts[range] += 1
            }
        }
        return counts
    }
}

extension DueIndex.Entry {
    /// A row whose first columns are `due_at, review_count, card_id`.
    init(row: Row) {
        self.init(dueAt: row[0], reviewCount: row[1], cardId: row[2])
    }
}
