import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import Wire

/// A file fetched for `ingest.submitURL`.
struct FetchedFile: Sendable {
    let data: Data
    /// The name given, else the last segment of the final URL's path (with the format's
    /// extension when it has none ingest knows).
    let fileName: String
    /// The response's `Content-Type`, parameters (the charset) included.
    let mimeType: String?
}

/// Fetches what users link to, a URL that is hostile as an upload is: only `http` and `https`;
/// only public addresses (and the networks the operator allows), checked by the HTTP client on
/// the address each connection really goes to, after name resolution, so no spelling of a host
/// and no DNS answer that changes (rebinding) reaches another; redirects followed here, at most
/// `maxRedirects`, each URL checked as the first; the whole fetch within `timeout`; the body read
/// only up to the format's size limit (the connection is closed beyond it); no compressed
/// transfer (a small answer cannot inflate).
final class URLFetcher: Sendable {
    /// The client, with the destination policy; run as a service of the worker.
    let http: HTTPClient
    private let settings: URLFetchSettings

    /// The longest URL taken.
    static let maxURLLength = 2048

    init(configuration: URLFetchSettings, logger: Logger) throws {
        settings = configuration
        http = try HTTPClient(logger: logger, destinationPolicy: DestinationPolicy(allowing: configuration.allowedNetworks))
    }

    /// Fetches `text`, following redirects.
    /// - Throws: `INVALID_ARGUMENT` for a URL that is not http(s), too many redirects, an HTTP
    ///   4xx answer or an empty body; `PERMISSION_DENIED` for a destination not allowed;
    ///   `RESOURCE_EXHAUSTED` for a body over the format's limit; `DEADLINE_EXCEEDED` past the
    ///   time limits; `UNAVAILABLE` when the host cannot be reached or answers 5xx.
    func fetch(_ text: String, fileName given: String?) async throws(BusError) -> FetchedFile {
        var url = try Self.checked(text, what: "url")
        let deadline = ContinuousClock.now + settings.timeout
        var redirects = 0
        while true {
            switch try await get(url, fileName: given, deadline: deadline) {
            case .file(let file):
                return file
            case .redirect(let location):
                redirects += 1
                guard redirects <= settings.maxRedirects else {
                    throw .invalidArgument("the URL redirects more than \(settings.maxRedirects) times (INGEST_URL_MAX_REDIRECTS)")
                }
                guard let next = URL(string: location, relativeTo: URL(string: url))?.absoluteString else {
                    throw .invalidArgument("the URL redirects to something that is not a URL: '\(location.prefix(200))'")
                }
                url = try Self.checked(next, what: "redirect")
            }
        }
    }

    private enum Answer {
        case file(FetchedFile)
        case redirect(String)
    }

    /// One request: its redirect, or the file.
    private func get(_ url: String, fileName given: String?, deadline: ContinuousClock.Instant) async throws(BusError) -> Answer {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw timedOut() }
        var fileName = given ?? Self.fileName(from: url)
        var mimeType: String?
        // The format's limit when the name tells it, else the largest; the client stops reading
        // one byte past it, whatever this task has taken from the stream yet.
        var limit = FormatDetection.format(fileName: fileName, mimeType: nil, data: Data())?.maxBytes ?? StoreLimits.materialBytes
        let request = HTTPRequest(
            url: url, headers: [("user-agent", "StudyBus-ingest"), ("accept", "*/*")], timeout: remaining,
            connectTimeout: min(settings.connectTimeout, remaining), maximumBodyBytes: limit + 1, decompress: false)
        var body = Data()
        do {
            for try await event in http.stream(request) {
                switch event {
                case .head(let status, let headers):
                    if [301, 302, 303, 307, 308].contains(status), let location = headers["location"], !location.isEmpty {
                        return .redirect(location)
                    }
                    guard (200..<300).contains(status) else {
                        let message = "the URL answered HTTP \(status)"
                        throw status >= 500 ? BusError.unavailable(message + "; try again later") : .invalidArgument(message)
                    }
                    mimeType = headers["content-type"].flatMap {
                        FormatDetection.baseMimeType($0).isEmpty || $0.utf8.count > StoreLimits.mimeTypeLength ? nil : $0
                    }
                    // Known from the name or the media type, the format's own limit applies
                    // already while reading; else the largest, and the format's once sniffed.
                    if let format = FormatDetection.format(fileName: fileName, mimeType: mimeType, data: Data()) { limit = min(limit, format.maxBytes) }
                    if let length = headers["content-length"].flatMap(Int.init), length > limit { throw tooLarge(limit) }
                case .body(let chunk):
                    guard body.count + chunk.count <= limit else { throw tooLarge(limit) }
                    body.append(chunk)
                }
            }
        } catch let error as BusError {
            throw error
        } catch let error as HTTPClientError {
            throw Self.busError(error)
        } catch {
            throw .unavailable("fetching the URL failed: \(error)")
        }
        guard !body.isEmpty else { throw .invalidArgument("the URL answered with an empty body") }
        guard let format = FormatDetection.format(fileName: fileName, mimeType: mimeType, data: body) else {
            throw .invalidArgument(
                "the URL's content (\(mimeType ?? "no media type"), '\(fileName)') is not a format ingest reads; ingest.formats lists those it does")
        }
        guard body.count <= format.maxBytes else { throw tooLarge(format.maxBytes) }
        if given == nil, FormatDetection.format(fileName: fileName, mimeType: nil, data: Data()) != format,
           let suffix = FormatDetection.catalog.first(where: { $0.format == format })?.extensions.first {
            fileName = String(fileName.prefix(StoreLimits.fileNameLength - suffix.count - 1)) + "." + suffix
        }
        return .file(FetchedFile(data: body, fileName: fileName, mimeType: mimeType))
    }

    /// `text` if it is an absolute http(s) URL without user name or password.
    /// - Throws: `INVALID_ARGUMENT` saying what is wrong.
    static func checked(_ text: String, what: String) throws(BusError) -> String {
        guard !text.isEmpty, text.utf8.count <= maxURLLength else {
            throw .invalidArgument("field '\(what)' must be an http or https URL of 1...\(maxURLLength) bytes")
        }
        let scheme = text.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw .invalidArgument("field '\(what)' must be an http or https URL; '\(scheme.prefix(20))' is not fetched")
        }
        guard let parsed = ParsedURL(text), !parsed.host.isEmpty else {
            throw .invalidArgument("field '\(what)' is not an absolute URL: '\(text.prefix(200))'")
        }
        guard !parsed.hasUserInfo else {
            throw .invalidArgument("field '\(what)' carries a user name or password; ingest fetches only public URLs")
        }
        return text
    }

    /// The last segment of the URL's path, percent-decoded, else its host.
    static func fileName(from url: String) -> String {
        let parsed = URL(string: url)
        let segment = parsed?.lastPathComponent.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let name = segment.isEmpty || segment == "/" ? parsed?.host() ?? "download" : segment
        return String(name.prefix(StoreLimits.fileNameLength))
    }

    private func tooLarge(_ limit: Int) -> BusError {
        .resourceExhausted("the URL's file is larger than \(limit / 1024 / 1024) MB, the limit for its format; it was not read further")
    }

    private func timedOut() -> BusError {
        .deadlineExceeded("fetching the URL took longer than \(settings.timeout) (INGEST_URL_TIMEOUT_SECONDS) and was stopped")
    }

    /// The client's failure, in words for whoever gave the URL (no addresses or timings).
    private static func busError(_ error: HTTPClientError) -> BusError {
        switch error {
        case .timedOut:
            return .deadlineExceeded("fetching the URL timed out (INGEST_URL_CONNECT_TIMEOUT_SECONDS, INGEST_URL_TIMEOUT_SECONDS)")
        case .destinationNotAllowed(let kind):
            return .permissionDenied(
                "the URL's host is a \(kind); ingest fetches only from public addresses (operators: INGEST_URL_ALLOW_NETWORKS)")
        case .cancelled:
            return .cancelled("fetching the URL was cancelled")
        default:
            return .unavailable("fetching the URL failed: \(error.reason)")
        }
    }
}
