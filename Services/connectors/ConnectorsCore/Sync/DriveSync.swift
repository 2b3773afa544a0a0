import Bus
import Contracts
import Foundation
import HTTPClient
import Logging
import Wire

/// Drive folders into materials: each file of a folder (`files.list` with
/// `q="'<folder>' in parents and trashed = false"`) downloaded (`files.get?alt=media`, or
/// `files.export` as plain text for Google Docs and Slides) and submitted to ingest like an
/// upload. A file is taken again when its `modifiedTime` changed (the new material replaces the
/// old one) and its material deleted when it left the folder or was trashed. Other Google types
/// (Sheets, Forms, folders) are skipped.
struct DriveSync {
    let context: SyncContext

    static let maximumFilesPerPage = 1000
    /// Google types exported, and as what.
    static let exports: [String: (mimeType: String, fileExtension: String)] = [
        "application/vnd.google-apps.document": ("text/plain", "txt"),
        "application/vnd.google-apps.presentation": ("text/plain", "txt"),
    ]

    private var base: String { "\(context.configuration.apiURL)/drive/v3/files" }

    func run() async throws(BusError) -> SourceOutcome {
        var outcome = SourceOutcome()
        for folder in context.account.driveFolderIds {
            do throws(GoogleError) {
                try await sync(folder: folder, outcome: &outcome)
            } catch {
                throw error.busError
            }
        }
        return outcome
    }

    private struct File {
        var id: String
        var name: String
        var mimeType: String
        var modifiedTime: String
        var size: Int?
    }

    private func sync(folder: String, outcome: inout SourceOutcome) async throws(GoogleError) {
        let epoch = try await bus { () async throws(BusError) in try await context.nextEpoch(.drive, key: folder) }
        var files: [File] = []
        var pageToken: String?
        var pages = 0
        var complete = false
        while pages < context.configuration.maximumPages {
            let escaped = folder.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            let url = GoogleHTTP.url(base, [
                ("q", "'\(escaped)' in parents and trashed = false"), ("pageSize", "100"), ("pageToken", pageToken),
                ("fields", "nextPageToken,files(id,name,mimeType,modifiedTime,size)"),
            ])
            let page = try await context.google.json(url, accessToken: context.accessToken, bucket: context.syncer.driveBucket)
            pages += 1
            let listed = page["files"]?.arrayValue ?? []
            guard listed.count <= Self.maximumFilesPerPage else { throw .malformed("a page of \(listed.count) files") }
            for item in listed {
                let id = try GoogleJSON.id(item["id"], "a file id")
                let name = (GoogleJSON.string(item["name"], maximum: 4096) ?? id)
                let mimeType = GoogleJSON.string(item["mimeType"], maximum: 255) ?? "application/octet-stream"
                let modified = GoogleJSON.string(item["modifiedTime"], maximum: 64) ?? ""
                // Drive sends `size` as a decimal string (int64); anything else is no size.
                let size = GoogleJSON.string(item["size"], maximum: 20).flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
                files.append(File(id: id, name: name, mimeType: mimeType, modifiedTime: modified, size: size))
            }
            pageToken = try GoogleJSON.token(page["nextPageToken"], "nextPageToken")
            if pageToken == nil { complete = true; break }
        }
        var taken = 0
        for file in files {
            let existing = try await entry(folder, file.id)
            if let existing, existing.version == file.modifiedTime {
                try await bus { () async throws(BusError) in try await context.markSeen(.drive, key: folder, item: file.id, epoch: epoch) }
                continue
            }
            guard taken < context.configuration.maximumItems else { continue }
            taken += 1
            try await take(file, folder: folder, existing: existing, epoch: epoch, outcome: &outcome)
        }
        // Only a complete listing tells what left the folder.
        guard complete else { return }
        let gone = try await bus { () async throws(BusError) in try await context.unseen(.drive, key: folder, before: epoch) }
        for entry in gone {
            try await bus { () async throws(BusError) in
                try await context.deleteRecord(kind: entry.kind, id: entry.recordID)
                try await context.deleteEntry(.drive, key: folder, item: entry.item)
            }
            if entry.kind == "material" { outcome.removed += 1 }
        }
    }

    private func take(_ file: File, folder: String, existing: (kind: String, recordID: String, version: String?)?, epoch: Int64, outcome: inout SourceOutcome) async throws(GoogleError) {
        let limit = context.configuration.maximumFileBytes
        let fileName: String
        let url: String
        if let export = Self.exports[file.mimeType] {
            url = GoogleHTTP.url("\(base)/\(GoogleHTTP.escape(file.id))/export", [("mimeType", export.mimeType)])
            fileName = Self.safeName(file.name) + "." + export.fileExtension
        } else if file.mimeType.hasPrefix("application/vnd.google-apps.") {
            try await skip(file, folder: folder, epoch: epoch, why: "a Google type that is not exported")
            return
        } else {
            if let size = file.size, size > limit {
                try await skip(file, folder: folder, epoch: epoch, why: "larger than \(limit) bytes")
                return
            }
            url = GoogleHTTP.url("\(base)/\(GoogleHTTP.escape(file.id))", [("alt", "media")])
            fileName = Self.safeName(file.name)
        }
        let response: HTTPResponseBody
        do throws(GoogleError) {
            response = HTTPResponseBody(try await context.google.send(
                url, accessToken: context.accessToken, bucket: context.syncer.driveBucket, maximumBytes: limit).body)
        } catch .tooLarge {
            try await skip(file, folder: folder, epoch: epoch, why: "larger than \(limit) bytes")
            return
        }
        guard !response.bytes.isEmpty else {
            try await skip(file, folder: folder, epoch: epoch, why: "empty")
            return
        }
        do throws(BusError) {
            let result = try await context.call(Ingest.submit, IngestSubmit(fileName: fileName, wait: false), attachment: response.bytes)
            if let existing, existing.kind == "material", existing.recordID != result.materialId {
                try await context.deleteRecord(kind: "material", id: existing.recordID)
            }
            try await context.saveEntry(.drive, key: folder, item: file.id, kind: "material", recordID: result.materialId, version: file.modifiedTime, epoch: epoch)
            if existing?.kind == "material" { outcome.updated += 1 } else { outcome.added += 1 }
        } catch where error.code == .invalidArgument {
            try await skip(file, folder: folder, epoch: epoch, why: String(error.message.prefix(200)))
        } catch {
            throw .bus(BusError(error.code, "ingest could not take Drive file \(file.id): \(error.message)"))
        }
    }

    /// Remembers a file ingest cannot take at this version, so it is not fetched again.
    private func skip(_ file: File, folder: String, epoch: Int64, why: String) async throws(GoogleError) {
        context.syncer.logger.notice("drive file skipped", metadata: ["file": "\(file.id)", "why": "\(why)"])
        try await bus { () async throws(BusError) in
            try await context.saveEntry(.drive, key: folder, item: file.id, kind: "skipped", recordID: "", version: file.modifiedTime, epoch: epoch)
        }
    }

    private func entry(_ folder: String, _ id: String) async throws(GoogleError) -> (kind: String, recordID: String, version: String?)? {
        try await bus { () async throws(BusError) in try await context.entry(.drive, key: folder, item: id) }
    }

    private func bus<T>(_ body: () async throws(BusError) -> T) async throws(GoogleError) -> T {
        do {
            return try await body()
        } catch {
            throw .bus(error)
        }
    }

    /// A file name ingest takes: no slashes or control characters, 1...200 characters.
    static func safeName(_ name: String) -> String {
        let cleaned = String(String.UnicodeScalarView(name.unicodeScalars.map { $0 == "/" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F ? "_" : $0 }))
            .trimmingCharacters(in: .whitespaces)
        return cleaned.isEmpty ? "drive-file" : cleaned.clippedScalars(200)
    }
}

/// A downloaded body.
private struct HTTPResponseBody {
    var bytes: Data
    init(_ bytes: Data) { self.bytes = bytes }
}
