import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
@testable import IngestCore
import TestSupport
import Testing
import Wire

/// `ingest.submitURL` against a real local web server (Fixtures/web_server.py): pages and files
/// ingested as uploads are; redirects followed and checked; private, loopback and link-local
/// destinations refused after resolution unless the operator allows their network; the size
/// limits and time limits kept while reading.
@Suite("ingest.submitURL", .serialized)
struct URLSubmitTests {
    static let script = Fixture.folder.appending(path: "web_server.py")

    /// A world whose worker may fetch from 127.0.0.0/8 (the test server), and the server.
    func withWeb(_ change: (inout IngestConfiguration) -> Void = { _ in }, _ body: (IngestWorld, String) async throws -> Void) async throws {
        let server = try await PythonServer(script: Self.script, arguments: [Fixture.folder.appending(path: "lecture.pdf").path])
        do {
            try await withIngest(testIngestConfiguration {
                $0.urlFetch.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
                change(&$0)
            }) { world in try await body(world, server.baseURL) }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func fetchFailure(_ world: IngestWorld, _ url: String, user: String = "alice", sourceLocation: SourceLocation = #_sourceLocation) async -> BusError? {
        do throws(BusError) {
            _ = try await world.client.call(Ingest.submitURL, IngestSubmitURL(url: url), options: CallOptions(user: user, timeout: .seconds(60)))
            Issue.record("ingest.submitURL of \(url) succeeded; expected an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test("an HTML page without an extension: its text without markup, scripts or styles, its <title> the title")
    func htmlPage() async throws {
        try await withWeb { world, base in
            let result = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/article"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(result.material.status == .ready)
            #expect(result.outcome?.format == .html)
            #expect(result.material.title == "Photosynthesis explained")
            #expect(result.material.fileName == "article.html")
            let text = try await world.chunks(result.materialId).map(\.text).joined(separator: "\n")
            #expect(text.contains("Plants turn light into chemical energy"))
            #expect(text.contains("Calvin cycle"))
            #expect(!text.contains("<") && !text.contains("script text") && !text.contains("color: red"))
        }
    }

    @Test("a PDF named only by its media type and a text file are ingested as uploads are")
    func files() async throws {
        try await withWeb { world, base in
            let pdf = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/doc", title: "Lecture"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(pdf.outcome?.format == .pdf && pdf.material.title == "Lecture" && pdf.material.fileName == "doc.pdf")
            #expect(try await world.chunks(pdf.materialId).contains { $0.pageNumber != nil })
            let text = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/notes.txt"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(text.outcome?.format == .txt)
            #expect(try await world.chunks(text.materialId).contains { $0.text.contains("powerhouse of the cell") })
            // The same bytes again are the same material, as with uploads.
            let again = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/notes.txt"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(again.duplicate && again.materialId == text.materialId)
        }
    }

    @Test("the charset of the answer's Content-Type wins over the page's <meta> and over detection; the material keeps the whole media type")
    func charsetFromContentType() async throws {
        try await withWeb { world, base in
            let options = CallOptions(user: "alice", timeout: .seconds(60))
            let page = try await world.client.call(Ingest.submitURL, IngestSubmitURL(url: base + "/transcoded"), options: options)
            #expect(try await world.chunks(page.materialId).map(\.text).joined().contains("Café crème and crêpes."))
            // Greek in UTF-16 has no zero bytes to recognise it by: only the header tells.
            let greek = try await world.client.call(Ingest.submitURL, IngestSubmitURL(url: base + "/greek.txt"), options: options)
            #expect(greek.material.mimeType == #"text/plain; charset="UTF-16LE""#)
            #expect(try await world.chunks(greek.materialId).map(\.text).joined().contains("Η φωτοσύνθεση μετατρέπει το φως"))
        }
    }

    @Test("redirects are followed up to INGEST_URL_MAX_REDIRECTS, relative ones too; more, or a loop, is INVALID_ARGUMENT")
    func redirects() async throws {
        try await withWeb { world, base in
            let result = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/hop/4"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(result.material.status == .ready && result.outcome?.format == .html)
            let tooMany = await fetchFailure(world, base + "/hop/5")
            #expect(tooMany?.code == .invalidArgument && tooMany?.message.contains("more than 5 times") == true, "\(String(describing: tooMany))")
            let loop = await fetchFailure(world, base + "/loop")
            #expect(loop?.code == .invalidArgument)
            #expect(try await world.materials().count == 1)
        }
    }

    @Test("a redirect to the metadata address or a private network is refused before connecting: PERMISSION_DENIED, nothing stored")
    func redirectToRefusedAddress() async throws {
        try await withWeb { world, base in
            for host in ["169.254.169.254", "10.1.2.3", "[::ffff:169.254.169.254]", "[fd00::1]", "100.64.0.1"] {
                let started = ContinuousClock.now
                let error = await fetchFailure(world, base + "/to/" + host)
                #expect(error?.code == .permissionDenied, "\(host): \(String(describing: error))")
                #expect(error?.message.contains("INGEST_URL_ALLOW_NETWORKS") == true)
                // Refused at the socket's address check: no connection attempt to time out.
                #expect(ContinuousClock.now - started < .seconds(5), "\(host)")
            }
            let stored = try await world.materials()
            #expect(stored.isEmpty)
        }
    }

    @Test("a body over the format's limit is RESOURCE_EXHAUSTED: by Content-Length at once, else reading stops past the limit")
    func oversized() async throws {
        try await withWeb { world, base in
            let declared = await fetchFailure(world, base + "/big-declared")
            #expect(declared?.code == .resourceExhausted, "\(String(describing: declared))")
            let streamed = await fetchFailure(world, base + "/stream.mp3")
            #expect(streamed?.code == .resourceExhausted, "\(String(describing: streamed))")
            #expect(streamed?.message.contains("50 MB") == true)
            // A recording may have 50 MiB: what the server wrote beyond is what the sockets'
            // buffers took before the connection closed.
            try await Task.sleep(for: .milliseconds(500))
            let http = try HTTPClient(logger: testLogger("probe"))
            let sent = Int(String(decoding: try await http.send(HTTPRequest(url: base + "/_sent")).body, as: UTF8.self)) ?? -1
            await http.shutdown()
            #expect(sent > 50 * 1024 * 1024 && sent < 61 * 1024 * 1024, "the server wrote \(sent) bytes")
            #expect(try await world.materials().isEmpty)
        }
    }

    @Test("a server slower than INGEST_URL_TIMEOUT_SECONDS is DEADLINE_EXCEEDED at the limit")
    func slowServer() async throws {
        try await withWeb({ $0.urlFetch.timeout = .seconds(2) }) { world, base in
            let started = ContinuousClock.now
            let error = await fetchFailure(world, base + "/slow")
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
            #expect(ContinuousClock.now - started < .seconds(8))
            let stored = try await world.materials()
            #expect(stored.isEmpty)
        }
    }

    @Test("schemes other than http and https, user names in URLs, non-URLs and HTTP errors are INVALID_ARGUMENT")
    func badURLs() async throws {
        try await withWeb { world, base in
            for url in ["ftp://example.org/a.pdf", "file:///etc/passwd", "gopher://127.0.0.1:70/", "javascript:alert(1)", "", "http://",
                        "http://user:secret@127.0.0.1/notes.txt", String(repeating: "a", count: 3000), base + "/missing"] {
                let error = await fetchFailure(world, url)
                #expect(error?.code == .invalidArgument, "\(url.prefix(60)): \(String(describing: error))")
            }
            #expect(try await world.materials().isEmpty)
            // The worker still fetches.
            let result = try await world.client.call(
                Ingest.submitURL, IngestSubmitURL(url: base + "/notes.txt"), options: CallOptions(user: "alice", timeout: .seconds(60)))
            #expect(result.material.status == .ready)
        }
    }

    @Test("without INGEST_URL_ALLOW_NETWORKS, 127.0.0.1 and a name resolving to loopback are refused")
    func loopbackRefusedByDefault() async throws {
        let server = try await PythonServer(script: Self.script)
        do {
            try await withIngest(testIngestConfiguration(), gateway: nil) { world in
                for url in [server.baseURL + "/notes.txt", "http://localhost:\(server.port)/notes.txt"] {
                    let error = await fetchFailure(world, url)
                    #expect(error?.code == .permissionDenied, "\(url): \(String(describing: error))")
                    #expect(error?.message.contains("loopback address") == true)
                }
                let stored = try await world.materials()
                #expect(stored.isEmpty)
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("INGEST_URL_ALLOW_NETWORKS is read as a CIDR list; a bad entry stops the worker naming the variable")
    func configuration() throws {
        let configuration = try IngestConfiguration(environment: Environment(["INGEST_URL_ALLOW_NETWORKS": "127.0.0.0/8, 10.0.0.0/8 fd00::/8"]))
        #expect(configuration.urlFetch.allowedNetworks.map(\.description) == ["127.0.0.0/8", "10.0.0.0/8", "fd00::/8"])
        #expect(configuration.urlFetch.maxRedirects == 5 && configuration.urlFetch.timeout == .seconds(60))
        #expect(throws: BusError.self) { try IngestConfiguration(environment: Environment(["INGEST_URL_ALLOW_NETWORKS": "10.0.0.0/33"])) }
        #expect(throws: BusError.self) { try IngestConfiguration(environment: Environment(["INGEST_URL_MAX_REDIRECTS": "-1"])) }
    }
}
