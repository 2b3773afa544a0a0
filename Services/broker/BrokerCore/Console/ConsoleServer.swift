import Foundation
import ServiceKit
import Wire

/// The operator console on the broker's monitoring port: `GET /console` (one page, its script
/// and style sheet, no outside resources) and the JSON it polls, `/console/api/overview`
/// (services, workers, per-method figures) and `/console/api/tail` (events and calls, a long
/// poll).
///
/// Operators only: the monitoring port belongs on the private network, and with an operator
/// token (`BROKER_CONSOLE_TOKEN_FILE`) every `/console/api/` request must carry it as
/// `Authorization: Bearer TOKEN`, or gets 401. The page and its assets hold no data, so they
/// are served to anyone who reaches the port; the page asks for the token when the API
/// refuses it. Every answer forbids framing and caching and allows no script, style or
/// connection but the port's own (`content-security-policy`), and the page writes what it shows
/// as text, never as markup: events carry user text.
public struct ConsoleServer: Sendable {
    public static let path = "/console"
    /// Entries one tail answer holds at most.
    static let tailLimit = 200
    /// How long a tail request waits for an entry when there is none.
    static let longPoll: Duration = .seconds(5)
    static let pollStep: Duration = .milliseconds(200)

    let feed: ConsoleFeed
    let token: ConsoleToken?

    public init(feed: ConsoleFeed, token: ConsoleToken?) {
        self.feed = feed
        self.token = token
    }

    static let securityHeaders: [(name: String, value: String)] = [
        ("content-security-policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ]

    public func respond(to request: MonitoringRequest) async -> MonitoringResponse {
        var response = await answer(request)
        response.headers += Self.securityHeaders
        return response
    }

    private func answer(_ request: MonitoringRequest) async -> MonitoringResponse {
        switch request.path {
        case Self.path, Self.path + "/":
            return MonitoringResponse(status: 200, body: Array(ConsolePage.html.utf8), contentType: "text/html; charset=utf-8")
        case Self.path + "/app.js":
            return MonitoringResponse(status: 200, body: Array(ConsolePage.script.utf8), contentType: "text/javascript; charset=utf-8")
        case Self.path + "/style.css":
            return MonitoringResponse(status: 200, body: Array(ConsolePage.style.utf8), contentType: "text/css; charset=utf-8")
        case Self.path + "/api/overview":
            if let refusal = refusal(request) { return refusal }
            let window = request.query["window"].flatMap { Int64($0) } ?? 300
            return json(feed.overview(window: window))
        case Self.path + "/api/tail":
            if let refusal = refusal(request) { return refusal }
            return await tail(request)
        default:
            return .text(404, "not found; the console is \(Self.path)\n")
        }
    }

    /// 401 when a token is required and the request does not carry it.
    private func refusal(_ request: MonitoringRequest) -> MonitoringResponse? {
        guard let token, !token.admits(authorization: request.header("authorization")) else { return nil }
        return .text(401, "the console needs the operator token (the broker's BROKER_CONSOLE_TOKEN_FILE): send Authorization: Bearer TOKEN\n",
                     headers: [("www-authenticate", #"Bearer realm="studybus-console""#)])
    }

    private func tail(_ request: MonitoringRequest) async -> MonitoringResponse {
        var pattern: SubjectPattern?
        if let text = request.query["topic"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            do {
                pattern = try SubjectPattern(text)
            } catch {
                return .text(400, "\(error.description) (patterns are NATS-style: store.*, bus.rpc.>, >)\n")
            }
        }
        let after = request.query["after"].flatMap { Int64($0) } ?? 0
        let waits = request.query["wait"] == "1"
        var answer = feed.tail(after: after, matching: pattern, limit: Self.tailLimit)
        let giveUp = ContinuousClock.now + Self.longPoll
        while waits && answer.entries.isEmpty && !answer.missed && ContinuousClock.now < giveUp && !Task.isCancelled {
            try? await Task.sleep(for: Self.pollStep)
            answer = feed.tail(after: max(after, answer.next), matching: pattern, limit: Self.tailLimit)
        }
        return json(answer)
    }

    private func json(_ value: some Encodable) -> MonitoringResponse {
        do {
            return MonitoringResponse(status: 200, body: Array(try WireCoding.encode(value)), contentType: "application/json")
        } catch {
            return .text(500, "cannot encode the answer: \(error)\n")
        }
    }
}

/// The operator token the console's API requires, read from a file (a Docker secret).
public struct ConsoleToken: Sendable {
    static let minimumLength = 16
    private let secret: [UInt8]

    /// - Throws: `FAILED_PRECONDITION` naming the file when it cannot be read or the token is
    ///   shorter than 16 characters (leading and trailing white space are not part of it).
    public init(file: String) throws(BusError) {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw .failedPrecondition("cannot read BROKER_CONSOLE_TOKEN_FILE \(file)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= Self.minimumLength, !token.contains(where: \.isWhitespace) else {
            throw .failedPrecondition(
                "BROKER_CONSOLE_TOKEN_FILE \(file) must hold one token of at least \(Self.minimumLength) characters without spaces (e.g. head -c 32 /dev/urandom | base64)")
        }
        secret = Array(token.utf8)
    }

    /// Whether `authorization` is `Bearer` and the token, compared in constant time.
    func admits(authorization: String?) -> Bool {
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return false }
        let offered = Array(authorization.dropFirst(7).trimmingCharacters(in: .whitespaces).utf8)
        var difference = UInt8(offered.count == secret.count ? 0 : 1)
        for index in secret.indices { difference |= secret[index] ^ (index < offered.count ? offered[index] : 0) }
        return difference == 0
    }
}
