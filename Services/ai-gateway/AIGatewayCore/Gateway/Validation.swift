import Bus
import Contracts
import Foundation
import Wire

/// Request checks that name the field and the limit (`INVALID_ARGUMENT`).
enum Validate {
    /// A text of 1...`AIGatewayLimits.textBytes` UTF-8 bytes with at least one visible character.
    static func text(_ text: String, field: String) throws(BusError) {
        guard text.utf8.count <= AIGatewayLimits.textBytes else {
            throw .invalidArgument("\(field) is \(text.utf8.count) bytes; the limit is \(AIGatewayLimits.textBytes) bytes (2 MiB)")
        }
        guard text.contains(where: { !$0.isWhitespace }) else { throw .invalidArgument("\(field) must not be empty") }
    }

    /// `value` if it is in `range`, `defaultValue` when absent.
    static func int(_ value: Int?, default defaultValue: Int, _ range: ClosedRange<Int>, field: String) throws(BusError) -> Int {
        guard let value else { return defaultValue }
        guard range.contains(value) else { throw .invalidArgument("\(field) must be in \(range.lowerBound)...\(range.upperBound), got \(value)") }
        return value
    }

    static func fraction(_ value: Double?, field: String) throws(BusError) {
        guard let value else { return }
        guard value.isFinite, (0...1).contains(value) else { throw .invalidArgument("\(field) must be in 0...1, got \(value)") }
    }

    /// A chat request id: 1...64 of `A-Z a-z 0-9 _ -` (it becomes part of a topic name).
    static func requestId(_ id: String) throws(BusError) {
        guard (1...AIGatewayLimits.requestIdLength).contains(id.utf8.count),
              id.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { throw .invalidArgument("requestId must be 1...64 characters of A-Z a-z 0-9 _ -, got '\(id.prefix(80))'") }
    }

    static func chunks(_ chunks: [TextChunk], field: String = "chunks") throws(BusError) {
        guard (1...AIGatewayLimits.chunks).contains(chunks.count) else {
            throw .invalidArgument("\(field) must hold 1...\(AIGatewayLimits.chunks) chunks, got \(chunks.count)")
        }
        var ids = Set<String>()
        var total = 0
        for (index, chunk) in chunks.enumerated() {
            guard !chunk.id.isEmpty else { throw .invalidArgument("\(field)[\(index)].id must not be empty") }
            guard ids.insert(chunk.id).inserted else { throw .invalidArgument("\(field)[\(index)].id '\(chunk.id)' is not unique") }
            total += chunk.text.utf8.count + (chunk.heading?.utf8.count ?? 0)
        }
        guard total <= AIGatewayLimits.textBytes else {
            throw .invalidArgument("\(field) hold \(total) bytes of text; the limit is \(AIGatewayLimits.textBytes) bytes (2 MiB) in all")
        }
    }

    static func chat(_ request: ChatRequest) throws(BusError) {
        guard (1...AIGatewayLimits.chatMessages).contains(request.messages.count) else {
            throw .invalidArgument("messages must hold 1...\(AIGatewayLimits.chatMessages) messages, got \(request.messages.count)")
        }
        for (index, message) in request.messages.enumerated() where message.content.utf8.count > AIGatewayLimits.chatBytes {
            throw .invalidArgument("messages[\(index)].content is \(message.content.utf8.count) bytes; the limit is \(AIGatewayLimits.chatBytes) bytes (256 KiB)")
        }
        guard request.messages.contains(where: { $0.role == .user }) else { throw .invalidArgument("messages must include a user message") }
        if let context = request.context {
            let size = (context.chunks ?? []).reduce(0) { $0 + $1.text.utf8.count } + (context.flashcards ?? []).reduce(0) { $0 + $1.front.utf8.count + $1.back.utf8.count }
            guard size <= AIGatewayLimits.chatBytes else {
                throw .invalidArgument("context holds \(size) bytes; the limit is \(AIGatewayLimits.chatBytes) bytes (256 KiB)")
            }
        }
        _ = try int(request.maxTokens, default: 0, 1...8192, field: "maxTokens")
        if let temperature = request.temperature, !(0...2).contains(temperature) {
            throw .invalidArgument("temperature must be in 0...2, got \(temperature)")
        }
        if let id = request.requestId { try requestId(id) } else if request.stream == true {
            throw .invalidArgument("requestId is required with stream: true (the answer is published on ai.stream.<requestId>)")
        }
        try storeReferences(request)
    }

    /// `conversationId`, `materialId` and `setId`: store ids; an inline context only without
    /// the latter two; with a conversation, messages store accepts (checked before answering, so
    /// a question store would refuse does not cost an answer that cannot be saved).
    private static func storeReferences(_ request: ChatRequest) throws(BusError) {
        for (field, value) in [("conversationId", request.conversationId), ("materialId", request.materialId), ("setId", request.setId)] {
            guard let value else { continue }
            guard (1...StoreLimits.idLength).contains(value.utf8.count), value.utf8.allSatisfy(storeIdBytes.contains) else {
                throw .invalidArgument("\(field) must be a store id: 1...\(StoreLimits.idLength) letters, digits, '-', '_', '.' or ':'")
            }
        }
        if request.context != nil, request.materialId != nil || request.setId != nil {
            throw .invalidArgument("context cannot be given with materialId or setId: give the study material inline or by id, not both")
        }
        guard request.conversationId != nil else { return }
        for (index, message) in request.messages.enumerated() where message.role != .system {
            guard message.content.contains(where: { !$0.isWhitespace }) else {
                throw .invalidArgument("messages[\(index)].content must not be empty: it is stored in the conversation")
            }
            guard message.content.unicodeScalars.count <= StoreLimits.textLength else {
                throw .invalidArgument("messages[\(index)].content has \(message.content.unicodeScalars.count) characters; a stored message takes at most \(StoreLimits.textLength)")
            }
        }
    }

    private static let storeIdBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".utf8)
}

/// Canonical text of a task's input, the prompt part of its cache key: the task and the
/// request as JSON with sorted keys (callers clear the `provider` field first: the key names
/// the provider anyway).
enum CacheInput {
    static func of<Input: Encodable>(_ task: GatewayTask, _ input: Input) -> String {
        let encoder = WireCoding.encoder()
        encoder.outputFormatting.insert(.sortedKeys)
        let json = (try? encoder.encode(input)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return task.rawValue + "\n" + json
    }
}
