import Bus
import Contracts
import Foundation
import HTTPClient
import Synchronization
import Wire

/// The chat answers in progress, by request id, so `chat.cancel` can stop one.
final class ChatRegistry: Sendable {
    /// One answer in progress.
    final class Run: Sendable {
        let user: String
        private let state = Mutex<(cancelRequested: Bool, cancel: (@Sendable () -> Void)?)>((false, nil))

        init(user: String) { self.user = user }

        /// Whether `chat.cancel` asked to stop it.
        var cancelRequested: Bool { state.withLock { $0.cancelRequested } }

        /// Sets what stops the work; if a cancel came first, stops it at once.
        func attach(_ cancel: @escaping @Sendable () -> Void) {
            let already = state.withLock { state -> Bool in
                state.cancel = cancel
                return state.cancelRequested
            }
            if already { cancel() }
        }

        func requestCancel() {
            let cancel = state.withLock { state -> (@Sendable () -> Void)? in
                state.cancelRequested = true
                return state.cancel
            }
            cancel?()
        }
    }

    /// By request id in lower case: ids that differ only in case share a topic.
    private let runs = Mutex<[String: Run]>([:])

    /// Registers an answer for `requestId`.
    /// - Throws: `ALREADY_EXISTS` while another answer with that id is in progress.
    func begin(_ requestId: String, user: String) throws(BusError) -> Run {
        let run = Run(user: user)
        let added = runs.withLock { runs -> Bool in
            guard runs[requestId.lowercased()] == nil else { return false }
            runs[requestId.lowercased()] = run
            return true
        }
        guard added else { throw .alreadyExists("a chat answer with requestId \(requestId) is already in progress") }
        return run
    }

    func end(_ requestId: String) {
        _ = runs.withLock { $0.removeValue(forKey: requestId.lowercased()) }
    }

    /// Stops `user`'s answer `requestId`; false when there is none (another user's counts as none).
    func cancel(_ requestId: String, user: String) -> Bool {
        guard let run = runs.withLock({ $0[requestId.lowercased()] }), run.user == user else { return false }
        run.requestCancel()
        return true
    }
}

/// Where a chat answer goes as it is made: the text so far, and — when the caller asked for a
/// stream — ordered events on `ai.stream.<requestId>`.
final class ChatSink: Sendable {
    private struct State {
        var index = 0
        var text = ""
    }

    let requestId: String
    private let topic: Topic<ChatStreamEvent>?
    private let bus: Bus
    private let user: String
    private let state = Mutex(State())

    init(requestId: String, publish: Bool, bus: Bus, user: String) {
        self.requestId = requestId
        topic = publish ? AIGateway.chatStream(requestId: requestId) : nil
        self.bus = bus
        self.user = user
    }

    /// The answer's text so far.
    var text: String { state.withLock { $0.text } }

    func token(_ delta: String) {
        emit { state in
            state.text += delta
            return ChatStreamEvent(requestId: requestId, index: state.index, kind: .token, delta: delta)
        }
    }

    /// The answer starts again (a provider failed mid-answer).
    func reset() {
        emit { state in
            state.text = ""
            return ChatStreamEvent(requestId: requestId, index: state.index, kind: .reset)
        }
    }

    func final(_ response: ChatResponse) {
        emit { state in
            ChatStreamEvent(requestId: requestId, index: state.index, kind: .final, text: response.text,
                            finishReason: response.finishReason, generation: response.generation)
        }
    }

    func error(_ error: BusError) {
        emit { state in ChatStreamEvent(requestId: requestId, index: state.index, kind: .error, error: error.description) }
    }

    /// Builds and publishes under the lock, so events leave in index order.
    private func emit(_ make: (inout State) -> ChatStreamEvent) {
        state.withLock { state in
            let event = make(&state)
            state.index += 1
            if let topic { try? bus.publish(topic, event, user: user) }
        }
    }
}

/// A finished (or stopped) chat answer: what is cached.
struct ChatOutcome: Codable, Sendable {
    var text: String
    var finishReason: FinishReason
}

extension Dispatcher {
    /// Makes a chat answer along the chat route, token by token into `sink`. A provider failing
    /// mid-answer resets the sink before the retry or the next provider. When `run` is
    /// cancelled through `chat.cancel`, returns the text so far with finish reason `cancelled`.
    func converse(
        chain: [String], scope: CallScope, cacheInput: String, prompt: Prompt, local: @Sendable () -> String,
        sink: ChatSink, run: ChatRegistry.Run
    ) async throws(BusError) -> (ChatOutcome, GenerationInfo) {
        var failures: [ProviderFailure] = []
        func stopped(_ provider: String, _ model: String) -> (ChatOutcome, GenerationInfo) {
            (ChatOutcome(text: sink.text, finishReason: .cancelled), GenerationInfo(provider: provider, model: model, fallbacks: failures))
        }
        for name in chain {
            if name == "local" {
                let model = "local-chat"
                let text = local()
                for piece in Self.words(text) {
                    if run.cancelRequested { return stopped(name, model) }
                    sink.token(piece)
                }
                let usage = Self.estimate(cacheInput, Data(text.utf8))
                record(scope: scope, provider: name, model: model, usage: usage)
                return (ChatOutcome(text: text, finishReason: .stop), GenerationInfo(provider: name, model: model, usage: usage, fallbacks: failures))
            }
            guard let provider = chatProviders[name] else { continue }
            let key = CacheKey(provider: name, model: provider.model, prompt: cacheInput)
            if let cached = cache.get(key), let outcome = try? WireCoding.decode(ChatOutcome.self, from: cached) {
                sink.token(outcome.text)
                ledger.record(user: scope.user, provider: name, model: provider.model, .init(requests: 1, cacheHits: 1))
                return (outcome, GenerationInfo(provider: name, model: provider.model, cached: true, fallbacks: failures))
            }
            do {
                let (reason, usage) = try await attempt(name, bucket: buckets[name], scope: scope) { timeout throws(ProviderError) in
                    try await streamOnce(provider, prompt: prompt, timeout: timeout, sink: sink)
                }
                let outcome = ChatOutcome(text: sink.text, finishReason: reason)
                if let data = try? WireCoding.encode(outcome) { cache.put(key, data, persist: true) }
                let counted = usage ?? Self.estimate(cacheInput, Data(outcome.text.utf8))
                record(scope: scope, provider: name, model: provider.model, usage: counted)
                return (outcome, GenerationInfo(provider: name, model: provider.model, usage: counted, fallbacks: failures))
            } catch {
                if run.cancelRequested { return stopped(name, provider.model) }
                failures.append(failure(name, error, scope: scope, model: provider.model))
                if Task.isCancelled { throw .cancelled("the request was cancelled") }
            }
        }
        throw Self.exhausted(.chat, failures)
    }

    /// One streamed answer from `provider`; a stream that breaks after some text resets the sink
    /// so the retry starts clean.
    private func streamOnce(_ provider: any ChatProvider, prompt: Prompt, timeout: Duration, sink: ChatSink) async throws(ProviderError) -> (FinishReason, TokenUsage?) {
        var finish: (FinishReason, TokenUsage?)?
        do {
            for try await piece in provider.stream(prompt, timeout: timeout) {
                switch piece {
                case .delta(let text): sink.token(text)
                case .finished(let reason, let usage): finish = (reason, usage)
                }
            }
        } catch {
            if !Task.isCancelled, !sink.text.isEmpty { sink.reset() }
            throw (error as? ProviderError) ?? .transport(.transport("\(error)"))
        }
        guard let finish else {
            // The iteration ends without an error only when this task was cancelled.
            throw .transport(.cancelled)
        }
        return finish
    }

    /// Text cut into word-sized pieces (each word with the spaces after it) for streaming.
    static func words(_ text: String) -> [String] {
        var pieces: [String] = []
        var current = ""
        var inSpace = false
        for character in text {
            if character.isWhitespace {
                inSpace = true
            } else if inSpace {
                pieces.append(current)
                current = ""
                inSpace = false
            }
            current.append(character)
        }
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }
}
