import Hummingbird
import Logging

/// One line per request: method, path, route, user, status, bytes and microseconds; with
/// `LOG_FORMAT=json` a JSON line. Never headers or bodies, which carry tokens and content.
struct AccessLog {
    let method: String
    let path: String
    var route: String?
    var user: String?
    var uploadBytes: Int?

    init(method: String, path: String) {
        self.method = method
        self.path = String(path.prefix(200))
    }

    func finish(_ response: Response, started: ContinuousClock.Instant, logger: Logger) {
        finish(status: response.status.code, bytes: response.body.contentLength, started: started, logger: logger)
    }

    func finish(status: Int, bytes: Int?, started: ContinuousClock.Instant, logger: Logger) {
        let elapsed = ContinuousClock.now - started
        var metadata: Logger.Metadata = [
            "method": "\(method)", "path": "\(path)", "status": "\(status)",
            "us": "\(Int(elapsed / .microseconds(1)))",
        ]
        if let route { metadata["route"] = "\(route)" }
        if let user { metadata["user"] = "\(user)" }
        if let uploadBytes { metadata["uploadBytes"] = "\(uploadBytes)" }
        if let bytes { metadata["bytes"] = "\(bytes)" }
        logger.info("http", metadata: metadata)
    }
}
