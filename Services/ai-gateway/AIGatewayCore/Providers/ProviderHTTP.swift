import Bus
import Foundation
import HTTPClient
import Wire

/// Reading provider answers.
enum ProviderHTTP {
    /// The JSON object of a successful response, or the provider's error.
    static func json(_ response: HTTPResponse, provider: String) throws(ProviderError) -> JSONValue {
        guard (200..<300).contains(response.status) else { throw error(from: response.status, headers: response.headers, body: response.body) }
        do {
            let value = try JSONValue.parse(response.body)
            guard case .object = value else { throw ProviderError.malformed("\(provider) answered JSON that is not an object") }
            return value
        } catch let error as ProviderError {
            throw error
        } catch {
            throw .malformed("\(provider) answered invalid JSON: \(String(decoding: response.body.prefix(200), as: UTF8.self))")
        }
    }

    /// The error of a non-2xx response: its message (OpenAI's and Gemini's `error.message`) and
    /// the delay it asks for (`retry-after-ms`, `Retry-After` in seconds or as a date, Gemini's
    /// `RetryInfo.retryDelay`).
    static func error(from status: Int, headers: [String: String], body: Data) -> ProviderError {
        let json = try? JSONValue.parse(body)
        var message = json?["error"]?["message"]?.stringValue ?? String(decoding: body.prefix(300), as: UTF8.self)
        if message.isEmpty { message = HTTPStatusText.reason(status) }
        var retryAfter = Self.retryAfter(headers)
        if retryAfter == nil, case .array(let details)? = json?["error"]?["details"] {
            for detail in details {
                if let delay = detail["retryDelay"]?.stringValue, let parsed = parseProtobufDuration(delay) { retryAfter = parsed }
            }
        }
        return .http(status: status, message: message, retryAfter: retryAfter)
    }

    /// The delay a response asks for (HTTPClient's ``BackoffPolicy/retryAfter(_:now:)``, shared
    /// with connectors); the dispatcher caps the wait (`AI_RETRY_AFTER_MAX_MS`).
    static func retryAfter(_ headers: [String: String], now: Date = Date()) -> Duration? {
        BackoffPolicy.retryAfter(headers, now: now)
    }

    /// A protobuf JSON duration, e.g. `"23s"` or `"1.5s"`, read as ``retryAfter(_:now:)`` reads numbers.
    static func parseProtobufDuration(_ text: String) -> Duration? {
        guard text.hasSuffix("s"), let seconds = BackoffPolicy.decimal(String(text.dropLast())) else { return nil }
        return .seconds(saturating: seconds)
    }

    /// The most tokens one answer may report: far above any model's context, and low enough
    /// that the ledger's sums of them cannot overflow.
    static let maximumReportedTokens: Int64 = 1 << 32

    /// A token count from a provider's answer, clamped to 0...``maximumReportedTokens``; nil
    /// when it is not an integer.
    static func tokenCount(_ value: JSONValue?) -> Int? {
        value?.intValue.map { Int(min(max($0, 0), maximumReportedTokens)) }
    }

    /// A time in seconds from a provider's answer (a transcript's segment bounds): finite and
    /// within 0...``WireLimits/maximumSeconds``, else nil.
    static func seconds(_ value: JSONValue?) -> Double? {
        guard let seconds = value?.doubleValue, seconds.isFinite, (0...WireLimits.maximumSeconds).contains(seconds) else { return nil }
        return seconds
    }

    /// Reads what is left of a streamed error response and turns it into the provider's error.
    static func streamedError(status: Int, headers: [String: String], rest: inout AsyncThrowingStream<HTTPStreamEvent, any Error>.AsyncIterator) async -> ProviderError {
        var body = Data()
        while let event = try? await rest.next() {
            if case .body(let chunk) = event { body.append(chunk) }
        }
        return error(from: status, headers: headers, body: body)
    }
}

/// Status reasons and HTTP dates.
enum HTTPStatusText {
    static func reason(_ status: Int) -> String {
        switch status {
        case 400: "bad request"
        case 401: "unauthorized (check the API key)"
        case 403: "forbidden"
        case 404: "not found (check the base URL and model)"
        case 429: "too many requests"
        case 500: "internal server error"
        case 502: "bad gateway"
        case 503: "service unavailable"
        case 504: "gateway timeout"
        default: "HTTP status \(status)"
        }
    }

    /// An IMF-fixdate, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`.
    static func parseHTTPDate(_ text: String) -> Date? { BackoffPolicy.parseHTTPDate(text) }
}

/// Reads one provider's streaming format: each server-sent event gives zero or more pieces of
/// text, and the end of the stream the final piece (or a broken-stream error).
protocol StreamDecoder {
    mutating func pieces(from event: ServerSentEvent) throws(ProviderError) -> [StreamPiece]
    func end() throws(ProviderError) -> StreamPiece
}

extension ProviderHTTP {
    /// The pieces of a streamed answer: the HTTP head checked (an error status read whole into
    /// the provider's error), the body cut into server-sent events, each decoded; errors are
    /// ``ProviderError``s with `key` blanked out. Ending the iteration cancels the exchange.
    static func pieces(
        of exchange: AsyncThrowingStream<HTTPStreamEvent, any Error>, decoder: some StreamDecoder & Sendable, provider: String, key: APIKey?
    ) -> AsyncThrowingStream<StreamPiece, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do throws(ProviderError) {
                    var decoder = decoder
                    var iterator = exchange.makeAsyncIterator()
                    var parser = ServerSentEventParser()
                    do {
                        while let event = try await iterator.next() {
                            switch event {
                            case .head(let status, let headers):
                                guard (200..<300).contains(status) else { throw await streamedError(status: status, headers: headers, rest: &iterator) }
                            case .body(let chunk):
                                for event in parser.feed(chunk) { for piece in try decoder.pieces(from: event) { continuation.yield(piece) } }
                            }
                        }
                        for event in parser.finish() { for piece in try decoder.pieces(from: event) { continuation.yield(piece) } }
                    } catch let error as ProviderError {
                        throw error
                    } catch let error as HTTPClientError {
                        throw Task.isCancelled ? .transport(.cancelled) : .transport(error)
                    } catch {
                        throw .transport(.transport("\(error)"))
                    }
                    continuation.yield(try decoder.end())
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error.redacting(key))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
