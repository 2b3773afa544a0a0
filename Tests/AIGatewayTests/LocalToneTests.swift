@testable import AIGatewayCore
import Contracts
import Testing

@Suite("Local provider: encouragement, reflection, house thoughts and the extractive tutor")
struct LocalToneTests {
    @Test("encouragement is warm for every combination of numbers: no guilt words, identity when given")
    func encouragementNeverGuilt() {
        for accuracy in [nil, 0.0, 0.2, 0.49, 0.5, 0.74, 0.75, 0.89, 0.9, 1.0] {
            for streak in [nil, 0, 1, 3, 7, 29, 30, 400] {
                for rate in [nil, 0.0, 0.3, 0.6, 1.0] {
                    let request = EncourageRequest(accuracy: accuracy, streak: streak, completionRate: rate, identity: "Consistent Reader")
                    let message = Encouragement.message(request)
                    #expect(ToneGuard.isWarm(message), "\(message)")
                    #expect(message.contains("Consistent Reader"))
                }
            }
        }
    }

    @Test("encouragement reflects the numbers: high accuracy is celebrated with its percentage, a long streak by its length")
    func encouragementNumbers() {
        #expect(Encouragement.message(EncourageRequest(accuracy: 0.95)).contains("95%"))
        #expect(!Encouragement.message(EncourageRequest(accuracy: 0.2)).contains("20%"), "a low score is not quoted back")
        #expect(Encouragement.message(EncourageRequest(streak: 12)).contains("12 days"))
        #expect(Encouragement.message(EncourageRequest(streak: 0)).contains("new streak"))
        #expect(Encouragement.message(EncourageRequest(accuracy: 0.8, name: "Ana")).hasPrefix("Nice work, Ana."))
        #expect(Encouragement.message(EncourageRequest(accuracy: 0.8)) == Encouragement.message(EncourageRequest(accuracy: 0.8)), "stable for the same input")
    }

    @Test("the tone guard catches guilt and shame")
    func toneGuard() {
        #expect(!ToneGuard.isWarm("You failed to review today."))
        #expect(!ToneGuard.isWarm("You missed three days."))
        #expect(!ToneGuard.isWarm("You're falling behind."))
        #expect(ToneGuard.isWarm("Every session reinforces your identity as a learner."))
    }

    @Test("a reflection names the topics and meets difficulty with reassurance")
    func reflection() {
        let hard = Encouragement.reflection("Today I studied mitochondria and cellular respiration. It was really hard and confusing.", identity: "Curious Biologist")
        #expect(hard.contains("mitochondria") || hard.contains("cellular respiration"), "\(hard)")
        #expect(hard.contains("kept going"))
        #expect(hard.contains("Curious Biologist"))
        #expect(ToneGuard.isWarm(hard))
        let joyful = Encouragement.reflection("I finally understood derivatives in calculus, it was fun!", identity: nil)
        #expect(joyful.contains("enjoying"))
        #expect(ToneGuard.isWarm(joyful))
    }

    @Test("a house thought picks category and feeling from the notes")
    func houseThought() {
        let leak = HouseThoughts.thought([
            HouseNote(question: "What needs attention?", answer: "The kitchen faucet has a leak and the bathroom pipe is leaking too."),
            HouseNote(question: "Anything else?", answer: "I'm worried about damp in the basement."),
        ])
        #expect(leak.category == .maintenance)
        #expect(leak.emotion == .concerned)
        #expect(leak.suggestion != nil)
        #expect(leak.context == "What needs attention?", "the note the telling word came from")
        #expect((0...1).contains(leak.confidence) && leak.confidence > 0.5)
        let cozy = HouseThoughts.thought([HouseNote(answer: "I love the cozy fireplace in the living room on winter evenings.")])
        #expect(cozy.category == .comfort)
        #expect(cozy.emotion == .happy)
        #expect(cozy.context == "I love the cozy fireplace in the living room on winter evenings.", "without a question, the answer")
        let vague = HouseThoughts.thought([HouseNote(answer: "Nothing much to say.")])
        #expect(vague.category == .general)
        #expect(vague.confidence < leak.confidence)
    }

    @Test("without a model the tutor says so and answers from the context's best sentences and flashcards")
    func extractiveTutor() {
        let context = StudyContext(chunks: [TextChunk(id: "c", text: Fixtures.photosynthesis)],
                                   flashcards: [ContextFlashcard(front: "Where does the Calvin cycle happen?", back: "In the stroma")])
        let answer = ExtractiveTutor.answer(messages: [ChatMessage(role: .user, content: "Where does the Calvin cycle take place?")], context: context)
        #expect(answer.hasPrefix(ExtractiveTutor.noModel))
        #expect(answer.contains("The Calvin cycle is a series of reactions that takes place in the stroma of the chloroplast."))
        #expect(answer.contains("In the stroma"))
        let followUp = ExtractiveTutor.answer(messages: [
            ChatMessage(role: .user, content: "Tell me about chlorophyll"), ChatMessage(role: .assistant, content: "…"),
            ChatMessage(role: .user, content: "and why is it green?"),
        ], context: context)
        #expect(followUp.contains("Chlorophyll absorbs red and blue light"), "the previous question supplies the topic")
        let nothing = ExtractiveTutor.answer(messages: [ChatMessage(role: .user, content: "Explain quantum tunnelling")], context: context)
        #expect(nothing.contains("couldn't find anything"))
        let noContext = ExtractiveTutor.answer(messages: [ChatMessage(role: .user, content: "Hi")], context: nil)
        #expect(noContext.contains("No language model is configured"))
    }
}
