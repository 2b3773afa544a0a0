import ArgumentParser
import Bus
import Foundation
import Wire

extension BusCtl {
    struct Call: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Call a method and print its response JSON.",
            discussion: """
            The request is JSON text, '-' to read it from standard input, or omitted for {}.
            On failure the status code name and message go to standard error and the exit status
            is the code's number.

            Examples:
              busctl call store materials.get '{"id":"m1"}' --user u1
              busctl call ai-gateway summarize - --user u1 < request.json
              busctl call ingest ingest.submit '{"fileName":"notes.md"}' --user u1 --attach notes.md
            """)

        @Argument(help: "The service, e.g. store.") var service: String
        @Argument(help: "The method, e.g. materials.get.") var method: String
        @Argument(help: "Request JSON, '-' for standard input; default {}.") var json: String?
        @Option(help: "The end user the call acts for.") var user: String?
        @Option(help: "Seconds to wait for the reply.") var timeout: Double = 30
        @Option(help: "Idempotency key.") var idem: String?
        @Option(help: "Metadata as key=value; repeatable.") var meta: [String] = []
        @Option(help: "Send this file as the attachment frame.") var attach: String?
        @Option(help: "Write the reply's attachment to this file.") var saveAttachment: String?
        @Flag(help: "Print compact JSON on one line.") var compact = false
        @Flag(name: .customLong("json"), help: "Report a failure as one JSON object on standard error (the response is JSON anyway).")
        var jsonErrors = false
        @OptionGroup var endpoints: EndpointOptions

        func validate() throws {
            guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
            for pair in meta where !pair.contains("=") { throw ValidationError("--meta takes key=value, got '\(pair)'") }
        }

        func run() async throws {
            let payload = try requestPayload()
            var options = CallOptions(user: user, timeout: .milliseconds(Int64(timeout * 1000)), idempotencyKey: idem)
            for pair in meta {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                options.meta[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            if let attach {
                guard let data = FileManager.default.contents(atPath: attach) else { throw ValidationError("cannot read --attach file \(attach)") }
                options.attachment = data
            }
            let reply = try await withBus(endpoints, json: jsonErrors) { bus in
                try await bus.callRaw(service: service, method: method, payload: payload, options: options)
            }
            if reply.payload.isEmpty {
                Output.line("{}")
            } else if let value = try? JSONValue.parse(reply.payload) {
                Output.line(compact ? value.jsonText : value.prettyJSONText)
            } else {
                Output.line(String(decoding: reply.payload, as: UTF8.self))
            }
            if let attachment = reply.attachment {
                if let saveAttachment {
                    try attachment.write(to: URL(fileURLWithPath: saveAttachment))
                    Output.warning("attachment: \(attachment.count) bytes written to \(saveAttachment)")
                } else {
                    Output.warning("attachment: \(attachment.count) bytes (use --save-attachment FILE to keep it)")
                }
            }
        }

        private func requestPayload() throws -> Data {
            let text: String
            switch json {
            case nil: return Data("{}".utf8)
            case "-": text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            case let given?: text = given
            }
            do {
                return try JSONValue.parse(text).jsonData
            } catch {
                throw ValidationError("the request is not valid JSON: \(error)")
            }
        }
    }
}
