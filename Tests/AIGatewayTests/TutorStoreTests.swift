import AIGatewayCore
import BrokerCore
import Bus
import Contracts
import Foundation
import TestSupport
import Testing
import Wire

@Suite("The tutor flow with the real store and the local provider: context from store, conversations stored", .serialized)
struct TutorStoreTests {
    static let greenQuestion = "Why do most plants look green?"
    /// A sentence only the photosynthesis material holds.
    static let greenAnswer = "Chlorophyll absorbs red and blue light and reflects green light, which is why most plants look green."

    @Test("chat with a materialId streams an answer drawn from the material, and the conversation stores the question, then the answer")
    func materialAnswerStored() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                let material = try await store.material("Photosynthesis", chunks: photosynthesisChunks)
                let conversation = try await store.conversation()
                let created = EventCollector(try world.client.subscribe([Store.messageCreated.name]))
                let events = try await world.subscribe(requestId: "tutor-1")
                let response = try await world.chat(ChatRequest(
                    requestId: "tutor-1", messages: question(Self.greenQuestion), stream: true,
                    conversationId: conversation.id, materialId: material.id))
                #expect(response.text.contains(Self.greenAnswer))
                try await eventually("final event") { GatewayWorld.chatEvents(events).last?.kind == .final }
                let received = GatewayWorld.chatEvents(events)
                #expect(received.filter { $0.kind == .token }.compactMap(\.delta).joined() == response.text)
                #expect(received.last?.text == response.text)

                let stored = try await store.messages(conversation.id)
                #expect(stored.map(\.role) == [.user, .assistant])
                #expect(stored.map(\.text) == [Self.greenQuestion, response.text])
                #expect(stored.map(\.id) == (response.messageIds ?? []) + [response.answerMessageId].compactMap { $0 })
                try await eventually("message.created for both messages") {
                    created.all.compactMap { try? WireCoding.decode(ConversationMessage.self, from: $0.payload) }
                        .filter { $0.conversationId == conversation.id }.count == 2
                }
            }
        }
    }

    @Test("a conversation about a material answers from it when the request names no material")
    func conversationMaterialIsTheDefaultContext() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                let material = try await store.material("Photosynthesis", chunks: photosynthesisChunks)
                let conversation = try await store.conversation(materialId: material.id)
                let response = try await world.chat(ChatRequest(messages: question(Self.greenQuestion), conversationId: conversation.id))
                #expect(response.text.contains(Self.greenAnswer))
            }
        }
    }

    @Test("a setId brings the set's cards into the context: the tutor quotes the matching card")
    func setCards() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                let set = try await store.call(Store.createSet, FlashcardSetCreate(name: "Cell parts"))
                _ = try await store.call(Store.createFlashcard, FlashcardCreate(front: "Which organelle makes ATP?", back: "The mitochondrion", setId: set.id))
                _ = try await store.call(Store.createFlashcard, FlashcardCreate(front: "What holds the genes?", back: "The nucleus", setId: set.id))
                let response = try await world.chat(ChatRequest(messages: question("Which organelle makes ATP?"), setId: set.id))
                #expect(response.text.contains("From your flashcards:\n• Which organelle makes ATP? — The mitochondrion"))
                #expect(!response.text.contains("nucleus"))
                #expect(response.messageIds == nil && response.answerMessageId == nil, "nothing is stored without a conversation")
            }
        }
    }

    @Test("a long material is read page by page in reading order up to 256 KiB; what lies beyond is left out")
    func longMaterialIsCut() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                // 700 chunks of 400 bytes: chunk 550 is on the second page of chunks.list and
                // within 256 KiB; chunk 690 starts beyond it.
                var chunks = (0..<700).map { index in
                    "Filler paragraph \(index) about nothing in particular".padding(toLength: 400, withPad: " lorem ipsum", startingAt: 0)
                }
                chunks[550] = "The zebrafish marker glows bright orange under ultraviolet light.".padding(toLength: 400, withPad: " ", startingAt: 0)
                chunks[690] = "The axolotl enzyme regenerates damaged tissue within days.".padding(toLength: 400, withPad: " ", startingAt: 0)
                let material = try await store.material("Long notes", chunks: chunks)
                let early = try await world.chat(ChatRequest(messages: question("What colour is the zebrafish marker?"), materialId: material.id))
                #expect(early.text.contains("The zebrafish marker glows bright orange under ultraviolet light."))
                let late = try await world.chat(ChatRequest(messages: question("What does the axolotl enzyme do?"), materialId: material.id))
                #expect(!late.text.contains("regenerates"))
            }
        }
    }

    @Test("another user's conversation, material or set is NOT_FOUND naming the field, and nothing is stored")
    func otherUsersRecords() async throws {
        try await withGateway { world in
            try await withStore(world) { store in
                let material = try await store.material("Photosynthesis", chunks: photosynthesisChunks)
                let conversation = try await store.conversation()
                let set = try await store.call(Store.createSet, FlashcardSetCreate(name: "Cells"))
                let asked = question(Self.greenQuestion)
                let byConversation = await world.chatFailure(ChatRequest(messages: asked, conversationId: conversation.id), user: "u2")
                #expect(byConversation == .notFound("field 'conversationId': conversation '\(conversation.id)' not found"))
                let byMaterial = await world.chatFailure(ChatRequest(messages: asked, materialId: material.id), user: "u2")
                #expect(byMaterial == .notFound("field 'materialId': material '\(material.id)' not found"))
                let bySet = await world.chatFailure(ChatRequest(messages: asked, setId: set.id), user: "u2")
                #expect(bySet == .notFound("field 'setId': set '\(set.id)' not found"))
                #expect(try await store.messages(conversation.id).isEmpty)
            }
        }
    }

    @Test("with store down, chat with ids is UNAVAILABLE naming store, while chat without them still answers")
    func storeDown() async throws {
        try await withGateway { world in
            let store = try await RunningStore.start(on: world)
            let conversation = try await store.conversation()
            await store.stop()
            try await eventually("the broker has no store worker", timeout: .seconds(30)) {
                let reply = try? await world.client.callRaw(service: BrokerProtocol.mmiService, method: "store", payload: Data())
                return reply.map { String(decoding: $0.payload, as: UTF8.self) == "404" } ?? false
            }
            let failure = await world.chatFailure(ChatRequest(messages: question(Self.greenQuestion), conversationId: conversation.id))
            #expect(failure?.code == .unavailable)
            #expect(failure?.message.contains("store") == true)
            let plain = try await world.chat(ChatRequest(messages: question(Self.greenQuestion),
                                                         context: StudyContext(chunks: [TextChunk(id: "c", text: Fixtures.photosynthesis)])))
            #expect(plain.text.contains(Self.greenAnswer) && plain.messageIds == nil)
        }
    }

    @Test("bad store references are INVALID_ARGUMENT naming the field, before store is asked")
    func validation() async throws {
        try await withGateway { world in
            let asked = question(Self.greenQuestion)
            let both = await world.chatFailure(ChatRequest(messages: asked, context: StudyContext(title: "x"), materialId: "m1"))
            #expect(both?.code == .invalidArgument && both?.message.hasPrefix("field 'context' cannot be given with materialId or setId") == true)
            let badId = await world.chatFailure(ChatRequest(messages: asked, conversationId: "not a store id"))
            #expect(badId?.code == .invalidArgument && badId?.message.hasPrefix("field 'conversationId' must be an id") == true)
            let tooLong = await world.chatFailure(ChatRequest(
                messages: [ChatMessage(role: .user, content: String(repeating: "a", count: StoreLimits.textLength + 1))], conversationId: "c1"))
            #expect(tooLong?.code == .invalidArgument && tooLong?.message == "field 'messages[0].content' must be at most \(StoreLimits.textLength) characters")
        }
    }
}
