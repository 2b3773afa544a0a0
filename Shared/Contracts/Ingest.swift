import Foundation
import Wire

// ingest: the stateless, scaled-out workers that turn an uploaded file into text, chunks, a
// summary, keywords and flashcards, and write the result to the store (docs/services/ingest.md).
// The outcome is the store's durable `material.ingested` or `ingest.failed`; `ingest.progress`
// is ingest's own, non-durable event.

/// The contract of the `ingest` service; call as `bus.call(Ingest.submit, …, options: .init(user:, attachment:))`.
///
/// ```swift
/// let result = try await bus.call(
///     Ingest.submit, IngestSubmit(fileName: "cells.pdf", subjectId: "bio"),
///     options: CallOptions(user: "alice", timeout: .seconds(120), attachment: pdfBytes))
/// print(result.material.status)   // ready
/// ```
public let Ingest = IngestContract()

/// The methods and the event of `ingest`. `ingest.submit`, `submitURL`, `retry` and `cancel` act
/// for the request header's `user`; `ingest.formats` needs none.
public struct IngestContract: ServiceContract {
    /// The service name on the bus.
    public static let serviceName = "ingest"

    public init() {}

    /// Stores the file in the attachment frame and processes it (or returns the existing material
    /// for a file the user already submitted).
    public let submit = Method<IngestSubmit, IngestResult>(
        Self.self, "ingest.submit",
        "Process the file in the attachment frame into a material (text, chunks, summary, keywords, flashcards); the same file twice returns the first material.", audience: .app)
    /// Processes a failed material again from its stored original.
    public let retry = Method<IngestRetry, IngestResult>(
        Self.self, "ingest.retry", "Process a failed (or pending) material again from its stored original file.", audience: .app)
    /// Fetches a web page or file over http(s) and processes it as `submit` does an uploaded file.
    public let submitURL = Method<IngestSubmitURL, IngestResult>(
        Self.self, "ingest.submitURL",
        "Fetch a web page or file over http(s) (public addresses only, at most 5 redirects, the formats' size limits) and process it as ingest.submit does an upload.", audience: .app)
    /// Stops a material's running or queued job; the material ends failed with reason `cancelled`.
    public let cancel = Method<IngestCancel, Material>(
        Self.self, "ingest.cancel",
        "Stop the processing of a material (running or queued): it ends failed with reason 'cancelled' and nothing of the job is stored; a ready or failed one is FAILED_PRECONDITION.", audience: .app)
    /// The formats ingest reads, their size limits and the chunking settings.
    public let formats = Method<Empty, IngestFormats>(
        Self.self, "ingest.formats", "The file formats ingest reads, with extensions, media types and size limits; the chunking settings.", audience: .app)

    /// Progress of one job (not durable: the outcome is the store's material.ingested or ingest.failed).
    public let progress = Topic<IngestProgress>(
        Self.self, "ingest.progress", "A job reached a stage (queued, extracting, chunking, analyzing, saving, ready, failed), with a percentage.")
}

/// The formats ingest reads.
public enum IngestFormat: String, WireEnum {
    case txt, md, html, pdf, docx, csv, tsv, srt, vtt, ics, eml, png, jpeg, wav, mp3, m4a
    /// OpenDocument text, EPUB e-books, PowerPoint (2007 and later) presentations.
    case odt, epub, pptx
    /// Word 97–2003 documents, PowerPoint 97–2003 presentations, Rich Text Format.
    case doc, ppt, rtf
    /// HEIC/HEIF photos (an iPhone camera's default).
    case heic

    /// The store's source kind for a material of this format.
    public var sourceKind: MaterialSourceKind {
        switch self {
        case .txt, .html, .csv, .tsv, .ics, .eml, .epub: .txt
        case .md: .md
        // Subtitles are the transcript of a recording (a lecture video).
        case .srt, .vtt: .video
        case .pdf: .pdf
        // Word processors' and presentation programs' files: the store has no kind of its own for them.
        case .docx, .odt, .pptx, .doc, .ppt, .rtf: .docx
        case .png, .jpeg, .heic: .image
        case .wav, .mp3, .m4a: .audio
        }
    }

    /// The largest file of this format: images 10 MB, anything else (recordings too) 50 MB
    /// (MirrorBuddy's limits and three-hour lectures, the store's ``StoreLimits``).
    public var maxBytes: Int {
        switch sourceKind {
        case .image: StoreLimits.imageBytes
        case .audio: StoreLimits.audioBytes
        default: StoreLimits.materialBytes
        }
    }
}

/// What to make of a material besides its text, chunks, summary and keywords.
public struct IngestOptions: Codable, Sendable, Equatable {
    /// Ask ai-gateway for flashcards linked to their chunks; default true. (CSV/TSV and Anki
    /// files are flashcards already: their rows are imported whatever this says.)
    public var generateFlashcards: Bool?
    /// At most this many generated cards, 1...500; default 50.
    public var maxFlashcards: Int?

    public init(generateFlashcards: Bool? = nil, maxFlashcards: Int? = nil) {
        self.generateFlashcards = generateFlashcards
        self.maxFlashcards = maxFlashcards
    }
}

/// `ingest.submit`: the file is the request's **attachment frame** (never base64 in JSON).
public struct IngestSubmit: Codable, Sendable, Equatable {
    /// The file's name, 1...255 characters; its extension chooses the format (else `mimeType`,
    /// else the file's first bytes).
    public var fileName: String
    /// The file's media type, e.g. `application/pdf`.
    public var mimeType: String?
    /// The material's title; default: the file name without its extension.
    public var title: String?
    /// The subject the material (and its cards) belong to.
    public var subjectId: String?
    public var options: IngestOptions?
    /// `true` (default): reply when the material is ready (or with the error that failed it);
    /// `false`: reply at once with the material (status `processing`) and report through
    /// `ingest.progress`, `material.ingested` and `ingest.failed`.
    public var wait: Bool?

    public init(
        fileName: String, mimeType: String? = nil, title: String? = nil, subjectId: String? = nil, options: IngestOptions? = nil,
        wait: Bool? = nil
    ) {
        self.fileName = fileName
        self.mimeType = mimeType
        self.title = title
        self.subjectId = subjectId
        self.options = options
        self.wait = wait
    }
}

/// `ingest.retry`: processes the material again from the original the store keeps.
public struct IngestRetry: Codable, Sendable, Equatable {
    public var materialId: String
    public var options: IngestOptions?
    /// As in ``IngestSubmit/wait``; default true.
    public var wait: Bool?

    public init(materialId: String, options: IngestOptions? = nil, wait: Bool? = nil) {
        self.materialId = materialId
        self.options = options
        self.wait = wait
    }
}

/// `ingest.submitURL`: the file comes from `url` instead of the attachment frame.
public struct IngestSubmitURL: Codable, Sendable, Equatable {
    /// An absolute `http` or `https` URL, at most 2,048 characters.
    public var url: String
    /// The file's name, 1...255 characters; default: the URL path's last segment (with the
    /// format's extension when it has none ingest knows).
    public var fileName: String?
    /// As in ``IngestSubmit``; default: a title found in the document, else the file name.
    public var title: String?
    public var subjectId: String?
    public var options: IngestOptions?
    /// As in ``IngestSubmit/wait``; default true. The fetch happens before the reply either way.
    public var wait: Bool?

    public init(
        url: String, fileName: String? = nil, title: String? = nil, subjectId: String? = nil, options: IngestOptions? = nil,
        wait: Bool? = nil
    ) {
        self.url = url
        self.fileName = fileName
        self.title = title
        self.subjectId = subjectId
        self.options = options
        self.wait = wait
    }
}

/// `ingest.cancel`: the material whose job to stop.
public struct IngestCancel: Codable, Sendable, Equatable {
    public var materialId: String

    public init(materialId: String) {
        self.materialId = materialId
    }
}

/// What processing stored, when the reply waited for it.
public struct IngestOutcome: Codable, Sendable, Equatable {
    public var format: IngestFormat
    public var sourceDocumentId: String
    public var chunkCount: Int
    /// Generated or imported cards, in the set `setId`.
    public var flashcardIds: [String]
    public var setId: String?
    /// Tasks and study sessions made from a calendar's events (ICS, or an e-mail's ICS attachment).
    public var taskIds: [String]
    public var sessionIds: [String]

    public init(
        format: IngestFormat, sourceDocumentId: String, chunkCount: Int, flashcardIds: [String], setId: String?,
        taskIds: [String] = [], sessionIds: [String] = []
    ) {
        self.format = format
        self.sourceDocumentId = sourceDocumentId
        self.chunkCount = chunkCount
        self.flashcardIds = flashcardIds
        self.setId = setId
        self.taskIds = taskIds
        self.sessionIds = sessionIds
    }
}

/// `ingest.submit` and `ingest.retry` response.
public struct IngestResult: Codable, Sendable, Equatable {
    public var materialId: String
    /// `ready` when the call waited; `processing` when it did not; for a duplicate, the existing
    /// material as it is.
    public var material: Material
    /// The user had submitted this exact file before: `material` is that one, unchanged.
    public var duplicate: Bool
    /// What was stored; present when the call waited and processing ran.
    public var outcome: IngestOutcome?

    public init(material: Material, duplicate: Bool = false, outcome: IngestOutcome? = nil) {
        materialId = material.id
        self.material = material
        self.duplicate = duplicate
        self.outcome = outcome
    }
}

/// One readable format.
public struct IngestFormatInfo: Codable, Sendable, Equatable {
    public var format: IngestFormat
    public var extensions: [String]
    public var mimeTypes: [String]
    public var maxBytes: Int
    public var sourceKind: MaterialSourceKind
    /// What ingest makes of it.
    public var description: String

    public init(format: IngestFormat, extensions: [String], mimeTypes: [String], maxBytes: Int, sourceKind: MaterialSourceKind, description: String) {
        self.format = format
        self.extensions = extensions
        self.mimeTypes = mimeTypes
        self.maxBytes = maxBytes
        self.sourceKind = sourceKind
        self.description = description
    }
}

/// `ingest.formats` response.
public struct IngestFormats: Codable, Sendable, Equatable {
    public var formats: [IngestFormatInfo]
    /// Chunk size aimed at, in characters (Unicode scalars).
    public var chunkTargetCharacters: Int
    /// Characters a chunk repeats from the end of the one before (whole sentences or cues).
    public var chunkOverlapCharacters: Int
    /// A job's hard time limit, in seconds.
    public var jobTimeoutSeconds: Int
    /// A material whose worker was lost ends `failed` at most this many seconds after its
    /// processing started (while any ingest worker runs).
    public var lostWorkerBoundSeconds: Int

    public init(formats: [IngestFormatInfo], chunkTargetCharacters: Int, chunkOverlapCharacters: Int, jobTimeoutSeconds: Int, lostWorkerBoundSeconds: Int) {
        self.formats = formats
        self.chunkTargetCharacters = chunkTargetCharacters
        self.chunkOverlapCharacters = chunkOverlapCharacters
        self.jobTimeoutSeconds = jobTimeoutSeconds
        self.lostWorkerBoundSeconds = lostWorkerBoundSeconds
    }
}

/// Where a job stands.
public enum IngestStage: String, WireEnum {
    /// Stored with the store, waiting for a free slot of the worker.
    case queued
    /// Reading the file: parsing, OCR, transcription.
    case extracting
    /// Cutting the text into chunks.
    case chunking
    /// ai-gateway: summary, keywords, flashcards.
    case analyzing
    /// Writing everything with `materials.put`.
    case saving
    /// Done: the material is ready (`material.ingested` follows from the store).
    case ready
    /// Failed; `message` says why (`ingest.failed` follows from the store).
    case failed
}

/// `ingest.progress` payload.
public struct IngestProgress: Codable, Sendable, Equatable {
    public var materialId: String
    public var userId: String
    public var stage: IngestStage
    /// 0...100, never decreasing within one job.
    public var percent: Int
    /// The failure reason (stage `failed`), or how far a recording's transcription is
    /// ("transcribed 3 of 45 pieces of the recording", stage `extracting`).
    public var message: String?

    public init(materialId: String, userId: String, stage: IngestStage, percent: Int, message: String? = nil) {
        self.materialId = materialId
        self.userId = userId
        self.stage = stage
        self.percent = percent
        self.message = message
    }
}
