import Bus
import Contracts
import Foundation
import Wire

/// The `ingest.*` methods: `submit`, `submitURL` and `retry` check the request, store the file
/// (or find it stored) and start a job; `cancel` stops one; `formats` says what a job reads and
/// how long it may take.
struct JobMethods: Sendable {
    let runner: JobRunner
    let configuration: IngestConfiguration
    let fetcher: URLFetcher

    static func register(_ handlers: Handlers<IngestService>) {
        handlers.handle(Ingest.submit) { service, request, context in try await service.jobs.submit(request, context) }
        handlers.handle(Ingest.submitURL) { service, request, context in try await service.jobs.submitURL(request, context) }
        handlers.handle(Ingest.retry) { service, request, context in try await service.jobs.retry(request, context) }
        handlers.handle(Ingest.cancel) { service, request, context in try await service.jobs.cancel(request, context) }
        handlers.handle(Ingest.formats) { service, _, _ in service.jobs.formats() }
    }

    func formats() -> IngestFormats {
        IngestFormats(
            formats: FormatDetection.catalog, chunkTargetCharacters: configuration.chunking.targetCharacters,
            chunkOverlapCharacters: configuration.chunking.overlapCharacters,
            jobTimeoutSeconds: Int(configuration.jobTimeout.components.seconds),
            lostWorkerBoundSeconds: Int(configuration.lostWorkerBound.components.seconds))
    }

    /// Checks the file, stores it (or finds it stored), then processes it.
    func submit(_ request: IngestSubmit, _ context: RequestContext) async throws -> IngestResult {
        _ = try context.requireUser()
        let fileName = try Field.text(request.fileName, "fileName", maximum: StoreLimits.fileNameLength, trimming: true)
        let title = try Self.title(request.title, fileName: fileName)
        let options = try Self.options(request.options)
        guard let file = context.attachment, !file.isEmpty else {
            throw BusError.invalidArgument("ingest.submit needs the file's bytes in the request's attachment frame (the file '\(fileName)' is empty or missing)")
        }
        let upload = Upload(
            file: file, fileName: fileName, mimeType: request.mimeType, title: title, titleFromDocument: request.title == nil,
            subjectId: request.subjectId, options: options)
        return try await ingest(upload, wait: request.wait ?? true, context)
    }

    /// Fetches the URL (``URLFetcher``), then goes on as `submit` with the file it got.
    func submitURL(_ request: IngestSubmitURL, _ context: RequestContext) async throws -> IngestResult {
        _ = try context.requireUser()
        // Every field is checked before anything is fetched.
        let givenName = try request.fileName.map { name throws(BusError) in
            try Field.text(name, "fileName", maximum: StoreLimits.fileNameLength, trimming: true)
        }
        if let title = request.title { _ = try Field.text(title, "title", maximum: StoreLimits.titleLength, trimming: true) }
        let options = try Self.options(request.options)
        // Refused before fetching when even the largest file would not fit the worker now.
        try runner.admit(bytes: StoreLimits.materialBytes)
        let fetched = try await fetcher.fetch(request.url, fileName: givenName)
        let upload = Upload(
            file: fetched.data, fileName: fetched.fileName, mimeType: fetched.mimeType,
            title: try Self.title(request.title, fileName: fetched.fileName), titleFromDocument: request.title == nil,
            subjectId: request.subjectId, options: options)
        return try await ingest(upload, wait: request.wait ?? true, context)
    }

    /// A file to store and process, checked as far as the request goes.
    private struct Upload {
        let file: Data
        let fileName: String
        let mimeType: String?
        let title: String
        let titleFromDocument: Bool
        let subjectId: String?
        let options: (generate: Bool, max: Int)
    }

    /// Checks the file's format and size, stores it (or finds it stored), then processes it.
    private func ingest(_ upload: Upload, wait: Bool, _ context: RequestContext) async throws -> IngestResult {
        let file = upload.file, fileName = upload.fileName
        let format = try FormatDetection.check(fileName: fileName, mimeType: upload.mimeType, data: file)
        let allowance = configuration.expansionAllowance(format, fileBytes: file.count)
        try runner.admit(bytes: file.count + allowance)
        let limit = JobDeadline(configuration.jobTimeout)
        let mimeType = upload.mimeType ?? FormatDetection.catalog.first { $0.format == format }?.mimeTypes.first
        let stored = try await context.call(Store.uploadMaterial, MaterialUpload(
            title: upload.title, subjectId: upload.subjectId, sourceKind: format.sourceKind, fileName: fileName, mimeType: mimeType,
            status: .processing),
            attachment: file)
        if stored.duplicate { return IngestResult(material: stored.material, duplicate: true) }
        let job = IngestJob(
            id: UUID().uuidString, material: stored.material, format: format, file: file, expansionAllowance: allowance, fileName: fileName,
            charset: FormatDetection.charset(upload.mimeType), generateFlashcards: upload.options.generate, maxFlashcards: upload.options.max, titleFromDocument: upload.titleFromDocument,
            limit: limit, meta: context.downstreamOptions().meta)
        return try await run(job, wait: wait)
    }

    /// Fails a processing material with ``JobRunner/cancelledReason`` (the store publishes
    /// `ingest.failed`, which stops its job on whichever worker runs it) and stops the job if it
    /// runs here. Cancelling a cancelled material again returns it as it is.
    func cancel(_ request: IngestCancel, _ context: RequestContext) async throws -> Material {
        _ = try context.requireUser()
        let material = try await context.call(Store.getMaterial, RecordID(id: request.materialId))
        guard material.status == .processing else { return try Self.alreadyStopped(material) }
        do throws(BusError) {
            let failed = try await context.call(Store.failMaterial, MaterialFail(id: material.id, reason: JobRunner.cancelledReason))
            runner.cancel(materialId: material.id, failedAt: failed.updatedAt)
            return failed
        } catch where error.code == .failedPrecondition {
            // The job finished or failed between the two calls: say how it ended.
            return try Self.alreadyStopped(try await context.call(Store.getMaterial, RecordID(id: material.id)))
        }
    }

    /// A material no job processes: a cancelled one as it is, any other FAILED_PRECONDITION.
    private static func alreadyStopped(_ material: Material) throws(BusError) -> Material {
        if material.status == .failed, material.failureReason == JobRunner.cancelledReason { return material }
        throw .failedPrecondition(
            "material '\(material.id)' is \(material.status.rawValue), not being processed; only a processing material can be cancelled")
    }

    /// Processes a failed (or pending) material again from its stored original.
    func retry(_ request: IngestRetry, _ context: RequestContext) async throws -> IngestResult {
        _ = try context.requireUser()
        let options = try Self.options(request.options)
        let material = try await context.call(Store.getMaterial, RecordID(id: request.materialId))
        switch material.status {
        case .ready:
            throw BusError.failedPrecondition("material '\(material.id)' is ready; there is nothing to retry")
        case .processing:
            throw BusError.failedPrecondition(
                "material '\(material.id)' is being processed; if its worker was lost it ends failed within \(configuration.lostWorkerBound) of its start, and can be retried then")
        case .pending, .failed:
            break
        }
        let (original, file) = try await context.bus.callWithAttachment(
            Store.materialOriginal, RecordID(id: material.id), options: context.downstreamOptions())
        guard let file, !file.isEmpty else {
            throw BusError.failedPrecondition("material '\(material.id)' has no stored original file to process")
        }
        let fileName = original.fileName ?? material.fileName ?? "material"
        let format = try FormatDetection.check(fileName: fileName, mimeType: original.mimeType, data: file)
        let allowance = configuration.expansionAllowance(format, fileBytes: file.count)
        try runner.admit(bytes: file.count + allowance)
        let limit = JobDeadline(configuration.jobTimeout)
        let processing = try await context.call(Store.startProcessing, RecordID(id: material.id))
        let job = IngestJob(
            id: UUID().uuidString, material: processing, format: format, file: file, expansionAllowance: allowance, fileName: fileName,
            charset: FormatDetection.charset(original.mimeType), generateFlashcards: options.generate,
            maxFlashcards: options.max, titleFromDocument: false, limit: limit,
            meta: context.downstreamOptions().meta)
        return try await run(job, wait: request.wait ?? true)
    }

    /// Starts the job; waits for it, or returns the material as it is now.
    private func run(_ job: IngestJob, wait: Bool) async throws -> IngestResult {
        let task = runner.start(job)
        guard wait else { return IngestResult(material: job.material) }
        return try await task.value
    }

    /// The title given, or the file name without its extension.
    private static func title(_ given: String?, fileName: String) throws(BusError) -> String {
        if let given { return try Field.text(given, "title", maximum: StoreLimits.titleLength, trimming: true) }
        let extensionLength = FormatDetection.fileExtension(fileName).count
        let stem = extensionLength > 0 ? String(fileName.dropLast(extensionLength + 1)) : fileName
        return (stem.isEmpty ? fileName : stem).clipped(toScalars: StoreLimits.titleLength)
    }

    private static func options(_ options: IngestOptions?) throws(BusError) -> (generate: Bool, max: Int) {
        let max = try Field.int(options?.maxFlashcards, "options.maxFlashcards", in: 1...500, default: 50)
        return (options?.generateFlashcards ?? true, max)
    }
}
