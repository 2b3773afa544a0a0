import Contracts
import EdgeCore
import Foundation
import TestSupport
import Testing
import Wire

@Suite("Files in and out")
struct FileTests {
    private func query(_ json: String) -> String {
        "?request=" + json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test("a raw body is the call's attachment; the file comes back with its type and name")
    func rawUploadAndDownload() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            let file = Data("Photosynthesis converts light into chemical energy.".utf8)
            let uploaded = try await world.request(
                "POST", "/v1/store/materials.upload" + query(#"{"title":"Notes","sourceKind":"txt","status":"pending"}"#), body: file, token: alice,
                headers: ["Content-Type": "text/plain", "Content-Disposition": #"attachment; filename="../notes.txt""#])
            #expect(uploaded.status == 200, "\(String(decoding: uploaded.body, as: UTF8.self))")
            let material = try #require(uploaded.json.objectValue?["material"]?.objectValue)
            #expect(material["userId"] == .string("alice"))
            let id = try #require(material["id"]?.stringValue)

            let original = try await world.call("store/materials.original", #"{"id":"\#(id)"}"#, token: alice)
            #expect(original.status == 200)
            #expect(original.body == file)
            #expect(original.header("Content-Type") == "text/plain")
            #expect(original.header("Content-Disposition") == #"attachment; filename="notes.txt"; filename*=UTF-8''notes.txt"#)
            // Another user's token reaches nothing of it.
            #expect(try await world.call("store/materials.original", #"{"id":"\#(id)"}"#, token: try await token("bob")).status == 404)
        }
    }

    @Test("the request in the query may be form-encoded, with + for spaces, as URLSearchParams writes it")
    func formEncodedRequest() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            let request = #"{"title": "Plus+and space", "sourceKind": "txt", "status": "pending"}"#
            var form = URLComponents()
            form.queryItems = [URLQueryItem(name: "request", value: request)]
            // What URLSearchParams sends: spaces as +, a literal + as %2B.
            let encoded = form.percentEncodedQuery!.replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "%20", with: "+")
            #expect(encoded.contains("+") && !encoded.contains("%20"))
            let uploaded = try await world.request(
                "POST", "/v1/store/materials.upload?" + encoded, body: Data("Some text.".utf8), token: alice,
                headers: ["Content-Type": "text/plain", "Content-Disposition": #"attachment; filename="notes.txt""#])
            #expect(uploaded.status == 200, "\(String(decoding: uploaded.body, as: UTF8.self))")
            #expect(uploaded.json.objectValue?["material"]?.objectValue?["title"] == .string("Plus+and space"))
        }
    }

    @Test("multipart/form-data with a request field and one file part")
    func multipartUpload() async throws {
        try await EdgeWorld.with { world in
            let alice = try await token("alice")
            let boundary = "edge-test-boundary"
            let file = "# Cells\nThe mitochondria produces ATP.\n"
            let form = "--\(boundary)\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n"
                + #"{"title":"Cells","sourceKind":"md","status":"pending"}"#
                + "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cells.md\"\r\nContent-Type: text/markdown\r\n\r\n"
                + file + "\r\n--\(boundary)--\r\n"
            let uploaded = try await world.request(
                "POST", "/v1/store/materials.upload", body: Data(form.utf8), token: alice,
                headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
            #expect(uploaded.status == 200, "\(String(decoding: uploaded.body, as: UTF8.self))")
            let id = try #require(uploaded.json.objectValue?["material"]?.objectValue?["id"]?.stringValue)
            let original = try await world.call("store/materials.original", #"{"id":"\#(id)"}"#, token: alice)
            #expect(String(decoding: original.body, as: UTF8.self) == file)
            #expect(original.header("Content-Type") == "text/markdown")
            #expect(original.header("Content-Disposition")?.contains(#"filename="cells.md""#) == true)
        }
    }

    @Test("uploads at the limit pass; over it they are 413, raw or multipart; broken forms are 400")
    func uploadLimits() async throws {
        try await EdgeWorld.with({ $0.maximumUploadBytes = 4096 }) { world in
            let alice = try await token("alice")
            let request = query(#"{"title":"Big","sourceKind":"txt","status":"pending"}"#)
            let headers = ["Content-Type": "text/plain", "Content-Disposition": #"attachment; filename="big.txt""#]
            let atLimit = try await world.request("POST", "/v1/store/materials.upload" + request, body: Data(repeating: 97, count: 4096), token: alice, headers: headers)
            #expect(atLimit.status == 200)
            let over = try await world.request("POST", "/v1/store/materials.upload" + request, body: Data(repeating: 98, count: 4097), token: alice, headers: headers)
            #expect(over.status == 413)
            #expect(over.json.objectValue?["status"] == .string("RESOURCE_EXHAUSTED"))

            let boundary = "b"
            func form(_ file: String) -> Data {
                Data("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.txt\"\r\n\r\n\(file)\r\n--b--\r\n".utf8)
            }
            let multipartHeaders = ["Content-Type": "multipart/form-data; boundary=\(boundary)"]
            let overForm = try await world.request("POST", "/v1/store/materials.upload" + request, body: form(String(repeating: "c", count: 5000)), token: alice, headers: multipartHeaders)
            #expect(overForm.status == 413)
            for broken in ["", "--b\r\n", "--b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--b--", "--b--", "no boundary at all"] {
                let answer = try await world.request("POST", "/v1/store/materials.upload" + request, body: Data(broken.utf8), token: alice, headers: multipartHeaders)
                #expect(answer.status == 400, "\(broken.debugDescription)")
            }
            let notObject = try await world.request("POST", "/v1/store/materials.upload" + query("[1]"), body: Data("x".utf8), token: alice, headers: headers)
            #expect(notObject.status == 400)
        }
    }
}
