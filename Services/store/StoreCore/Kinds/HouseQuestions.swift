import Bus
import Contracts
import Foundation
import Wire

/// C11S House's starter questions about the home: what the house should know to talk about
/// itself (its name, rooms, what needs care, heating, safety, memories). A user adopts them with
/// one call (`questions.adopt`) and then owns them like any question: edits, answers, deletes.
///
/// Their categories are those of ai-gateway's house thoughts, so the answers (`notes`) feed
/// `thought` directly.
enum HouseQuestions {
    static let starter: [StarterQuestion] = [
        StarterQuestion(key: "name", text: "What should the house be called?", category: "general", displayOrder: 10, isRequired: true,
                        hint: "A name the house can use for itself, like the one on the gate or one the family uses."),
        StarterQuestion(key: "rooms", text: "Which rooms are there, and which one is used the most?", category: "general", displayOrder: 20,
                        isRequired: true, hint: nil),
        StarterQuestion(key: "repairs", text: "What needs a repair or a check soon?", category: "maintenance", displayOrder: 30, isRequired: true,
                        hint: "A dripping tap, a sticking door, a filter or a boiler service that is due."),
        StarterQuestion(key: "heating", text: "How is the home heated and cooled, and where is the thermostat?", category: "energy",
                        displayOrder: 40, isRequired: false, hint: "Boiler, heat pump, radiators, stove, air conditioning."),
        StarterQuestion(key: "utilities", text: "Who supplies the electricity, gas and water?", category: "energy", displayOrder: 50,
                        isRequired: false, hint: "Providers and meter locations help when something stops working."),
        StarterQuestion(key: "safety", text: "Where are the smoke alarms, the fire extinguisher and the main water valve?", category: "safety",
                        displayOrder: 60, isRequired: true, hint: nil),
        StarterQuestion(key: "comfort", text: "Which spot feels the most comfortable, and what would make another one better?",
                        category: "comfort", displayOrder: 70, isRequired: false, hint: nil),
        StarterQuestion(key: "memories", text: "Which moment in this home would you like it to remember?", category: "memories",
                        displayOrder: 80, isRequired: false, hint: "A first evening, a party, a pet, a project finished together."),
    ]

    static var starterQuestions: StarterQuestions { StarterQuestions(version: NotesSchema.version, questions: starter) }

    /// Adds the starter questions `request` names (all by default) that the user does not have
    /// yet, in `changes`' transaction; those already there are returned as they are.
    /// - Throws: `INVALID_ARGUMENT` for an unknown or repeated key, or more than 50.
    static func adopt(_ request: QuestionsAdopt, _ changes: Changes) throws -> QuestionsAdopted {
        var chosen = starter
        if let keys = request.keys {
            try Field.count(keys, "keys", in: 1...50)
            let known = Dictionary(uniqueKeysWithValues: starter.map { ($0.key, $0) })
            var seen: Set<String> = []
            chosen = try keys.enumerated().map { index, key throws(BusError) in
                guard let question = known[key] else {
                    throw Field.invalid("keys[\(index)]", "must be a starter question's key (\(starter.map(\.key).joined(separator: ", "))), got '\(key.prefix(64))'")
                }
                guard seen.insert(key).inserted else { throw Field.invalid("keys[\(index)]", "repeats '\(key)'") }
                return question
            }
        }
        var adopted: [Question] = [], existing: [Question] = []
        for starter in chosen {
            if let question = try changes.find(Question.self, starter.questionId) {
                existing.append(question)
                continue
            }
            let question = Question(
                id: starter.questionId, userId: changes.user, text: starter.text, category: starter.category, displayOrder: starter.displayOrder,
                isRequired: starter.isRequired, hint: starter.hint, createdAt: changes.now, updatedAt: changes.now)
            try changes.insert(question)
            adopted.append(question)
        }
        return QuestionsAdopted(version: NotesSchema.version, adopted: adopted, existing: existing)
    }
}
