import Bus
import Contracts
import Foundation
import Wire

/// The `ingest.*` methods: `submit` and `retry` check the request, store the file (or find it
/// stored) and start a job; `formats` says what a job reads and how long it may take.
struct JobMethods: Sendable {
    let runner: JobRunner
    let configuration: IngestConfiguration

    static func register(_ handlers: Handlers<IngestService>) {
        handlers.handle(Ingest.submit) { service, request, context in try await service.jobs.submit(request, context) }
        handlers.handle(Ingest.retry) { service, request, context in try await service.jobs.retry(request, context) }
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
        let format = try FormatDetection.check(fileName: fileName, mimeType: request.mimeType, data: file)
        let allowance = configuration.expansionAllowance(format, fileBytes: file.count)
        try runner.admit(bytes: file.count + allowance)
        let (deadline, wallDeadline) = jobDeadline()
        let mimeType = request.mimeType ?? FormatDetection.catalog.first { $0.format == format }?.mimeTypes.first
        let upload = try await context.call(Store.uploadMaterial, MaterialUpload(
            title: title, subjectId: request.subjectId, sourceKind: format.sourceKind, fileName: fileName, mimeType: mimeType, status: .processing),
            attachment: file)
        if upload.duplicate { return IngestResult(material: upload.material, duplicate: true) }
        let job = IngestJob(
            id: UUID().uuidString, material: upload.material, format: format, file: file, expansionAllowance: allowance, fileName: fileName, generateFlashcards: options.generate,
            maxFlashcards: options.max, titleFromDocument: request.title == nil, deadline: deadline, wallDeadline: wallDeadline,
            meta: context.downstreamOptions().meta)
        return try await run(job, wait: request.wait ?? true)
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
        let (deadline, wallDeadline) = jobDeadline()
        let processing = try await context.call(Store.startProcessing, RecordID(id: material.id))
        let job = IngestJob(
            id: UUID().uuidString, material: processing, format: format, file: file, expansionAllowance: allowance, fileName: fileName, generateFlashcards: options.generate,
            maxFlashcards: options.max, titleFromDocument: false, deadline: deadline, wallDeadline: wallDeadline,
            meta: context.downstreamOptions().meta)
        return try await run(job, wait: request.wait ?? true)
    }

    /// Starts the job; waits for it, or returns the material as it is now.
    private func run(_ job: IngestJob, wait: Bool) async throws -> IngestResult {
        let task = runner.start(job)
        guard wait else { return IngestResult(material: job.material) }
        return try await task.value
    }

    /// The job's hard limit, counted from now (before its material goes `processing`).
    private func jobDeadline() -> (ContinuousClock.Instant, Date) {
        let seconds = Double(configuration.jobTimeout.components.seconds)
        return (ContinuousClock.now + configuration.jobTimeout, Date().addingTimeInterval(seconds))
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
