import Wire

/// The OpenAPI 3.1 document of the edge, made from the same method descriptors and JSON shapes
/// as `_describe` (``MethodDescriptor/requestShape``), so it cannot drift from the contracts:
/// every app-facing method as `POST /v1/SERVICE/METHOD`, the error body, the bearer scheme,
/// `/v1/events` and the health endpoints.
enum OpenAPI {
    static func document(_ routes: RouteTable) -> JSONValue {
        var paths: [String: JSONValue] = [:]
        for method in routes.all {
            var responses: [String: JSONValue] = [
                "200": .object(["description": .string("The method's response."), "content": .object(responseContent(method))]),
                "default": errorResponse,
            ]
            responses["401"] = .object(["description": .string("No valid bearer token."), "content": errorContent])
            responses["429"] = .object(["description": .string("Too many requests for this user; see Retry-After."), "content": errorContent])
            paths["/v1/\(method.service)/\(method.name)"] = .object([
                "post": .object([
                    "operationId": .string(operationID(method)),
                    "summary": .string(method.summary),
                    "tags": .array([.string(method.service)]),
                    "requestBody": .object([
                        "required": .bool(false),
                        "content": .object(["application/json": .object(["schema": schema(method.requestShape)])]),
                    ]),
                    "parameters": .array(callHeaders),
                    "responses": .object(responses),
                ]),
            ])
        }
        paths["/v1/events"] = .object([
            "get": .object([
                "operationId": .string("events"),
                "summary": .string("The caller's own events as Server-Sent Events; Last-Event-ID resumes after a reconnect."),
                "tags": .array([.string("events")]),
                "parameters": .array([header("Last-Event-ID", "The id of the last event received.")]),
                "responses": .object([
                    "200": .object(["description": .string("An event stream."), "content": .object(["text/event-stream": serverSentEvents])]),
                    "default": errorResponse,
                ]),
            ]),
        ])
        for (path, summary) in [("/healthz", "Whether the edge process is up."), ("/readyz", "Whether the broker and every routed service answer.")] {
            paths[path] = .object([
                "get": .object([
                    "operationId": .string(String(path.dropFirst())),
                    "summary": .string(summary),
                    "tags": .array([.string("health")]),
                    "security": .array([]),
                    "responses": .object([
                        "200": .object(["description": .string("Up."), "content": .object(["application/json": .object(["schema": .object(["type": .string("object")])])])]),
                        "503": .object(["description": .string("Not ready."), "content": .object(["application/json": .object(["schema": .object(["type": .string("object")])])])]),
                    ]),
                ]),
            ])
        }
        return .object([
            "openapi": .string("3.1.0"),
            "info": .object([
                "title": .string("StudyBus"),
                "version": .string("1"),
                "description": .string("Every app-facing method of the StudyBus services. A call acts for the user of its bearer token. Errors carry the gRPC status code and name."),
            ]),
            "paths": .object(paths),
            "security": .array([.object(["bearer": .array([])])]),
            "components": .object([
                "securitySchemes": .object(["bearer": .object(["type": .string("http"), "scheme": .string("bearer"), "bearerFormat": .string(bearerFormat)])]),
                "schemas": .object(["Error": errorSchema]),
            ]),
        ])
    }

    /// `store.materials.list` → `store_materials_list`: unique, and a valid identifier for
    /// client generators.
    static func operationID(_ method: any MethodDescriptor) -> String {
        String("\(method.service)_\(method.name)".map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// JSON Schema for a `_describe` shape: `"string"`, `"integer"`, `"date-time"`, `"a|b"`
    /// (an enum), `{"key": …, "optional?": …}`, `[…]`.
    static func schema(_ shape: JSONValue) -> JSONValue {
        switch shape {
        case .string(let name):
            switch name {
            case "string", "integer", "number", "boolean": return .object(["type": .string(name)])
            case "date-time": return .object(["type": .string("string"), "format": .string("date-time")])
            case "base64": return .object(["type": .string("string"), "contentEncoding": .string("base64")])
            case "url": return .object(["type": .string("string"), "format": .string("uri")])
            case "uuid": return .object(["type": .string("string"), "format": .string("uuid")])
            case "object": return .object(["type": .string("object")])
            case "any": return .object([:])
            default:
                let values = name.split(separator: "|").map { JSONValue.string(String($0)) }
                return values.count > 1 ? .object(["type": .string("string"), "enum": .array(values)]) : .object([:])
            }
        case .array(let items):
            return items.first.map { .object(["type": .string("array"), "items": schema($0)]) } ?? .object(["type": .string("array")])
        case .object(let members):
            if let values = members["<key>"] {
                return .object(["type": .string("object"), "additionalProperties": schema(values)])
            }
            var properties: [String: JSONValue] = [:]
            var required: [JSONValue] = []
            for (key, value) in members {
                if key.hasSuffix("?") {
                    properties[String(key.dropLast())] = schema(value)
                } else {
                    properties[key] = schema(value)
                    required.append(.string(key))
                }
            }
            var object: [String: JSONValue] = ["type": .string("object"), "properties": .object(properties)]
            if !required.isEmpty { object["required"] = .array(required.sorted { ($0.stringValue ?? "") < ($1.stringValue ?? "") }) }
            return .object(object)
        default:
            return .object([:])
        }
    }

    /// A stream of Server-Sent Events: the schema describes one event.
    private static let serverSentEvents: JSONValue = .object([
        "schema": .object([
            "type": .string("object"),
            "properties": .object(["id": .object(["type": .string("string")]), "event": .object(["type": .string("string")]), "data": .object(["type": .string("string")])]),
        ]),
    ])

    /// JSON, a stream of events for a chat that asks for one, and for a method whose response names a file (`fileName` with `contentType` or
    /// `mimeType`) the file itself, which it may answer with instead.
    private static func responseContent(_ method: any MethodDescriptor) -> [String: JSONValue] {
        var content: [String: JSONValue] = ["application/json": .object(["schema": schema(method.responseShape)])]
        if ChatStream.streams(method) { content["text/event-stream"] = serverSentEvents }
        let keys = Set((method.responseShape.objectValue ?? [:]).keys.map { $0.hasSuffix("?") ? String($0.dropLast()) : $0 })
        if keys.contains("fileName"), keys.contains("contentType") || keys.contains("mimeType") {
            content["*/*"] = .object(["schema": .object(["type": .string("string"), "format": .string("binary")])])
        }
        return content
    }

    private static let bearerFormat = "JWT"

    private static let callHeaders: [JSONValue] = [
        header("Idempotency-Key", "1 to 128 characters: a repeat with the same key and request is applied once."),
        header("Request-Timeout", "Seconds the call may take (the deadline passed to the service)."),
        header("traceparent", "W3C Trace Context, passed on to the services."),
    ]

    private static func header(_ name: String, _ description: String) -> JSONValue {
        .object(["name": .string(name), "in": .string("header"), "required": .bool(false), "description": .string(description), "schema": .object(["type": .string("string")])])
    }

    private static let errorContent: JSONValue = .object(["application/json": .object(["schema": .object(["$ref": .string("#/components/schemas/Error")])])])

    private static let errorResponse: JSONValue = .object(["description": .string("An error: the gRPC status code, its name, a message and details."), "content": errorContent])

    private static let errorSchema: JSONValue = .object([
        "type": .string("object"),
        "required": .array([.string("code"), .string("status"), .string("message")]),
        "properties": .object([
            "code": .object(["type": .string("integer"), "minimum": .int(1), "maximum": .int(16)]),
            "status": .object(["type": .string("string"), "enum": .array(StatusCode.allCases.filter { $0 != .ok }.map { .string($0.name) })]),
            "message": .object(["type": .string("string")]),
            "details": .object([:]),
        ]),
    ])
}
