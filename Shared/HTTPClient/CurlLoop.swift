import CCurl
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One exchange on the client's thread: its easy handle and what has arrived so far.
final class Transfer {
    let id: Int
    let easy: UnsafeMutableRawPointer
    let sink: TransferSink
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    var status = 0
    var headers: [String: String] = [:]
    var httpVersion = "1.1"
    var body = Data()
    var headDelivered = false
    /// The request's ``HTTPRequest/maximumBodyBytes``.
    let bodyLimit: Int?
    var bodyTruncated = false
    /// Body bytes handed to a streaming caller so far.
    var bodyStreamed = 0
    let destinations: DestinationPolicy?
    /// The class of the last address the policy refused.
    var refused: AddressClass?

    init(id: Int, easy: UnsafeMutableRawPointer, sink: TransferSink, bodyLimit: Int? = nil, destinations: DestinationPolicy? = nil) {
        self.id = id
        self.easy = easy
        self.sink = sink
        self.bodyLimit = bodyLimit
        self.destinations = destinations
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// One header line (status lines start a new head, e.g. after `100 Continue`).
    func headerLine(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("HTTP/") {
            let parts = trimmed.split(separator: " ", maxSplits: 2)
            httpVersion = parts.first.map { String($0.dropFirst(5)) } ?? "1.1"
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = [:]
        } else if trimmed.isEmpty {
            if status >= 200 { deliverHead() }
        } else if let colon = trimmed.firstIndex(of: ":") {
            let name = trimmed[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    /// Takes a body chunk; false stops the exchange (the body limit is reached).
    func bodyChunk(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch sink {
        case .buffered:
            if let bodyLimit, body.count + bytes.count > bodyLimit {
                body.append(contentsOf: bytes.prefix(max(0, bodyLimit - body.count)))
                bodyTruncated = true
                return false
            }
            body.append(contentsOf: bytes)
        case .streaming(let continuation):
            deliverHead()
            // Checked here, on the client's thread: the stream buffers what its caller has not
            // taken yet, so a caller's own count would stop the reading too late.
            if let bodyLimit, bodyStreamed + bytes.count > bodyLimit {
                let room = max(0, bodyLimit - bodyStreamed)
                if room > 0 { continuation.yield(.body(Data(bytes.prefix(room)))) }
                bodyStreamed = bodyLimit
                bodyTruncated = true
                return false
            }
            bodyStreamed += bytes.count
            continuation.yield(.body(Data(bytes)))
        }
        return true
    }

    /// Opens the socket for one connection attempt to `address`, unless the policy refuses the
    /// address (libcurl then tries the host's next address, or fails with COULDNT_CONNECT).
    func openSocket(purpose: curlsocktype, address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        if let destinations {
            guard purpose == CURLSOCKTYPE_IPCXN, let target = Self.ipAddress(address) else {
                refused = .reserved
                return CURL_SOCKET_BAD
            }
            if let refusal = destinations.refusal(for: target) {
                refused = refusal
                return CURL_SOCKET_BAD
            }
        }
        let socketType = address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue)
        return socket(address.pointee.family, socketType, address.pointee.protocol)
    }

    /// The address libcurl is about to connect to. `addr` is the start of a buffer large enough
    /// for the family's address (libcurl's own struct holds a sockaddr_storage there), whose
    /// length is `addrlen`.
    static func ipAddress(_ address: UnsafeMutablePointer<curl_sockaddr>) -> IPAddress? {
        let length = Int(address.pointee.addrlen)
        let start = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \.addr)!
        switch address.pointee.family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            return .v4(UInt32(bigEndian: start.loadUnaligned(as: sockaddr_in.self).sin_addr.s_addr))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            return IPAddress(start.loadUnaligned(as: sockaddr_in6.self).sin6_addr)
        default:
            return nil
        }
    }

    private func deliverHead() {
        guard !headDelivered, case .streaming(let continuation) = sink else { return }
        headDelivered = true
        continuation.yield(.head(status: status, headers: headers))
    }

    /// Ends the exchange with libcurl's result.
    func complete(_ code: CURLcode) {
        if code == CURLE_OK || (code == CURLE_WRITE_ERROR && bodyTruncated) {
            succeed()
        } else if let refused, code == CURLE_COULDNT_CONNECT {
            fail(.destinationNotAllowed(refused))
        } else {
            var osError = 0
            studybus_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osError)
            fail(Self.error(for: code, osError: Int32(truncatingIfNeeded: osError), detail: String(cString: errorBuffer)))
        }
    }

    private func succeed() {
        var status = 0
        studybus_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if status > 0 { self.status = status }
        switch sink {
        case .buffered(let continuation):
            continuation.resume(returning: HTTPResponse(
                status: self.status, headers: headers, body: body, httpVersion: httpVersion, bodyTruncated: bodyTruncated))
        case .streaming(let continuation):
            deliverHead()
            continuation.finish()
        }
    }

    func fail(_ error: HTTPClientError) {
        switch sink {
        case .buffered(let continuation): continuation.resume(throwing: error)
        case .streaming(let continuation): continuation.finish(throwing: error)
        }
    }

    static func error(for code: CURLcode, osError: Int32, detail: String) -> HTTPClientError {
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timedOut
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .couldNotResolve(message)
        case CURLE_COULDNT_CONNECT where osError == ECONNREFUSED: return .connectionRefused(message)
        case CURLE_COULDNT_CONNECT: return .couldNotConnect(message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE:
            return .tls(message)
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        default: return .transport(message)
        }
    }
}

private let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    // Fewer bytes than given makes libcurl stop the exchange (CURLE_WRITE_ERROR).
    return transfer.bodyChunk(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private let openSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = {
    context, purpose, address in
    guard let context, let address else { return CURL_SOCKET_BAD }
    return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().openSocket(purpose: purpose, address: address)
}

private let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
    transfer.headerLine(line)
    return size * count
}

/// The client thread's loop: starts and cancels transfers, drives `curl_multi`, completes them.
struct CurlLoop {
    let multi: UnsafeMutableRawPointer
    let logger: Logger
    let destinations: DestinationPolicy?

    func run(takeCommands: () -> (starts: [(Int, HTTPRequest, TransferSink)], cancels: [Int], keepRunning: Bool)) {
        var transfers: [Int: Transfer] = [:]
        var byHandle: [UnsafeMutableRawPointer: Transfer] = [:]
        while true {
            let (starts, cancels, keepRunning) = takeCommands()
            for (id, request, sink) in starts {
                guard let transfer = makeTransfer(id: id, request: request, sink: sink) else { continue }
                transfers[id] = transfer
                byHandle[transfer.easy] = transfer
                curl_multi_add_handle(multi, transfer.easy)
            }
            for id in cancels {
                guard let transfer = transfers.removeValue(forKey: id) else { continue }
                byHandle[transfer.easy] = nil
                finish(transfer) { $0.fail(.cancelled) }
            }
            guard keepRunning else { break }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                      let transfer = byHandle.removeValue(forKey: easy)
                else { continue }
                let code = message.pointee.data.result
                transfers[transfer.id] = nil
                finish(transfer) { $0.complete(code) }
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for transfer in transfers.values { finish(transfer) { $0.fail(.cancelled) } }
    }

    private func finish(_ transfer: Transfer, _ outcome: (Transfer) -> Void) {
        curl_multi_remove_handle(multi, transfer.easy)
        outcome(transfer)
        curl_easy_cleanup(transfer.easy)
    }

    private func makeTransfer(id: Int, request: HTTPRequest, sink: TransferSink) -> Transfer? {
        guard let easy = curl_easy_init() else {
            Transfer(id: id, easy: UnsafeMutableRawPointer(bitPattern: 1)!, sink: sink).fail(.transport("curl_easy_init failed"))
            return nil
        }
        let transfer = Transfer(id: id, easy: easy, sink: sink, bodyLimit: request.maximumBodyBytes, destinations: destinations)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        studybus_easy_setopt_string(easy, CURLOPT_URL, request.url)
        studybus_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        // A redirect is an answer, not a request to make: following it would send the body to a
        // place the caller did not choose (libcurl's default, stated here because it matters).
        studybus_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        if destinations != nil {
            studybus_easy_setopt_opensocket_callback(easy, openSocketCallback)
            studybus_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, context)
            // A proxy (http_proxy and friends in the environment) would connect on our behalf,
            // past the check; "" turns proxies off whatever the environment says.
            studybus_easy_setopt_string(easy, CURLOPT_PROXY, "")
        }
        studybus_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        studybus_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(max(1, request.timeout.milliseconds)))
        studybus_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(max(1, request.connectTimeout.milliseconds)))
        studybus_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        studybus_easy_setopt_write_callback(easy, writeCallback)
        studybus_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        studybus_easy_setopt_header_callback(easy, headerCallback)
        studybus_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        if request.decompress {
            studybus_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "")
        } else {
            studybus_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
        }
        let version: Int = switch request.version {
        case .http1: Int(CURL_HTTP_VERSION_1_1)
        case .http2WhenOffered: Int(CURL_HTTP_VERSION_2TLS)
        case .http2Only: Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
        studybus_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, version)
        if let caFile = request.caFile { studybus_easy_setopt_string(easy, CURLOPT_CAINFO, caFile) }
        if request.method == "HEAD" {
            studybus_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        } else if request.method != "GET" || request.body != nil {
            studybus_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method)
        }
        if let body = request.body {
            studybus_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { bytes in
                // COPYPOSTFIELDS copies the bytes, so the buffer need not outlive this call.
                _ = studybus_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        transfer.headerList = list
        studybus_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        return transfer
    }
}

extension Duration {
    /// Whole milliseconds, saturating at Int64's range.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflowAgain ? .max : total
    }
}
