import Foundation
import Wire

/// The keys the broker admits and who each belongs to (`BUS_ALLOWLIST`). One key per line:
///
/// ```
/// # key                                    role      name
/// rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7 service   store
/// Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID operator  alice    # busctl on alice's laptop
/// x?6F]r0g6)}mgVjs3Df2rUrZ{d(Kq.z%Pn#D!V$b edge      web
/// 9&3x.qPa0^ZBw4]nl+[hX2o!<Fvd=Ke>L7(s@uY1 user      u-42
/// ```
///
/// Roles: `service NAME`, `operator [LABEL]`, `edge [LABEL]`, `user USERID`. A word starting
/// with `#` starts a comment to the end of the line (no Z85 key starts with `#`, and no name
/// may). Two keys may name one identity (a key being rotated); a key may be listed once. Any
/// error names the line, and nothing of a file with an error is used.
public struct Allowlist: Sendable {
    /// One line: a key and who it belongs to.
    public struct Entry: Sendable, Equatable {
        public let key: CurveKey
        public let identity: BusIdentity
        /// The line it was read from (1 for the first).
        public let line: Int
    }

    /// Every entry, in file order.
    public let entries: [Entry]
    private let identities: [CurveKey: BusIdentity]

    /// The largest allowlist read: about 180,000 lines.
    public static let maximumBytes = 16 << 20

    public init(entries: [Entry]) {
        self.entries = entries
        identities = Dictionary(entries.map { ($0.key, $0.identity) }, uniquingKeysWith: { first, _ in first })
    }

    /// Who `key` belongs to; nil for a key not listed.
    public func identity(of key: CurveKey) -> BusIdentity? {
        identities[key]
    }

    /// The line that lists `key` as `identity`, as ``parse(_:source:)`` reads it.
    public static func line(for key: CurveKey, _ identity: BusIdentity) -> String {
        "\(key.z85) \(identity)"
    }

    /// Reads the allowlist file at `path`.
    /// - Throws: `FAILED_PRECONDITION` naming the file and, for a bad line, the line.
    public static func read(path: String) throws(BusError) -> Allowlist {
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? Int, size > maximumBytes {
                throw BusError.failedPrecondition("allowlist \(path) is larger than \(maximumBytes) bytes")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as BusError {
            throw error
        } catch {
            throw .failedPrecondition("cannot read the allowlist \(path): \(error.localizedDescription)")
        }
        guard let text = String(validating: data, as: UTF8.self) else { throw .failedPrecondition("allowlist \(path) is not UTF-8 text") }
        return try parse(text, source: path)
    }

    /// Parses an allowlist's text; `source` names it in errors.
    /// - Throws: `FAILED_PRECONDITION`: `<source>, line N: <what is wrong>`.
    public static func parse(_ text: String, source: String) throws(BusError) -> Allowlist {
        var entries: [Entry] = []
        var lineOfKey: [CurveKey: Int] = [:]
        // Character's newlines: "\n", and "\r\n", which Swift reads as one character.
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            func invalid(_ reason: String) -> BusError { .failedPrecondition("\(source), line \(number): \(reason)") }
            let words = line.split(whereSeparator: \.isWhitespace)
            guard let first = words.first, !first.hasPrefix("#") else { continue }
            guard let key = CurveKey(z85: first) else {
                throw invalid("'\(first.prefix(48))' is not a CURVE public key (\(CurveKey.textLength) characters of Z85)")
            }
            let fields = words.dropFirst().prefix { !$0.hasPrefix("#") }
            guard let roleText = fields.first else {
                throw invalid("the key has no role: write one of service NAME, operator [LABEL], edge [LABEL], user USERID")
            }
            guard let role = BusRole(rawValue: String(roleText)) else {
                throw invalid("unknown role '\(roleText.prefix(32))': the roles are \(BusRole.wireValues.joined(separator: ", "))")
            }
            let names = fields.dropFirst()
            if names.count > 1 { throw invalid("unexpected '\(names.dropFirst().first!.prefix(32))' after the name (a comment starts with #)") }
            let identity: BusIdentity
            do {
                identity = try BusIdentity(role: role, name: names.first.map(String.init))
            } catch {
                throw invalid(error.message)
            }
            if let earlier = lineOfKey[key] { throw invalid("key \(key.z85) is already listed on line \(earlier)") }
            lineOfKey[key] = number
            entries.append(Entry(key: key, identity: identity, line: number))
        }
        return Allowlist(entries: entries)
    }
}
