import Bus
import Contracts
import Foundation
import Logging
import Threads
import Wire

/// The steps of one job after its material is `processing`: extract, chunk, analyze (ai-gateway),
/// write (store) — and, when any of them fails, the material marked failed with the reason.
struct Pipeline: Sendable {
    let bus: Bus
    let configuration: IngestConfiguration
    let progress: ProgressReporter
    let writes: StoreWrites
    let enricher: Enricher
    let logger: Logger

    init(bus: Bus, configuration: IngestConfiguration, logger: Logger) {
        self.bus = bus
        self.configuration = configuration
        self.logger = logger
        progress = ProgressReporter(bus: bus, logger: logger)
        writes = StoreWrites(bus: bus)
        enricher = Enricher(
            bus: bus, summarySentences: configuration.summarySentences, keywordCount: configuration.keywordCount,
            inputBytes: configuration.aiInputBytes)
    }

    /// Processes the job (its slot already taken) and stores the result.
    func process(_ job: IngestJob) async throws(BusError) -> IngestResult {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "studybus-ingest-\(job.id)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var stages = StageTimes(progress: progress, job: job)
        stages.enter(.extracting)
        let budget = ExtractionBudget(expansionAllowance: job.expansionAllowance, compressionRatio: configuration.maxCompressionRatio)
        var context = ExtractionContext(tools: configuration.tools, scratch: scratch, transcribe: transcriber(for: job), budget: budget)
        context.recordings = configuration.recordings
        context.extendDeadline = { extra in job.limit.extend(by: extra) }
        context.transcribed = { [progress] pieces, total in progress.transcribed(job, pieces: pieces, of: total) }
        let document = try await Extraction.extract(job.format, job.file, fileName: job.fileName, charset: job.charset, context: context)
        try checkCancellation()

        stages.enter(.chunking)
        let settings = configuration.chunking
        let limit = Int(bus.configuration.maxMessageBytes)
        let chunks = try await offThePool { () throws(BusError) in
            let chunks = try Chunker.chunks(of: document, settings: settings)
            try StoreWrites.checkFits(chunks, messageLimit: limit, fileName: job.fileName)
            return chunks
        }
        try checkCancellation()

        stages.enter(.analyzing)
        let enrichment = try await enricher.enrich(document, chunks: chunks, job: job)
        try checkCancellation()

        stages.enter(.saving)
        let request = putRequest(job, document: document, chunks: chunks, enrichment: enrichment)
        try checkCancellation()
        let stored = try await writes.put(request, job: job)
        stages.enter(.ready)
        if logger.logLevel <= .debug { logger.debug("job stages", metadata: stages.metadata) }
        return IngestResult(material: stored.material, outcome: IngestOutcome(
            format: job.format, sourceDocumentId: stored.sourceDocument.id, chunkCount: stored.chunkIds.count,
            flashcardIds: stored.flashcardIds, setId: stored.setId, taskIds: stored.taskIds ?? [], sessionIds: stored.sessionIds ?? []))
    }

    /// Marks the job's material failed with `error`'s message (publishing `ingest.failed` from
    /// the store). Returns the material if it turned out to be ready after all (the job's
    /// `materials.put` committed although its reply was lost to a time-out).
    func fail(_ job: IngestJob, _ error: BusError) async -> Material? {
        progress.report(job, .failed, message: error.message)
        do throws(BusError) {
            // The job's own deadline may be what failed it: this write gets time of its own.
            _ = try await writes.call(Store.failMaterial, MaterialFail(id: job.material.id, reason: error.message), job: job, deadline: Date() + 10)
        } catch where error.code == .failedPrecondition {
            if let material = try? await bus.call(Store.getMaterial, RecordID(id: job.material.id), options: CallOptions(user: job.user)), material.status == .ready {
                return material
            }
        } catch {
            // The sweep fails it later ("worker lost"), within the documented bound.
            logger.error("cannot mark the material failed", metadata: ["material": "\(job.material.id)", "error": "\(error)"])
        }
        return nil
    }

    private func putRequest(_ job: IngestJob, document: ExtractedDocument, chunks: [Chunk], enrichment: Enrichment) -> MaterialPut {
        var cards = enrichment.cards
        if !document.cards.isEmpty {
            let chunkOfBlock = ChunkIndex(chunks)
            cards = document.cards.map { card in
                GeneratedFlashcard(front: card.front, back: card.back, kind: card.kind, tags: card.tags,
                                   chunkOrdinal: chunkOfBlock.ordinal(containing: document.blocks[card.block].bytes.lowerBound))
            }
        }
        let foundTitle = document.title.map { $0.clipped(toScalars: StoreLimits.titleLength) }.flatMap { $0.isEmpty ? nil : $0 }
        let title = job.titleFromDocument ? foundTitle : nil
        return MaterialPut(
            materialId: job.material.id, title: title, summary: enrichment.summary, keywords: enrichment.keywords,
            sourceDocument: SourceDocumentInput(
                title: (foundTitle ?? job.fileName).clipped(toScalars: StoreLimits.titleLength), pageCount: document.pageCount,
                durationSeconds: document.durationSeconds, language: document.language),
            chunks: Self.chunkInputs(chunks),
            flashcards: cards, newSetName: cards.isEmpty ? nil : title ?? job.material.title, onlyIfProcessing: true,
            attemptStartedAt: job.material.processingStartedAt, tasks: Self.calendarTasks(document.calendar, material: job.material.id),
            sessions: Self.calendarSessions(document.calendar, material: job.material.id))
    }

    /// The chunks as the store takes them.
    static func chunkInputs(_ chunks: [Chunk]) -> [ChunkInput] {
        chunks.map { chunk in
            ChunkInput(ordinal: chunk.ordinal, text: chunk.text, pageNumber: chunk.page, startSeconds: chunk.startSeconds,
                       endSeconds: chunk.endSeconds, startOffset: chunk.startOffset, endOffset: chunk.endOffset,
                       section: chunk.section.map { $0.clipped(toScalars: StoreLimits.titleLength) })
        }
    }

    /// A calendar's to-dos as tasks. Their ids come from the material and the entry's UID, so an
    /// `ingest.retry` of the material finds them instead of adding them again.
    static func calendarTasks(_ items: [CalendarItem], material: String) -> [StudyTaskCreate]? {
        let tasks = items.compactMap { item -> StudyTaskCreate? in
            guard case .task(let due, let isDone) = item.kind else { return nil }
            return StudyTaskCreate(id: StoreWrites.entryID(material: material, key: item.key), title: item.title, dueAt: due, isDone: isDone)
        }
        return tasks.isEmpty ? nil : tasks
    }

    /// A calendar's events as study sessions, with ids as for tasks.
    static func calendarSessions(_ items: [CalendarItem], material: String) -> [StudySessionCreate]? {
        let sessions = items.compactMap { item -> StudySessionCreate? in
            guard case .session(let start, let end) = item.kind else { return nil }
            return StudySessionCreate(id: StoreWrites.entryID(material: material, key: item.key), startedAt: start, endedAt: end)
        }
        return sessions.isEmpty ? nil : sessions
    }

    /// Transcription through ai-gateway for this job's user and time.
    private func transcriber(for job: IngestJob) -> @Sendable (Data, String, String?) async throws(BusError) -> TranscribeResponse {
        let bus = self.bus
        return { audio, fileName, contentType throws(BusError) in
            do throws(BusError) {
                // The job's time, not the bus's default 30 s: the offline recognizer takes about
                // real time, one piece after another, so a lecture's last pieces wait for the first.
                return try await bus.call(
                    AIGateway.transcribe, TranscribeRequest(fileName: fileName, contentType: contentType),
                    options: CallOptions(
                        user: job.user, timeout: max(job.deadline - .now, .milliseconds(1)), deadline: job.wallDeadline, meta: job.meta,
                        attachment: audio))
            } catch {
                throw BusError(error.code, "ai-gateway could not transcribe '\(fileName)' (\(error.code.name): \(error.message))", details: error.details)
            }
        }
    }

    private func checkCancellation() throws(BusError) {
        if Task.isCancelled { throw .cancelled("the job was cancelled") }
    }
}

/// Which chunk holds a byte of the text: the first (chunks overlap) whose range contains it.
struct ChunkIndex {
    private let ends: [Int]
    private let ordinals: [Int]

    init(_ chunks: [Chunk]) {
        ends = chunks.map(\.bytes.upperBound)
        ordinals = chunks.map(\.ordinal)
    }

    func ordinal(containing byte: Int) -> Int? {
        var low = 0, high = ends.count
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] <= byte { low = middle + 1 } else { high = middle }
        }
        return low < ordinals.count ? ordinals[low] : nil
    }
}

/// Reports each stage as the job enters it, and keeps how long each took (for the debug log
/// that shows where a job's time goes).
struct StageTimes {
    let progress: ProgressReporter
    let job: IngestJob
    private var current: (stage: IngestStage, since: ContinuousClock.Instant)?
    private(set) var metadata: Logger.Metadata

    init(progress: ProgressReporter, job: IngestJob) {
        self.progress = progress
        self.job = job
        metadata = ["material": "\(job.material.id)"]
    }

    mutating func enter(_ stage: IngestStage) {
        let now = ContinuousClock.now
        if let current { metadata["\(current.stage.rawValue)Ms"] = "\((now - current.since).wholeMicroseconds / 1000)" }
        current = (stage, now)
        progress.report(job, stage)
    }
}
