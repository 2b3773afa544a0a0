import Bus
import Contracts
import Foundation
import HTTPClient
import ServiceKit
import ToolProcess
import Wire

/// How chunks are cut (docs/services/ingest.md, "Chunking").
public struct ChunkingSettings: Sendable, Equatable {
    /// The size a chunk aims at, in characters (Unicode scalars); chunks are at most this long
    /// unless one word is longer.
    public var targetCharacters: Int
    /// Characters a chunk repeats from the end of the previous one (at most a quarter of the target).
    public var overlapCharacters: Int

    /// The defaults: 1,000 characters, 150 of overlap.
    public init(targetCharacters: Int = 1000, overlapCharacters: Int = 150) {
        self.targetCharacters = targetCharacters
        self.overlapCharacters = overlapCharacters
    }
}

/// Where the external tools are and how long they may run.
public struct ToolSettings: Sendable {
    /// `pdftotext` (Debian package poppler-utils): a name looked up in `PATH`, or a path.
    public var pdftotext: String
    /// `pdftoppm` (poppler-utils), to render the pages of scanned PDFs for OCR.
    public var pdftoppm: String
    /// `tesseract` (Debian packages tesseract-ocr, tesseract-ocr-eng).
    public var tesseract: String
    /// Tesseract's languages, e.g. `eng` or `eng+ita` (each needs its tesseract-ocr-LANG package).
    public var ocrLanguages: String
    /// `catdoc` (Debian package catdoc): the text of Word 97–2003 and RTF files.
    public var catdoc = "catdoc"
    /// `catppt` (catdoc): the text of PowerPoint 97–2003 files.
    public var catppt = "catppt"
    /// `heif-convert` (libheif-examples): HEIC/HEIF photos to PNG for OCR.
    public var heifConvert = "heif-convert"
    /// `ffmpeg` (Debian package ffmpeg): finds a recording's silences and cuts it into pieces.
    public var ffmpeg = "ffmpeg"
    /// The longest one run of a tool may take; it is killed then.
    public var timeout: Duration
    /// What one run of a tool may use (its resource limits).
    public var limits: ToolLimits

    /// The Debian tools by name, English OCR, 60 s a run, the default limits.
    public init(
        pdftotext: String = "pdftotext", pdftoppm: String = "pdftoppm", tesseract: String = "tesseract", ocrLanguages: String = "eng",
        catdoc: String = "catdoc", catppt: String = "catppt", heifConvert: String = "heif-convert", ffmpeg: String = "ffmpeg",
        timeout: Duration = .seconds(60), limits: ToolLimits = ToolLimits()
    ) {
        self.catdoc = catdoc
        self.catppt = catppt
        self.heifConvert = heifConvert
        self.ffmpeg = ffmpeg
        self.pdftotext = pdftotext
        self.pdftoppm = pdftoppm
        self.tesseract = tesseract
        self.ocrLanguages = ocrLanguages
        self.timeout = timeout
        self.limits = limits
    }
}

/// How recordings are split and transcribed (docs/services/ingest.md, "Recordings and lectures").
public struct RecordingSettings: Sendable, Equatable {
    /// The longest recording transcribed, in seconds (`INGEST_AUDIO_MAX_MINUTES`, 180).
    public var maximumSeconds: Double = 3 * 3600
    /// The longest piece one `transcribe` gets, in seconds (`INGEST_AUDIO_PIECE_SECONDS`, 240):
    /// at most ai-gateway's offline limit of 300 s. A recording no longer than this (and within
    /// ai-gateway's 5 MiB) is sent whole.
    public var pieceSeconds: Double = 240
    /// Pieces of one recording transcribed at once (`INGEST_TRANSCRIBE_CONCURRENCY`, 4).
    public var concurrency = 4
    /// What a job may take beyond `jobTimeout` per minute of recording
    /// (`INGEST_JOB_SECONDS_PER_AUDIO_MINUTE`, 60: the offline recognizer's pace on one core).
    public var jobTimePerMinute: Duration = .seconds(60)
    /// A silence is quieter than this, in dB below full scale, for at least `minimumSilenceSeconds`.
    public var silenceDecibels = -35
    public var minimumSilenceSeconds = 0.5

    public init() {}
}

/// How `ingest.submitURL` fetches: where it may connect, how long it may take, how many
/// redirects it follows.
public struct URLFetchSettings: Sendable, Equatable {
    /// Networks reachable besides public addresses (`INGEST_URL_ALLOW_NETWORKS`).
    public var allowedNetworks: [IPNetwork] = []
    /// Connecting (name resolution included) must finish within this, per request.
    public var connectTimeout: Duration = .seconds(10)
    /// The whole fetch, redirects included, must finish within this.
    public var timeout: Duration = .seconds(60)
    /// Redirects followed, each checked as the first URL was.
    public var maxRedirects = 5

    public init() {}
}

/// Everything an ingest worker reads from its environment, read in one place.
public struct IngestConfiguration: ServiceConfiguration {
    public static let serviceName = IngestContract.serviceName

    /// Requests the worker takes at once from the broker (`INGEST_CREDIT`).
    public var credit = 16
    /// Jobs processed at once (`INGEST_CONCURRENCY`); more wait in the worker's queue.
    public var concurrency = 4
    /// Jobs that may wait in the queue before submits are refused with RESOURCE_EXHAUSTED.
    public var queueLimit = 256
    /// Bytes the worker holds at once for running and queued jobs — each job's file and what it
    /// may expand to (``expansionAllowance(_:fileBytes:)``); a submit beyond it is refused with
    /// RESOURCE_EXHAUSTED, unless the worker holds nothing (one file up to 50 MB always fits).
    public var memoryBudgetBytes = 1024 * 1024 * 1024
    /// The most bytes one job may unpack (the XML of a Word document's zip) or take from tools
    /// (pdftotext's text); reserved in the memory budget with the file (``expansionAllowance(_:fileBytes:)``).
    public var maxExpansionBytes = 128 * 1024 * 1024
    /// The most a zip entry may inflate per compressed byte, and a job's file as a whole (its
    /// allowance is at most this many times its size): beyond it the file is taken for a bomb.
    public var maxCompressionRatio = 100
    public var chunking = ChunkingSettings()
    public var tools = ToolSettings()
    /// A job's hard limit, from the moment its material went `processing` (queueing included).
    public var jobTimeout: Duration = .seconds(120)
    /// A material `processing` for longer than this has lost its worker; must exceed
    /// `jobTimeout`, so that no live worker's job is taken for lost.
    public var stuckAfter: Duration = .seconds(150)
    /// How often each worker looks for materials whose worker was lost.
    public var sweepInterval: Duration = .seconds(30)
    /// On graceful shutdown, how long running jobs may still take before they are stopped
    /// (within the 20 s a service has to stop).
    public var shutdownGrace: Duration = .seconds(15)
    /// Sentences asked of `summarize`.
    public var summarySentences = 5
    /// Terms asked of `keywords`.
    public var keywordCount = 10
    /// The most text sent to `summarize` and `keywords` (longer documents: chunks sampled
    /// evenly across them); at most ai-gateway's 2 MiB.
    public var aiInputBytes = 256 * 1024
    public var urlFetch = URLFetchSettings()
    public var recordings = RecordingSettings()

    /// The defaults of docs/services/ingest.md.
    public init() {}

    /// The bytes a job may unpack or take from tools, reserved with its file in the memory budget:
    /// for a Word document, an e-mail (its attachments) or a PDF, `maxCompressionRatio` times the
    /// file (at least 1 MiB) up to `maxExpansionBytes`; for an image 1 MiB (OCR's text), for a
    /// recording 4 MiB (ffmpeg's list of silences); none for text, which expands nothing. Never more than the memory budget.
    public func expansionAllowance(_ format: IngestFormat, fileBytes: Int) -> Int {
        let mebibyte = 1024 * 1024
        let allowance: Int
        switch format {
        case .docx, .eml, .pdf, .odt, .epub, .pptx, .doc, .ppt, .rtf:
            let (scaled, overflow) = fileBytes.multipliedReportingOverflow(by: maxCompressionRatio)
            allowance = min(maxExpansionBytes, overflow ? .max : max(mebibyte, scaled))
        case .png, .jpeg, .heic:
            allowance = min(maxExpansionBytes, mebibyte)
        case .wav, .mp3, .m4a:
            // ffmpeg's lines about the silences: at most one per 0.5 s of a three-hour recording, 130 bytes each.
            allowance = min(maxExpansionBytes, 4 * mebibyte)
        case .txt, .md, .html, .csv, .tsv, .srt, .vtt, .ics:
            allowance = 0
        }
        return min(allowance, memoryBudgetBytes)
    }

    /// A material whose worker was lost ends `failed` at most this long after its processing
    /// started, as long as any ingest worker runs (the sweep's age bound plus one interval).
    public var lostWorkerBound: Duration { stuckAfter + sweepInterval }

    /// Reads `INGEST_*` variables (docs/services/ingest.md has the table).
    /// - Throws: `INVALID_ARGUMENT` naming a variable with a bad value.
    public init(environment: Environment) throws(BusError) {
        self.init()
        credit = try environment.int("INGEST_CREDIT", default: credit, in: 1...1024)
        concurrency = try environment.int("INGEST_CONCURRENCY", default: concurrency, in: 1...256)
        queueLimit = try environment.int("INGEST_QUEUE_LIMIT", default: queueLimit, in: 0...100_000)
        memoryBudgetBytes = try environment.int("INGEST_MEMORY_BUDGET_MB", default: 1024, in: 1...1_048_576) * 1024 * 1024
        maxExpansionBytes = try environment.int("INGEST_MAX_INFLATED_MB", default: 128, in: 1...65_536) * 1024 * 1024
        maxCompressionRatio = try environment.int("INGEST_MAX_COMPRESSION_RATIO", default: 100, in: 2...100_000)
        let target = try environment.int("INGEST_CHUNK_TARGET_CHARS", default: 1000, in: 100...50_000)
        let overlap = try environment.int("INGEST_CHUNK_OVERLAP_CHARS", default: min(150, target / 4), in: 0...(target / 4))
        chunking = ChunkingSettings(targetCharacters: target, overlapCharacters: overlap)
        tools = ToolSettings(
            pdftotext: environment.string("INGEST_PDFTOTEXT", default: "pdftotext"),
            pdftoppm: environment.string("INGEST_PDFTOPPM", default: "pdftoppm"),
            tesseract: environment.string("INGEST_TESSERACT", default: "tesseract"),
            ocrLanguages: environment.string("INGEST_OCR_LANGUAGES", default: "eng"),
            catdoc: environment.string("INGEST_CATDOC", default: "catdoc"),
            catppt: environment.string("INGEST_CATPPT", default: "catppt"),
            heifConvert: environment.string("INGEST_HEIF_CONVERT", default: "heif-convert"),
            ffmpeg: environment.string("INGEST_FFMPEG", default: "ffmpeg"),
            timeout: .seconds(try environment.int("INGEST_TOOL_TIMEOUT_SECONDS", default: 60, in: 1...3600)),
            limits: ToolLimits(
                memoryBytes: try environment.int("INGEST_TOOL_MEMORY_MB", default: 1024, in: 64...1_048_576) * 1024 * 1024,
                cpuSeconds: try environment.int("INGEST_TOOL_CPU_SECONDS", default: 60, in: 1...86_400),
                fileBytes: try environment.int("INGEST_TOOL_MAX_FILE_MB", default: 64, in: 1...1_048_576) * 1024 * 1024,
                openFiles: try environment.int("INGEST_TOOL_OPEN_FILES", default: 64, in: 16...65_536)))
        jobTimeout = .seconds(try environment.int("INGEST_JOB_TIMEOUT_SECONDS", default: 120, in: 1...86_400))
        let stuckSeconds = try environment.int("INGEST_STUCK_AFTER_SECONDS", default: 150, in: 1...86_400)
        stuckAfter = .seconds(stuckSeconds)
        guard stuckAfter > jobTimeout else {
            throw .invalidArgument(
                "environment variable INGEST_STUCK_AFTER_SECONDS (\(stuckSeconds)) must exceed INGEST_JOB_TIMEOUT_SECONDS, or a live worker's job could be taken for lost")
        }
        sweepInterval = .seconds(try environment.int("INGEST_SWEEP_INTERVAL_SECONDS", default: 30, in: 1...86_400))
        shutdownGrace = .seconds(try environment.int("INGEST_SHUTDOWN_GRACE_SECONDS", default: 15, in: 0...18))
        summarySentences = try environment.int("INGEST_SUMMARY_SENTENCES", default: 5, in: 1...20)
        keywordCount = try environment.int("INGEST_KEYWORDS", default: 10, in: 1...50)
        urlFetch.allowedNetworks = try IPNetwork.list(environment.optionalString("INGEST_URL_ALLOW_NETWORKS"), variable: "INGEST_URL_ALLOW_NETWORKS")
        urlFetch.connectTimeout = .seconds(try environment.int("INGEST_URL_CONNECT_TIMEOUT_SECONDS", default: 10, in: 1...300))
        urlFetch.timeout = .seconds(try environment.int("INGEST_URL_TIMEOUT_SECONDS", default: 60, in: 1...3600))
        urlFetch.maxRedirects = try environment.int("INGEST_URL_MAX_REDIRECTS", default: 5, in: 0...20)
        recordings.maximumSeconds = Double(try environment.int("INGEST_AUDIO_MAX_MINUTES", default: 180, in: 1...1440) * 60)
        recordings.pieceSeconds = Double(try environment.int(
            "INGEST_AUDIO_PIECE_SECONDS", default: 240, in: 20...Int(AIGatewayLimits.offlineAudioSeconds)))
        recordings.concurrency = try environment.int("INGEST_TRANSCRIBE_CONCURRENCY", default: 4, in: 1...64)
        recordings.jobTimePerMinute = .seconds(try environment.int("INGEST_JOB_SECONDS_PER_AUDIO_MINUTE", default: 60, in: 0...3600))
        aiInputBytes = try environment.int("INGEST_AI_INPUT_KB", default: 256, in: 1...(AIGatewayLimits.textBytes / 1024)) * 1024
    }
}
