import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// Any server speaking OpenAI's API: chat completions (`POST {base}/chat/completions`, JSON or
/// server-sent events ending in `data: [DONE]`) and Whisper-style transcription
/// (`POST {base}/audio/transcriptions`, multipart, `verbose_json`).
struct OpenAIProvider: ChatProvider, TranscriptionProvider {
    let configuration: RemoteProviderConfiguration
    let http: HTTPClient

    var name: String { configuration.name }
    var model: String { configuration.chatModel }
    var transcriptionModel: String { configuration.transcriptionModel ?? "whisper-1" }

    private func request(path: String, contentType: String, body: Data, timeout: Duration, stream: Bool = false) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("content-type", contentType), ("accept", stream ? "text/event-stream" : "application/json")]
        if let key = configuration.apiKey { headers.append(("authorization", "Bearer " + key.value)) }
        return HTTPRequest(method: "POST", url: configuration.baseURL + path, headers: headers, body: body,
                           timeout: timeout, connectTimeout: min(timeout, .seconds(10)), caFile: configuration.caFile)
    }

    private func body(_ prompt: Prompt, stream: Bool) -> Data {
        var messages: [JSONValue] = []
        if let system = prompt.system { messages.append(.object(["role": .string("system"), "content": .string(system)])) }
        for message in prompt.messages {
            messages.append(.object(["role": .string(message.role.rawValue), "content": .string(message.content)]))
        }
        var object: [String: JSONValue] = ["model": .string(model), "messages": .array(messages)]
        if let maxTokens = prompt.maxTokens { object["max_tokens"] = .int(Int64(maxTokens)) }
        if let temperature = prompt.temperature { object["temperature"] = .double(temperature) }
        if stream {
            object["stream"] = .bool(true)
            object["stream_options"] = .object(["include_usage": .bool(true)])
        }
        return JSONValue.object(object).jsonData
    }

    func complete(_ prompt: Prompt, timeout: Duration) async throws(ProviderError) -> Completion {
        let response: HTTPResponse
        do {
            response = try await http.send(request(path: "/chat/completions", contentType: "application/json", body: body(prompt, stream: false), timeout: timeout))
        } catch {
            throw .transport(error)
        }
        let json: JSONValue
        do { json = try ProviderHTTP.json(response, provider: name) } catch { throw error.redacting(configuration.apiKey) }
        guard let choice = json["choices"]?.arrayValue?.first, let text = choice["message"]?["content"]?.stringValue else {
            throw .malformed("\(name) answered without choices[0].message.content")
        }
        return Completion(text: text, finishReason: Self.finishReason(choice["finish_reason"]?.stringValue), usage: Self.usage(json["usage"]) ?? TokenUsage(estimated: true))
    }

    func stream(_ prompt: Prompt, timeout: Duration) -> AsyncThrowingStream<StreamPiece, any Error> {
        let exchange = http.stream(request(path: "/chat/completions", contentType: "application/json", body: body(prompt, stream: true), timeout: timeout, stream: true))
        return ProviderHTTP.pieces(of: exchange, decoder: EventDecoder(provider: name), provider: name, key: configuration.apiKey)
    }

    /// OpenAI's event stream: `data: {chunk}` events with `choices[0].delta.content`, a
    /// `finish_reason`, usage in a last chunk, then `data: [DONE]`.
    struct EventDecoder: StreamDecoder, Sendable {
        let provider: String
        var finish: FinishReason?
        var usage: TokenUsage?
        var done = false

        init(provider: String) { self.provider = provider }

        mutating func pieces(from event: ServerSentEvent) throws(ProviderError) -> [StreamPiece] {
            guard !done else { return [] }
            if event.data == "[DONE]" {
                done = true
                return []
            }
            let chunk: JSONValue
            do { chunk = try JSONValue.parse(event.data) } catch { throw .malformed("\(provider) streamed invalid JSON: \(event.data.prefix(200))") }
            if let message = chunk["error"]?["message"]?.stringValue { throw .http(status: 500, message: message, retryAfter: nil) }
            if let parsed = OpenAIProvider.usage(chunk["usage"]) { usage = parsed }
            guard let choice = chunk["choices"]?.arrayValue?.first else { return [] }
            if let reason = choice["finish_reason"]?.stringValue { finish = OpenAIProvider.finishReason(reason) }
            guard let delta = choice["delta"]?["content"]?.stringValue, !delta.isEmpty else { return [] }
            return [.delta(delta)]
        }

        func end() throws(ProviderError) -> StreamPiece {
            guard done || finish != nil else { throw .brokenStream("\(provider) closed the stream before [DONE]") }
            return .finished(finish ?? .stop, usage)
        }
    }

    static func finishReason(_ reason: String?) -> FinishReason {
        reason == "length" ? .length : .stop
    }

    static func usage(_ json: JSONValue?) -> TokenUsage? {
        guard let json, let prompt = json["prompt_tokens"]?.intValue, let completion = json["completion_tokens"]?.intValue else { return nil }
        return TokenUsage(promptTokens: Int(prompt), completionTokens: Int(completion))
    }

    // MARK: Transcription

    func transcribe(_ audio: Data, request transcription: TranscribeRequest, timeout: Duration) async throws(ProviderError) -> Transcript {
        var form = MultipartFormData()
        let fileName = transcription.fileName ?? "audio.m4a"
        form.add(name: "file", fileName: fileName, contentType: transcription.contentType ?? Self.mediaType(fileName), data: audio)
        form.add(name: "model", value: transcriptionModel)
        form.add(name: "response_format", value: "verbose_json")
        form.add(name: "timestamp_granularities[]", value: "segment")
        if let language = transcription.language { form.add(name: "language", value: language) }
        if let prompt = transcription.prompt { form.add(name: "prompt", value: prompt) }
        let response: HTTPResponse
        do {
            response = try await http.send(request(path: "/audio/transcriptions", contentType: form.contentType, body: form.encoded, timeout: timeout))
        } catch {
            throw .transport(error)
        }
        let json: JSONValue
        do { json = try ProviderHTTP.json(response, provider: name) } catch { throw error.redacting(configuration.apiKey) }
        guard let text = json["text"]?.stringValue else { throw .malformed("\(name) answered a transcription without text") }
        let segments = (json["segments"]?.arrayValue ?? []).compactMap { segment -> TranscriptSegment? in
            guard let start = segment["start"]?.doubleValue, let end = segment["end"]?.doubleValue, let text = segment["text"]?.stringValue else { return nil }
            // Whisper's mean log-probability of the tokens, discounted by its no-speech probability.
            let confidence = segment["avg_logprob"]?.doubleValue.map { exp($0) * (1 - (segment["no_speech_prob"]?.doubleValue ?? 0)) }
            return TranscriptSegment(start: start, end: end, text: text.trimmingCharacters(in: .whitespaces), confidence: confidence.map { min(1, max(0, $0)) })
        }
        let duration = json["duration"]?.doubleValue ?? segments.last?.end ?? 0
        return Transcript(text: text.trimmingCharacters(in: .whitespaces), language: json["language"]?.stringValue, duration: duration, segments: segments)
    }

    static func mediaType(_ fileName: String) -> String {
        switch fileName.split(separator: ".").last?.lowercased() {
        case "mp3", "mpga", "mpeg": "audio/mpeg"
        case "wav": "audio/wav"
        case "webm": "audio/webm"
        case "ogg", "oga": "audio/ogg"
        case "flac": "audio/flac"
        case "mp4": "audio/mp4"
        default: "audio/m4a"
        }
    }
}
