import CCurl

/// A URL as libcurl reads it: the reader the client connects with, so a check of a URL cannot
/// disagree with where its request goes.
public struct ParsedURL: Sendable, Equatable {
    /// Lower case, e.g. `https`.
    public var scheme: String
    public var host: String
    /// The URL carries a user name, password or login options (`user:pass@host`).
    public var hasUserInfo: Bool

    /// Nil when libcurl does not accept `text` as an absolute URL.
    public init?(_ text: String) {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, text, 0) == CURLUE_OK,
              let scheme = Self.part(handle, CURLUPART_SCHEME), let host = Self.part(handle, CURLUPART_HOST)
        else { return nil }
        self.scheme = scheme.lowercased()
        self.host = host
        hasUserInfo = [CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS].contains { Self.part(handle, $0) != nil }
    }

    private static func part(_ handle: OpaquePointer, _ which: CURLUPart) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, which, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
