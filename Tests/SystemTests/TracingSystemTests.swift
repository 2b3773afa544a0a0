import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

extension SystemTests {
    @Test("an upload is one trace over OTLP: ingest.submit, its calls, store's events, scheduler's cards, notifier's notice")
    func uploadIsOneExportedTrace() async throws {
        let collector = try OTLPCollector()
        defer { collector.stop() }
        // Export every 200 ms instead of every 5 s, so the spans arrive while the test waits.
        let settings = ["OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"]
        try await DevSystem.run(settings: settings) { system in
            // The test's own client does not trace: it sends the traceparent of a span of its
            // own (never exported), as an app or the edge would.
            let traceID = randomHex(bytes: 16), rootSpan = randomHex(bytes: 8)
            let user = "traced-otlp"
            let submitted = try await system.client.call(
                Ingest.submit, IngestSubmit(fileName: "cells.md", wait: true),
                options: CallOptions(user: user, timeout: .seconds(60), meta: [TraceParent.key: "00-\(traceID)-\(rootSpan)-01"],
                                     attachment: Data("# Cells\n\nA cell is the smallest unit of life. Cells divide into two.\n".utf8)))
            // A failure in the same trace: its server span says NOT_FOUND with an error status.
            let missing = randomHex(bytes: 8)
            await #expect(throws: BusError.self) {
                try await system.client.call(Store.getMaterial, RecordID(id: "missing-\(missing)"),
                                             options: CallOptions(user: user, meta: [TraceParent.key: "00-\(traceID)-\(rootSpan)-01"]))
            }

            let ofTrace = { collector.spans.filter { $0.traceID == traceID } }
            // ingest's request span ends last of its spans, after its materials.put returns: each
            // process exports on its own schedule, so wait for that one too, and for the server
            // span of every call ingest made (ai-gateway's among them).
            try await eventually("ingest's request span, its callees' and scheduler's and notifier's consumer spans are exported", timeout: .seconds(45)) {
                let spans = ofTrace()
                let servedCalls = Set(spans.filter { $0.kind == .server }.map(\.parentSpanID))
                return spans.contains { $0.service == "ingest" && $0.name == "ingest/ingest.submit" }
                    && spans.filter { $0.service == "ingest" && $0.kind == .client }.allSatisfy { servedCalls.contains($0.spanID) }
                    && spans.contains { $0.service == "notifier" && $0.name == "process material.ingested" }
                    && spans.contains { $0.service == "scheduler" && $0.name == "process flashcard.created" }
                    && spans.contains { $0.service == "store" && $0.name == "store/materials.get" }
            }
            let spans = ofTrace()
            let byID = Dictionary(spans.map { ($0.spanID, $0) }, uniquingKeysWith: { first, _ in first })
            let summary = spans.map(\.description).joined(separator: "\n")
            #expect(collector.exports.allSatisfy { $0.path == "/v1/traces" && $0.contentType == "application/x-protobuf" && $0.decoded })
            #expect(byID.count == spans.count, "span ids are unique:\n\(summary)")

            // Every span hangs off the test's span or another span of the trace: one tree.
            for span in spans {
                #expect(span.parentSpanID == rootSpan || byID[span.parentSpanID] != nil, "\(span) has a parent outside the trace:\n\(summary)")
            }

            // The request: ingest's server span, a child of the caller's span, OK.
            let submit = try #require(spans.first { $0.name == "ingest/ingest.submit" }, "\(summary)")
            #expect(submit.service == "ingest" && submit.kind == .server && submit.parentSpanID == rootSpan)
            #expect(submit.attributes["rpc.service"] == .string("ingest") && submit.attributes["rpc.method"] == .string("ingest.submit"))
            #expect(submit.attributes["rpc.response.status_code"] == .string("OK") && submit.attributes["studybus.status_code"] == .int(0))
            #expect(submit.statusCode != 2)

            // Each call ingest made is a client span under the request, and the callee's server
            // span is that client span's child, in the callee's service.
            let calls = spans.filter { $0.service == "ingest" && $0.kind == .client }
            #expect(Set(calls.map(\.name)).isSuperset(of: ["store/materials.upload", "store/materials.put"]), "\(summary)")
            for call in calls {
                #expect(isDescendant(call, of: submit, byID))
                let served = spans.filter { $0.kind == .server && $0.parentSpanID == call.spanID }
                #expect(served.count == 1 && served.first?.name == call.name
                        && served.first?.service == call.attributes["rpc.service"].flatMap { if case .string(let s) = $0 { s } else { nil } },
                        "\(call) is served by \(served)")
            }

            // store writes the material's events in materials.put: producer spans under its server span.
            let put = try #require(spans.first { $0.service == "store" && $0.name == "store/materials.put" })
            let created = spans.filter { $0.service == "store" && $0.kind == .producer && $0.name == "create flashcard.created" }
            let ingested = try #require(spans.first { $0.service == "store" && $0.kind == .producer && $0.name == "create material.ingested" })
            #expect(!created.isEmpty && created.allSatisfy { $0.parentSpanID == put.spanID })
            #expect(ingested.parentSpanID == put.spanID)
            #expect(ingested.attributes["messaging.destination.name"] == .string("material.ingested"))

            // The consumers' spans are children of the producer spans of the events they applied.
            let cards = spans.filter { $0.service == "scheduler" && $0.name == "process flashcard.created" }
            #expect(cards.allSatisfy { $0.kind == .consumer && created.map(\.spanID).contains($0.parentSpanID) && $0.statusCode != 2 })
            let notice = try #require(spans.first { $0.service == "notifier" && $0.name == "process material.ingested" })
            #expect(notice.kind == .consumer && notice.parentSpanID == ingested.spanID)
            #expect(notice.attributes["messaging.consumer.group.name"] == .string("notifier"))
            #expect(isDescendant(notice, of: submit, byID) && cards.allSatisfy { isDescendant($0, of: submit, byID) })

            // The failed call: NOT_FOUND, error status.
            let failed = try #require(spans.first { $0.name == "store/materials.get" })
            #expect(failed.service == "store" && failed.parentSpanID == rootSpan && failed.statusCode == 2)
            #expect(failed.attributes["rpc.response.status_code"] == .string("NOT_FOUND") && failed.attributes["studybus.status_code"] == .int(5))

            // The exporter's own HTTP requests are not traced (they would feed themselves), and
            // health checks and catch-up ticks start no traces of their own.
            #expect(collector.spans.allSatisfy { [.server, .client, .producer, .consumer].contains($0.kind) && !$0.name.hasPrefix("POST") })
            #expect(!collector.spans.contains { $0.name.contains("/_") && $0.parentSpanID.isEmpty }, "\(collector.spans.filter { $0.name.contains("/_") })")
            #expect(system.log("store-1").contains("tracing=\(collector.endpoint)"))
            #expect(submitted.materialId.isEmpty == false)
        }
    }
}

/// Whether `span` is `ancestor` or below it.
private func isDescendant(_ span: OTLPCollector.Span, of ancestor: OTLPCollector.Span, _ byID: [String: OTLPCollector.Span]) -> Bool {
    var current: OTLPCollector.Span? = span
    while let step = current {
        if step.spanID == ancestor.spanID { return true }
        current = byID[step.parentSpanID]
    }
    return false
}

private func randomHex(bytes: Int) -> String {
    (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 1...255)) }.joined()
}
