import Bus
import Contracts
import Foundation
import HTTPClient
import Wire

/// Any server speaking OpenAI's API: chat completions (`POST {base}/chat/completions`, JSON or
/// server-sent events ending in `data: [DONE]`) and Whisper-style transcription
/// (`POST {base}/audio/transcriptions`, multipart, `verbose_json`) and speech
/// (`POST {base}/audio/speech`, JSON in, raw PCM out).
struct OpenAIProvider: ChatProvider, TranscriptionProvider, SpeechProvider {
    let configuration: RemoteProviderConfiguration
    let http: HTTPClient

    var name: String { configuration.name }
    var model: String { configuration.chatModel }
    var transcriptionModel: String { configuration.transcriptionModel ?? "whisper-1" }
    var speechModel: String { configuration.speechModel ?? "gpt-4o-mini-tts" }
    /// OpenAI's voices, and the configured one (a compatible server may have others).
    var speechVoices: [String] { Self.voices + [configuration.speechVoice].compactMap { $0 }.filter { !Self.voices.contains($0) } }

    private func request(path: String, contentType: String, body: Data, timeout: Duration, stream: Bool = false, accept: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [
            ("content-type", contentType), ("accept", accept ?? (stream ? "text/event-stream" : "application/json")),
        ]
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
        guard let json, let prompt = ProviderHTTP.tokenCount(json["prompt_tokens"]), let completion = ProviderHTTP.tokenCount(json["completion_tokens"]) else { return nil }
        return TokenUsage(promptTokens: prompt, completionTokens: completion)
    }

    // MARK: Transcription

    func transcribe(_ audio: Data, request transcription: TranscribeRequest, timeout: Duration) async throws(ProviderError) -> Transcript {
        var form = MultipartFormData()
        let fileName = transcription.fileName ?? "audio.m4a"
        let contentType = transcription.contentType.flatMap(Self.headerValue) ?? Self.mediaType(fileName)
        form.add(name: "file", fileName: Self.quotableFileName(fileName), contentType: contentType, data: audio)
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
            guard let start = ProviderHTTP.seconds(segment["start"]), let end = ProviderHTTP.seconds(segment["end"]), let text = segment["text"]?.stringValue else { return nil }
            // Whisper's mean log-probability of the tokens, discounted by its no-speech probability.
            let confidence = segment["avg_logprob"]?.doubleValue.map { exp($0) * (1 - (segment["no_speech_prob"]?.doubleValue ?? 0)) }
            return TranscriptSegment(start: start, end: end, text: text.trimmingCharacters(in: .whitespaces), confidence: confidence.map { min(1, max(0, $0)) })
        }
        let duration = ProviderHTTP.seconds(json["duration"]) ?? segments.last?.end ?? 0
        return Transcript(text: text.trimmingCharacters(in: .whitespaces), language: json["language"]?.stringValue, duration: duration, segments: segments)
    }

    // MARK: Speech

    /// OpenAI's voices (it has no endpoint that lists them).
    static let voices = ["alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse"]
    /// The longest `input` `/audio/speech` takes.
    static let speechCharacters = 4096
    /// `response_format: pcm` is 24 kHz, 16-bit signed little-endian, mono, without a header.
    static let speechSampleRate = 24_000

    /// Speech from `/audio/speech` as raw PCM, so that its length is known and it is encoded
    /// (WAV or Opus) the same way as local speech. The voice is the caller's if it is one of
    /// ``speechVoices``, else the configured one; `pitch` has no equivalent and is not sent.
    func speak(_ input: SpeechInput, timeout: Duration) async throws(ProviderError) -> SpeechAudio {
        guard input.text.count <= Self.speechCharacters else {
            throw .unusable("\(name) speaks at most \(Self.speechCharacters) characters at once, the text has \(input.text.count)")
        }
        let voice = input.voice.flatMap { speechVoices.contains($0) ? $0 : nil } ?? configuration.speechVoice ?? "alloy"
        var body: [String: JSONValue] = [
            "model": .string(speechModel), "input": .string(input.text), "voice": .string(voice), "response_format": .string("pcm"),
        ]
        if input.rate != 1 { body["speed"] = .double(input.rate) }
        var request = request(path: "/audio/speech", contentType: "application/json", body: JSONValue.object(body).jsonData, timeout: timeout, accept: "audio/pcm")
        // The longest speech a reply may carry, and no more from a provider that sends more.
        request.maximumBodyBytes = Int(AIGatewayLimits.speechSeconds) * Self.speechSampleRate * 2 + 1
        let response: HTTPResponse
        do { response = try await http.send(request) } catch { throw .transport(error) }
        guard (200..<300).contains(response.status) else {
            throw ProviderHTTP.error(from: response.status, headers: response.headers, body: response.body).redacting(configuration.apiKey)
        }
        if response.headers["content-type"]?.hasPrefix("application/json") == true {
            throw .malformed("\(name) answered speech with JSON instead of audio: \(String(decoding: response.body.prefix(200), as: UTF8.self))")
        }
        guard !response.bodyTruncated else { throw .malformed("\(name) answered more than \(Int(AIGatewayLimits.speechSeconds)) s of speech") }
        guard response.body.count >= 2 else { throw .malformed("\(name) answered speech without audio") }
        return SpeechAudio(samples: WAV.samples(fromPCM: response.body), sampleRate: Self.speechSampleRate, voice: voice)
    }

    /// The caller's file name as it may stand between the quotes of the part's
    /// `content-disposition`: `"`, CR, LF (and the other control characters) percent-encoded, as
    /// browsers encode file names in forms (WHATWG HTML, multipart/form-data). Raw, they would
    /// end the quoted name or the header and let the caller write headers or parts of their own.
    static func quotableFileName(_ fileName: String) -> String {
        var result = ""
        for scalar in fileName.unicodeScalars {
            if scalar == "\"" || scalar.value < 0x20 || scalar.value == 0x7F {
                result += "%" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16, uppercase: true)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `value` if it can be a header value as it is (printable ASCII), else nil.
    static func headerValue(_ value: String) -> String? {
        value.utf8.allSatisfy { (0x20...0x7E).contains($0) } ? value : nil
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
