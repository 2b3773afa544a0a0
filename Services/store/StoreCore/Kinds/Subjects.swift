import Contracts
import Foundation
import Wire

extension SubjectCreate: CreateRequest {}
extension SubjectUpdate: UpdateRequest {}

/// Subjects: deleting one leaves its materials, sets, cards, sessions and tasks without subject;
/// with `cascade` its materials are deleted instead.
enum SubjectRecords: RecordKind {
    typealias Delete = SubjectDelete

    static func make(_ request: SubjectCreate, _ changes: Changes) throws -> Subject {
        Subject(
            id: try StoreID.givenOrNew(request.id), userId: changes.user,
            name: try Field.text(request.name, "name", maximum: StoreLimits.titleLength),
            color: try Field.optionalText(request.color, "color", maximum: StoreLimits.labelLength),
            createdAt: changes.now, updatedAt: changes.now)
    }

    static func apply(_ request: SubjectUpdate, to record: Subject, _ changes: Changes) throws -> Subject {
        var subject = record
        if let name = request.name { subject.name = try Field.text(name, "name", maximum: StoreLimits.titleLength) }
        if let color = request.color { subject.color = try Field.optionalText(color, "color", maximum: StoreLimits.labelLength) }
        return subject
    }

    static func remove(_ subject: Subject, as request: SubjectDelete, _ changes: Changes) throws {
        if request.cascade == true {
            for material in try changes.all(Material.self, where: "subject_id = ?", [subject.id]) {
                try MaterialRecords.remove(material, changes)
            }
        }
        try remove(subject, changes)
    }

    static func remove(_ subject: Subject, _ changes: Changes) throws {
        try changes.unlink(Material.self, \.subjectId, column: "subject_id", from: subject.id)
        try changes.unlink(FlashcardSet.self, \.subjectId, column: "subject_id", from: subject.id)
        try changes.unlink(Flashcard.self, \.subjectId, column: "subject_id", from: subject.id)
        try changes.unlink(StudySession.self, \.subjectId, column: "subject_id", from: subject.id)
        try changes.unlink(StudyTask.self, \.subjectId, column: "subject_id", from: subject.id)
        try changes.delete(subject)
    }

    static func query(_ request: SubjectList) throws -> ListQuery {
        ListQuery(orderBy: "name")
    }
}
