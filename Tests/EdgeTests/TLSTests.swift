import Bus
import Contracts
import EdgeCore
import Foundation
import ServiceKit
import TestSupport
import Testing
import Wire

@Suite("HTTPS")
struct TLSTests {
    @Test("with certificate files the edge serves HTTPS, offering HTTP/2 and HTTP/1.1")
    func httpsWithHTTP2() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "studybus-edge-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appending(path: "cert.pem").path, key = directory.appending(path: "key.pem").path
        _ = try await runProgram("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
            "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        try await EdgeWorld.with({ $0.tls = (certificate, key) }) { world in
            let base = "https://127.0.0.1:\(world.edge.boundPort!)"
            #expect(try await text(runProgram("/usr/bin/curl", ["-s", "--cacert", certificate, "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", base + "/healthz"])) == "2 200")
            #expect(try await text(runProgram("/usr/bin/curl", ["-s", "--cacert", certificate, "--http1.1", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", base + "/healthz"])) == "1.1 200")
            let call = try await runProgram("/usr/bin/curl", [
                "-s", "--cacert", certificate, "--http2", "-H", "Authorization: Bearer \(try await token("alice"))", "--json", "{}", base + "/v1/probe/whoami",
            ])
            #expect(try JSONValue.parse(call).objectValue?["user"] == .string("alice"))
            // Event streams over either version.
            let alice = try await token("alice")
            let streams = try ["--http2", "--http1.1"].map { version in
                try SSEClient(URL(string: base)!, token: alice, curlArguments: ["--cacert", certificate, version])
            }
            try await eventually("both streams listen") { world.edge.hub.listenerCount == 2 }
            _ = try await world.probeBus.call(Store.createSubject, SubjectCreate(name: "Over TLS"), options: CallOptions(user: "alice"))
            for stream in streams {
                #expect(try #require(await stream.next()).subjectName == "Over TLS")
                await stream.close()
            }
            // Plain HTTP is not served on the TLS port.
            #expect(try await text(runProgram("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(world.edge.boundPort!)/healthz"])) != "200")
        }
    }

    @Test("a missing certificate file stops the edge at start")
    func missingCertificateIsAConfigurationError() throws {
        #expect(throws: BusError.self) { _ = try EdgeService.tlsConfiguration(("/nonexistent/cert.pem", "/nonexistent/key.pem")) }
        var environment = ["EDGE_JWT_SECRET": String(repeating: "s", count: 32), "EDGE_TLS_CERT_FILE": "/x.pem"]
        #expect(throws: BusError.self) { _ = try EdgeConfiguration(environment: .init(environment)) }
        environment["EDGE_TLS_KEY_FILE"] = "/y.pem"
        #expect(try EdgeConfiguration(environment: .init(environment)).tls?.keyFile == "/y.pem")
    }
}
