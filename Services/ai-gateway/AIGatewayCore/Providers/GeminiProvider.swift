import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// Google's Gemini API: `POST {base}/models/{model}:generateContent` and
/// `:streamGenerateContent?alt=sse` (events of whole `GenerateContentResponse` objects, often
/// CRLF-separated, no end marker: the last carries `finishReason`). Roles are `user` and `model`;
/// the system instruction goes apart. The key travels in the `x-goog-api-key` header, never in
/// the URL, so it cannot end up in a log line.
struct GeminiProvider: ChatProvider {
    let configuration: RemoteProviderConfiguration
    let http: HTTPClient

    var name: String { configuration.name }
    var model: String { configuration.chatModel }

    private func request(_ prompt: Prompt, stream: Bool, timeout: Duration) -> HTTPRequest {
        let path = stream ? ":streamGenerateContent?alt=sse" : ":generateContent"
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let key = configuration.apiKey { headers.append(("x-goog-api-key", key.value)) }
        return HTTPRequest(method: "POST", url: configuration.baseURL + "/models/" + model + path, headers: headers,
                           body: body(prompt), timeout: timeout, connectTimeout: min(timeout, .seconds(10)), caFile: configuration.caFile)
    }

    /// Gemini wants turns to alternate user/model starting with the user, so consecutive turns
    /// of one role are joined and a leading model turn is left out.
    private func body(_ prompt: Prompt) -> Data {
        var contents: [(role: String, text: String)] = []
        for message in prompt.messages.drop(while: { $0.role == .assistant }) {
            let role = message.role == .assistant ? "model" : "user"
            if let last = contents.last, last.role == role {
                contents[contents.count - 1].text += "\n\n" + message.content
            } else {
                contents.append((role, message.content))
            }
        }
        var object: [String: JSONValue] = [
            "contents": .array(contents.map { .object(["role": .string($0.role), "parts": Self.textParts($0.text)]) }),
        ]
        if let system = prompt.system { object["systemInstruction"] = .object(["parts": Self.textParts(system)]) }
        var generation: [String: JSONValue] = [:]
        if let maxTokens = prompt.maxTokens { generation["maxOutputTokens"] = .int(Int64(maxTokens)) }
        if let temperature = prompt.temperature { generation["temperature"] = .double(temperature) }
        if prompt.json { generation["responseMimeType"] = .string("application/json") }
        if !generation.isEmpty { object["generationConfig"] = .object(generation) }
        return JSONValue.object(object).jsonData
    }

    private static func textParts(_ text: String) -> JSONValue {
        .array([.object(["text": .string(text)])])
    }

    func complete(_ prompt: Prompt, timeout: Duration) async throws(ProviderError) -> Completion {
        let response: HTTPResponse
        do {
            response = try await http.send(request(prompt, stream: false, timeout: timeout))
        } catch {
            throw .transport(error)
        }
        let json: JSONValue
        do { json = try ProviderHTTP.json(response, provider: name) } catch { throw error.redacting(configuration.apiKey) }
        let piece = try Self.read(json, provider: name)
        guard let finish = piece.finish else { throw .malformed("\(name) answered without a finishReason") }
        return Completion(text: piece.text, finishReason: finish, usage: piece.usage ?? TokenUsage(estimated: true))
    }

    /// The text, finish reason and usage of one `GenerateContentResponse`.
    fileprivate static func read(_ json: JSONValue, provider: String) throws(ProviderError) -> (text: String, finish: FinishReason?, usage: TokenUsage?) {
        if let blocked = json["promptFeedback"]?["blockReason"]?.stringValue {
            throw .unusable("\(provider) blocked the prompt (\(blocked))")
        }
        guard let candidate = json["candidates"]?.arrayValue?.first else {
            throw .malformed("\(provider) answered without candidates")
        }
        let text = (candidate["content"]?["parts"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }.joined()
        var finish: FinishReason?
        switch candidate["finishReason"]?.stringValue {
        case nil: finish = nil
        case "STOP": finish = .stop
        case "MAX_TOKENS": finish = .length
        case let reason?: throw .unusable("\(provider) stopped the answer (\(reason))")
        }
        var usage: TokenUsage?
        if let metadata = json["usageMetadata"], let prompt = ProviderHTTP.tokenCount(metadata["promptTokenCount"]) {
            usage = TokenUsage(promptTokens: prompt, completionTokens: ProviderHTTP.tokenCount(metadata["candidatesTokenCount"]) ?? 0)
        }
        return (text, finish, usage)
    }

    func stream(_ prompt: Prompt, timeout: Duration) -> AsyncThrowingStream<StreamPiece, any Error> {
        let exchange = http.stream(request(prompt, stream: true, timeout: timeout))
        return ProviderHTTP.pieces(of: exchange, decoder: EventDecoder(provider: name), provider: name, key: configuration.apiKey)
    }

    /// Gemini's event stream: each event a whole `GenerateContentResponse`, the last one with
    /// `finishReason` and usage; no end marker.
    struct EventDecoder: StreamDecoder, Sendable {
        let provider: String
        var finish: FinishReason?
        var usage: TokenUsage?

        init(provider: String) { self.provider = provider }

        mutating func pieces(from event: ServerSentEvent) throws(ProviderError) -> [StreamPiece] {
            let json: JSONValue
            do { json = try JSONValue.parse(event.data) } catch { throw .malformed("\(provider) streamed invalid JSON: \(event.data.prefix(200))") }
            if let message = json["error"]?["message"]?.stringValue {
                throw .http(status: json["error"]?["code"]?.intValue.map(Int.init) ?? 500, message: message, retryAfter: nil)
            }
            let piece = try GeminiProvider.read(json, provider: provider)
            if let reason = piece.finish { finish = reason }
            if let parsed = piece.usage { usage = parsed }
            return piece.text.isEmpty ? [] : [.delta(piece.text)]
        }

        func end() throws(ProviderError) -> StreamPiece {
            guard let finish else { throw .brokenStream("\(provider) closed the stream before a finishReason") }
            return .finished(finish, usage)
        }
    }
}
