import Foundation
import Wire

// Search, export and multi-device sync.

// MARK: - Search

/// What `search` looks in.
public enum SearchKind: String, WireEnum {
    /// Note chunks (material text).
    case chunk
    case flashcard
    /// Q&A notes (the answer, and the question it answers).
    case note
}

/// `search`: full-text search (SQLite FTS5, bm25 ranking) over the user's chunks, flashcards and
/// notes. `query` is words and `"quoted phrases"`; every one must match (a word also matches its
/// stem: `learning` finds `learned`); a trailing `*` on a word makes it a prefix.
public struct SearchRequest: Codable, Sendable, Equatable {
    /// 1…500 characters with at least one word, at most 32 words and phrases.
    public var query: String
    /// Default: all kinds; at most 3 entries.
    public var kinds: [SearchKind]?
    public var subjectId: String?
    public var materialId: String?
    /// 1…100, default 20.
    public var limit: Int?
    public var cursor: String?
    /// Markers around matched words in snippets, at most 32 bytes of UTF-8 each; default
    /// `<mark>` and `</mark>`.
    public var highlightOpen: String?
    public var highlightClose: String?
    public init(
        query: String, kinds: [SearchKind]? = nil, subjectId: String? = nil, materialId: String? = nil, limit: Int? = nil,
        cursor: String? = nil, highlightOpen: String? = nil, highlightClose: String? = nil
    ) {
        self.query = query
        self.kinds = kinds
        self.subjectId = subjectId
        self.materialId = materialId
        self.limit = limit
        self.cursor = cursor
        self.highlightOpen = highlightOpen
        self.highlightClose = highlightClose
    }
}

/// One search result.
public struct SearchHit: Codable, Sendable, Equatable {
    public var kind: SearchKind
    /// The chunk's, card's or note's id.
    public var id: String
    /// Relevance: bm25 negated, so higher is better; hits come in descending order.
    public var score: Double
    /// The best matching fragment with matches between the highlight markers: at most 300
    /// characters of text and 16 matches.
    public var snippet: String
    /// The card's front, the question of a note, the material's title for a chunk; cut at 200
    /// characters.
    public var title: String?
    public var materialId: String?
    public var subjectId: String?
    public var setId: String?
    public var questionId: String?
    public var pageNumber: Int?
    public var startSeconds: Double?
    public init(
        kind: SearchKind, id: String, score: Double, snippet: String, title: String? = nil, materialId: String? = nil,
        subjectId: String? = nil, setId: String? = nil, questionId: String? = nil, pageNumber: Int? = nil, startSeconds: Double? = nil
    ) {
        self.kind = kind
        self.id = id
        self.score = score
        self.snippet = snippet
        self.title = title
        self.materialId = materialId
        self.subjectId = subjectId
        self.setId = setId
        self.questionId = questionId
        self.pageNumber = pageNumber
        self.startSeconds = startSeconds
    }
}

/// `search` response, best first: at most `limit` × 10 KiB + 1 KiB of JSON.
public struct SearchResponse: Codable, Sendable, Equatable {
    public var hits: [SearchHit]
    public var nextCursor: String?
    public init(hits: [SearchHit], nextCursor: String? = nil) {
        self.hits = hits
        self.nextCursor = nextCursor
    }
}

// MARK: - Export

/// What `export` writes.
public enum ExportContent: String, WireEnum {
    case flashcards
    case studySessions
    /// A printable study report (format `pdf` only): the user's sessions and cards reviewed,
    /// the scheduler's streak and mastery per set.
    case report
}

/// The file format of an export.
public enum ExportFormat: String, WireEnum {
    /// A JSON array of the records as the API returns them.
    case json
    /// RFC 4180 CSV (CRLF line ends) with a header row; tags joined by `;`.
    case csv
    /// Anki's plain-text import: tab-separated front, back, tags (space-separated, spaces inside
    /// a tag become `_`), after the header lines `#separator:tab`, `#html:false`,
    /// `#deck:<name>`, `#tags column:3`; a field with a tab, newline or `"` is quoted with `"`
    /// (inner quotes doubled). Flashcards only.
    case anki
    /// An Anki package (`application/zip`, always in the attachment frame): `collection.anki2`
    /// in Anki's schema 11 with one deck, a Basic note per card, each card's review state and
    /// its review log, and `media` (`{}`). Flashcards only.
    case apkg
    /// A PDF (`application/pdf`, always in the attachment frame). Flashcards: printable cards,
    /// a grid of 2 × 4 per page, each page of fronts followed by its backs mirrored for
    /// long-edge duplex printing, dashed cut lines. `report`: the study report.
    case pdf
}

/// The paper a PDF export is laid out for.
public enum ExportPaper: String, WireEnum {
    /// 210 × 297 mm.
    case a4
    /// 8.5 × 11 in.
    case letter
}

/// `export`.
public struct ExportRequest: Codable, Sendable, Equatable {
    public var content: ExportContent
    public var format: ExportFormat
    /// Flashcards: only this set's / material's / subject's. Sessions: only this subject's.
    public var setId: String?
    public var materialId: String?
    public var subjectId: String?
    /// Anki deck name; default the set's name, else `StudyBus`.
    public var deckName: String?
    /// PDF only: the paper, default `a4`.
    public var paper: ExportPaper?
    public init(
        content: ExportContent, format: ExportFormat, setId: String? = nil, materialId: String? = nil, subjectId: String? = nil, deckName: String? = nil,
        paper: ExportPaper? = nil
    ) {
        self.content = content
        self.format = format
        self.setId = setId
        self.materialId = materialId
        self.subjectId = subjectId
        self.deckName = deckName
        self.paper = paper
    }
}

/// `export` response. Up to 64 KiB the file is in `content`; larger files, and every PDF, are in
/// the reply's attachment frame and `content` is absent.
public struct ExportResult: Codable, Sendable, Equatable {
    public var format: ExportFormat
    /// `application/json`, `text/csv` or `text/plain`, with `; charset=utf-8`; `application/zip`;
    /// `application/pdf`.
    public var contentType: String
    /// A suggested file name, e.g. `flashcards.csv`, `report.pdf`.
    public var fileName: String
    public var itemCount: Int
    public var byteCount: Int
    public var content: String?
    public var inAttachment: Bool
    public init(format: ExportFormat, contentType: String, fileName: String, itemCount: Int, byteCount: Int, content: String?, inAttachment: Bool) {
        self.format = format
        self.contentType = contentType
        self.fileName = fileName
        self.itemCount = itemCount
        self.byteCount = byteCount
        self.content = content
        self.inAttachment = inAttachment
    }
}

// MARK: - Anki package import

/// `flashcards.importApkg`: the `.apkg` file is the request's attachment frame.
public struct ApkgImportRequest: Codable, Sendable, Equatable {
    /// The file's name, for messages (optional, at most 255 characters).
    public var fileName: String?
    public init(fileName: String? = nil) { self.fileName = fileName }
}

/// `flashcards.importApkg` response.
public struct ApkgImportResult: Codable, Sendable, Equatable {
    /// The sets the package's decks became (a deck's set is found again by its name on a later import).
    public var setIds: [String]
    /// Notes in the package.
    public var notes: Int
    /// Flashcards written now.
    public var created: Int
    /// Flashcards an earlier import of the same notes (Anki's note guid) had written already.
    public var alreadyImported: Int
    /// Notes without a front once their HTML was stripped, left out.
    public var skipped: Int
    /// Reviews handed to the scheduler to replay (for cards it had not replayed before).
    public var reviews: Int
    public init(setIds: [String], notes: Int, created: Int, alreadyImported: Int, skipped: Int, reviews: Int) {
        self.setIds = setIds
        self.notes = notes
        self.created = created
        self.alreadyImported = alreadyImported
        self.skipped = skipped
        self.reviews = reviews
    }
}

// MARK: - Sync

/// The kinds of record that sync carries.
public enum SyncKind: String, WireEnum {
    case subject, material, flashcard, set, question, note, conversation, message, session, task
}

/// One change of one store record (``SyncChangeOf``). On push, `record` is the kind's create
/// payload (`SubjectCreate`, `FlashcardCreate`, …; its `id` may be omitted); on pull, the stored
/// record (`Subject`, `Flashcard`, …).
public typealias SyncChange = SyncChangeOf<SyncKind>

/// `sync.push`: a device's changes, applied last-write-wins in one transaction. For each record
/// the change with the later `updatedAt` wins; at equal times a delete beats an edit, and
/// between two edits the greater `deviceId` wins (changes made through the API have device "").
/// A losing change is reported `superseded` and changes nothing. A deleted record leaves a
/// tombstone, so an older edit arriving later does not bring it back; a newer one does.
/// Materials are pushed only as edits of existing materials (`MaterialUpdate` fields) and deletes.
public typealias SyncPushRequest = SyncPushRequestOf<SyncKind>

/// The outcome of one pushed change, in push order.
public typealias SyncPushResult = SyncPushResultOf<SyncKind>

/// `sync.push` response.
public typealias SyncPushResponse = SyncPushResponseOf<SyncKind>

/// `sync.pull`: every change since `cursor` (absent: from the beginning), each record once in
/// its latest state, in the order of the changes.
public typealias SyncPullRequest = SyncPullRequestOf<SyncKind>

/// `sync.pull` response.
public typealias SyncPullResponse = SyncPullResponseOf<SyncKind>
