import Foundation
import Glibc
import Wire

/// A key file in ZeroMQ's certificate format (`zcert`, written in ZPL, ZeroMQ RFC 4), as CZMQ
/// and `busctl keys new` write it: `<name>.key` holds the public key, `<name>.key_secret` the
/// public and the secret key.
///
/// ```
/// #   ZeroMQ CURVE **Secret** Certificate
/// metadata
///     name = "store"
/// curve
///     public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
///     secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
/// ```
///
/// A secret key file that its owner's group or anyone else may access is refused, as ssh
/// refuses such a private key.
public struct KeyFile: Sendable, Equatable {
    /// `metadata`'s `name`, when it has one.
    public var name: String?
    public var publicKey: CurveKey
    /// Present in a `.key_secret` file only.
    public var secretKey: CurveKey?

    public init(name: String?, publicKey: CurveKey, secretKey: CurveKey? = nil) {
        self.name = name
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// The largest key file read; real ones are a few hundred bytes.
    public static let maximumBytes = 64 * 1024

    /// The suffixes of the two files of a key pair.
    public static let publicSuffix = ".key"
    public static let secretSuffix = ".key_secret"

    // MARK: Reading

    /// Reads a public key from a `.key` file (or from a `.key_secret`, which holds it too).
    /// - Throws: `FAILED_PRECONDITION` naming the file and, for a format error, the line.
    public static func readPublic(path: String) throws(BusError) -> KeyFile {
        try parse(try readFile(path).bytes, path: path)
    }

    /// Reads this process's key pair from a `.key_secret` file, which only its owner may access.
    /// - Throws: `FAILED_PRECONDITION` naming the file: not there, not a regular file, readable
    ///   or writable by group or others (with the `chmod` that fixes it), no `secret-key`, a
    ///   `public-key` that does not belong to the `secret-key`, or a format error with its line.
    public static func readSecret(path: String) throws(BusError) -> CurveKeyPair {
        let (bytes, access) = try readFile(path)
        let file = try parse(bytes, path: path)
        guard let secretKey = file.secretKey else {
            throw .failedPrecondition("key file \(path) has no curve secret-key: give the \(secretSuffix) file, not the public \(publicSuffix) file")
        }
        guard access & 0o077 == 0 else {
            throw .failedPrecondition(
                "secret key file \(path) may be accessed by others (mode \(String(access, radix: 8))); only its owner may: chmod 600 \(path)")
        }
        do {
            return try CurveKeyPair(publicKey: file.publicKey, secretKey: secretKey)
        } catch {
            throw .failedPrecondition("key file \(path): \(error.message)")
        }
    }

    /// Reads a whole small file through one descriptor, so that the permissions returned are
    /// those of the file read.
    private static func readFile(_ path: String) throws(BusError) -> (bytes: [UInt8], access: mode_t) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .failedPrecondition("cannot open key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw .failedPrecondition("cannot read key file \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .failedPrecondition("key file \(path) is not a regular file") }
        guard Int(status.st_size) <= maximumBytes else {
            throw .failedPrecondition("key file \(path) is larger than \(maximumBytes) bytes; it is not a key file")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        var count = 0
        while count < bytes.count {
            let read = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if read == 0 { break }
            if read < 0 {
                if errno == EINTR { continue }
                throw .failedPrecondition("cannot read key file \(path): \(String(cString: strerror(errno)))")
            }
            count += read
        }
        guard count <= maximumBytes else { throw .failedPrecondition("key file \(path) is larger than \(maximumBytes) bytes; it is not a key file") }
        return (Array(bytes.prefix(count)), status.st_mode & 0o777)
    }

    /// Parses the certificate's text: the `curve` section's `public-key` (required) and
    /// `secret-key`, and `metadata`'s `name`; other sections and properties are ignored.
    /// - Throws: `FAILED_PRECONDITION` naming `path` and the line.
    public static func parse(_ bytes: [UInt8], path: String) throws(BusError) -> KeyFile {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .failedPrecondition("key file \(path) is not UTF-8 text") }
        var section: Substring = ""
        var properties: [String: (value: String, line: Int)] = [:]
        // Character's newlines: "\n", and "\r\n", which Swift reads as one character.
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            func invalid(_ reason: String) -> BusError { .failedPrecondition("key file \(path), line \(number): \(reason)") }
            let content = line.drop { $0 == " " }
            if content.isEmpty || content.hasPrefix("#") { continue }
            if content.hasPrefix("\t") { throw invalid("indent with spaces, not tabs") }
            let indent = line.count - content.count
            guard indent % 4 == 0 else { throw invalid("indentation must be a multiple of 4 spaces") }
            guard let equals = content.prefix(while: { $0 != "#" }).firstIndex(of: "=") else {
                // A section name; only top-level sections matter here.
                let name = content.prefix { $0 != " " && $0 != "#" }
                if indent == 0 { section = name }
                continue
            }
            let key = content[..<equals].trimmingCharacters(in: .whitespaces)
            guard indent == 4 else { continue }
            let value = try zplValue(content[content.index(after: equals)...], invalid)
            let qualified = "\(section)/\(key)"
            if let earlier = properties[qualified] { throw invalid("\(key) is given twice (first on line \(earlier.line))") }
            properties[qualified] = (value, number)
        }
        func key(_ name: String) throws(BusError) -> CurveKey? {
            guard let (value, line) = properties["curve/\(name)"] else { return nil }
            guard let key = CurveKey(z85: value) else {
                throw .failedPrecondition("key file \(path), line \(line): \(name) must be \(CurveKey.textLength) characters of Z85")
            }
            return key
        }
        guard let publicKey = try key("public-key") else { throw .failedPrecondition("key file \(path) has no curve public-key") }
        return KeyFile(name: properties["metadata/name"]?.value, publicKey: publicKey, secretKey: try key("secret-key"))
    }

    /// A ZPL value: `"quoted"`, `'quoted'` or a bare word, then at most a `#` comment.
    private static func zplValue(_ text: Substring, _ invalid: (String) -> BusError) throws(BusError) -> String {
        let rest = text.drop { $0 == " " }
        guard let first = rest.first else { return "" }
        let value: Substring, after: Substring
        if first == "\"" || first == "'" {
            let body = rest.dropFirst()
            guard let close = body.firstIndex(of: first) else { throw invalid("the value's closing \(first) is missing") }
            value = body[..<close]
            after = body[body.index(after: close)...]
        } else {
            value = rest.prefix { $0 != " " && $0 != "#" }
            after = rest.dropFirst(value.count)
        }
        let trailing = after.drop { $0 == " " }
        guard trailing.isEmpty || trailing.hasPrefix("#") else { throw invalid("unexpected text after the value") }
        return String(value)
    }

    // MARK: Writing

    /// The file's text in `zcert` form: the secret key included when the file has one.
    public var certificateText: String {
        let kind = secretKey == nil
            ? "#   ZeroMQ CURVE Public Certificate\n#   Give it to whoever must recognise this key: the broker's allowlist, its clients.\n"
            : "#   ZeroMQ CURVE **Secret** Certificate\n#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n"
        var text = "#   ****  Generated by StudyBus (busctl keys new)  ****\n" + kind + "\nmetadata\n"
        if let name { text += "    name = \"\(name)\"\n" }
        text += "curve\n    public-key = \"\(publicKey.z85)\"\n"
        if let secretKey { text += "    secret-key = \"\(secretKey.z85)\"\n" }
        return text
    }

    /// Writes `pair` as `<directory>/<name>.key` (mode 644) and `<name>.key_secret` (mode 600),
    /// creating `directory` (mode 700) if needed. Never replaces a file.
    /// - Returns: the paths of the public and the secret file.
    /// - Throws: `ALREADY_EXISTS` if either file exists; `FAILED_PRECONDITION` if one cannot be written.
    @discardableResult
    public static func write(_ pair: CurveKeyPair, name: String, directory: String) throws(BusError) -> (publicPath: String, secretPath: String) {
        guard BusIdentity.isValidName(name), !name.contains(where: { "/\"'".contains($0) }), !name.hasPrefix(".") else {
            throw .invalidArgument(
                "a key's name is its files' name: 1 to \(BusIdentity.maximumNameLength) characters without blanks, control characters, quotes or '/', not starting with '.' or '#'; got '\(name)'")
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .failedPrecondition("cannot create the key directory \(directory): \(String(cString: strerror(errno)))")
        }
        let base = (directory as NSString).appendingPathComponent(name)
        let publicPath = base + publicSuffix, secretPath = base + secretSuffix
        for path in [publicPath, secretPath] where access(path, F_OK) == 0 {
            throw .alreadyExists("key file \(path) already exists; remove it first, or choose another name")
        }
        // The secret first: a public file without its secret is useless, the reverse is not.
        try create(secretPath, mode: 0o600, text: KeyFile(name: name, publicKey: pair.publicKey, secretKey: pair.secretKey).certificateText)
        do {
            try create(publicPath, mode: 0o644, text: KeyFile(name: name, publicKey: pair.publicKey).certificateText)
        } catch {
            unlink(secretPath)
            throw error
        }
        return (publicPath, secretPath)
    }

    /// Creates a new file with exactly `mode` (no umask can widen it; an existing file is an error).
    private static func create(_ path: String, mode: mode_t, text: String) throws(BusError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw .alreadyExists("key file \(path) already exists; remove it first, or choose another name") }
            throw .failedPrecondition("cannot create key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // open's mode is reduced by the umask; set it exactly (a public key stays readable).
        fchmod(descriptor, mode)
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                unlink(path)
                throw .failedPrecondition("cannot write key file \(path): \(reason)")
            }
            written += count
        }
    }
}
