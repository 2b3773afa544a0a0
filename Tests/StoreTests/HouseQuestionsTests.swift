import Bus
import Contracts
import Foundation
import StoreCore
import TestSupport
import Testing
import Wire

@Suite("C11S House: the starter questions a user adopts with one call, and the notes schema version")
struct HouseQuestionsTests {
    @Test("the starter set is listed with the schema version; adopting adds every question once, in one transaction with its events")
    func adoptAll() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let starter = try await world.call(Store.starterQuestions, Empty())
            #expect(starter.version == NotesSchema.version)
            #expect(starter.questions.count >= 6 && Set(starter.questions.map(\.key)).count == starter.questions.count)
            #expect(Set(starter.questions.map(\.category)).isSubset(of: ThoughtCategory.wireValues), "answers feed ai-gateway's house thoughts")
            #expect(starter.questions.map(\.displayOrder) == starter.questions.map(\.displayOrder).sorted())

            let before = try await world.events().count
            let adopted = try await world.call(Store.adoptQuestions, QuestionsAdopt())
            #expect(adopted.version == NotesSchema.version && adopted.existing.isEmpty)
            #expect(adopted.adopted.map(\.id) == starter.questions.map(\.questionId))
            #expect(adopted.adopted.first?.text == starter.questions.first?.text && adopted.adopted.first?.userId == "alice")
            let listed = try await world.call(Store.listQuestions, QuestionList(limit: 100))
            #expect(listed.items.map(\.id) == starter.questions.map(\.questionId), "in display order")
            let events = try await world.events(after: before)
            #expect(events.map(\.topic) == Array(repeating: Store.questionCreated.name, count: starter.questions.count))

            // Answered and edited, then adopted again: nothing changes, nothing is published.
            let name = try #require(adopted.adopted.first)
            _ = try await world.call(Store.updateQuestion, QuestionUpdate(id: name.id, text: "What do you call this house?"))
            _ = try await world.call(Store.createNote, NoteCreate(questionId: name.id, answer: "Maple Cottage"))
            let again = try await world.call(Store.adoptQuestions, QuestionsAdopt())
            #expect(again.adopted.isEmpty && again.existing.count == starter.questions.count)
            #expect(again.existing.first?.text == "What do you call this house?")
            #expect(try await world.events(after: before).count == starter.questions.count + 2)
            let completion = try await world.call(Store.notesCompletion, NotesCompletionRequest())
            #expect(completion.version == NotesSchema.version && completion.answered == 1 && completion.total == starter.questions.count)

            // Another user's questions are their own.
            let bob = try await world.call(Store.adoptQuestions, QuestionsAdopt(keys: ["safety", "heating"]), as: "bob")
            #expect(bob.adopted.map(\.id) == ["house-safety", "house-heating"] && bob.adopted.allSatisfy { $0.userId == "bob" })
            #expect(try await world.call(Store.listQuestions, QuestionList(), as: "bob").items.count == 2)
        }
    }

    @Test("unknown, repeated or too many keys are INVALID_ARGUMENT and adopt nothing; a deleted question comes back")
    func keys() async throws {
        try await withWorld(StoreWorld.start()) { world in
            let unknown = await world.failure(Store.adoptQuestions, QuestionsAdopt(keys: ["safety", "garage"]))
            #expect(unknown?.code == .invalidArgument && unknown?.message.contains("keys[1]") == true)
            #expect(await world.failure(Store.adoptQuestions, QuestionsAdopt(keys: ["name", "name"]))?.code == .invalidArgument)
            #expect(await world.failure(Store.adoptQuestions, QuestionsAdopt(keys: []))?.code == .invalidArgument)
            #expect(await world.failure(Store.adoptQuestions, QuestionsAdopt(keys: Array(repeating: "name", count: 51)))?.code == .invalidArgument)
            #expect(try await world.call(Store.listQuestions, QuestionList()).items.isEmpty)
            #expect(await world.failure(Store.adoptQuestions, QuestionsAdopt(), as: nil)?.code == .invalidArgument, "the user header is required")

            _ = try await world.call(Store.adoptQuestions, QuestionsAdopt(keys: ["memories"]))
            _ = try await world.call(Store.deleteQuestion, RecordID(id: "house-memories"))
            let back = try await world.call(Store.adoptQuestions, QuestionsAdopt(keys: ["memories"]))
            #expect(back.adopted.map(\.id) == ["house-memories"])
        }
    }
}
