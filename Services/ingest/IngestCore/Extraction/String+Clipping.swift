extension String {
    /// The string cut to at most `maximum` Unicode scalars, the unit the store counts lengths in
    /// (a Character can be many: an accent added to its letter, an emoji with modifiers). The cut
    /// falls between Characters, so none is split, unless the first alone is longer than `maximum`.
    func clipped(toScalars maximum: Int) -> String {
        // UTF-8 bytes are never fewer than scalars: count scalars only when it matters.
        guard utf8.count > maximum, unicodeScalars.count > maximum else { return self }
        var end = startIndex, scalars = 0
        while end < endIndex {
            let next = index(after: end)
            scalars += unicodeScalars[end..<next].count
            guard scalars <= maximum else { break }
            end = next
        }
        return end > startIndex ? String(self[..<end]) : String(unicodeScalars.prefix(maximum))
    }
}
