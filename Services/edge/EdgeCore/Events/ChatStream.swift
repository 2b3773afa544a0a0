import Bus
import Contracts
import Foundation
import Hummingbird
import Logging
import NIOCore
import Wire

/// A `chat` call with `"stream": true`, answered as `text/event-stream` the way OpenAI's API
/// streams: one `data:` line per event of `ai.stream.<requestId>` (tokens, resets, then the
/// final one or an error), then `data: [DONE]`. A client that goes away cancels the answer
/// with `chat.cancel`.
///
/// The events come through the ``EventHub``'s subscription, which exists before the call is
/// made, so none is lost to a subscription still on its way to the broker.
struct ChatStream {
    let bus: Bus
    let listener: HubListener
    let user: String
    let options: CallOptions
    let payload: Data
    let requestId: String
    let logger: Logger

    /// Whether `method` can answer with a stream: `chat`.
    static func streams(_ method: any MethodDescriptor) -> Bool {
        method.service == AIGateway.chat.service && method.name == AIGateway.chat.name
    }

    /// Whether a call of `method` with `payload` asks for a streamed answer.
    static func wanted(_ method: any MethodDescriptor, _ payload: Data) -> Bool {
        streams(method) && (try? JSONValue.parse(payload))?.objectValue?["stream"] == .bool(true)
    }

    /// The payload with a `requestId` of the edge's own: an unguessable one, so no other
    /// request can name (and cancel) this answer's stream.
    static func prepare(_ payload: Data) throws(BusError) -> (payload: Data, requestId: String) {
        guard case .object(var object)? = try? JSONValue.parse(payload) else {
            throw .invalidArgument("the chat request must be a JSON object")
        }
        let requestId = "edge-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        object["requestId"] = .string(requestId)
        return (JSONValue.object(object).jsonData, requestId)
    }

    /// How long the stream's last events may trail the call's reply.
    static let trailingWait: Duration = .seconds(2)

    func response() -> Response {
        Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: ResponseBody { writer in
            try await run(&writer)
        })
    }

    private func run(_ writer: inout any ResponseBodyWriter) async throws {
        let continuation = listener.continuation
        let topic = AIGateway.chatStream(requestId: requestId).name
        let call = Task {
            let result: Result<Data, BusError>
            do throws(BusError) {
                result = .success(try await bus.callRaw(service: AIGateway.chat.service, method: AIGateway.chat.name, payload: payload, options: options).payload)
            } catch {
                result = .failure(error)
            }
            continuation.yield(.replied(result))
            try? await Task.sleep(for: Self.trailingWait)
            continuation.finish()
        }
        var ended = false
        var reply: Data?
        do {
            for await message in listener.messages {
                switch message {
                case .event(let event) where event.topic == topic:
                    try await writer.write(Self.data(event.payload))
                    let kind = (try? JSONValue.parse(event.payload))?.objectValue?["kind"]?.stringValue
                    ended = kind == ChatStreamEventKind.final.rawValue || kind == ChatStreamEventKind.error.rawValue
                case .replied(.failure(let error)) where !ended:
                    // The answer failed before any final event: say so in the stream's own terms.
                    let event: JSONValue = .object([
                        "requestId": .string(requestId), "kind": .string(ChatStreamEventKind.error.rawValue), "error": .string(error.description),
                    ])
                    try await writer.write(Self.data(event.jsonData))
                    ended = true
                case .replied(.success(let payload)):
                    reply = payload
                case .keepAlive:
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                default:
                    break
                }
                if ended { break }
            }
            if !ended, let reply, case .object(let response)? = try? JSONValue.parse(reply) {
                // The final event did not come in time (the subscription lost it): the reply has the same.
                var final = response.filter { ["requestId", "text", "finishReason", "generation"].contains($0.key) }
                final["kind"] = .string(ChatStreamEventKind.final.rawValue)
                try await writer.write(Self.data(JSONValue.object(final).jsonData))
            }
            call.cancel()
            try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
            try await writer.finish(nil)
        } catch {
            // The client went away mid-answer: stop the generation it no longer reads.
            call.cancel()
            continuation.finish()
            let cancel = CallOptions(user: user, timeout: .seconds(5))
            _ = try? await bus.call(AIGateway.cancelChat, ChatCancelRequest(requestId: requestId), options: cancel)
            logger.info("chat stream closed by the client; answer cancelled", metadata: ["requestId": "\(requestId)"])
            throw error
        }
    }

    private static func data(_ json: Data) -> ByteBuffer {
        var buffer = ByteBuffer(string: "data: ")
        buffer.writeBytes(json.map { $0 == 10 || $0 == 13 ? 32 : $0 })
        buffer.writeString("\n\n")
        return buffer
    }
}
