/// What the offline recognizer is measured on: sentences a house and a student hear, and the
/// built-in voice commands, said by espeak-ng (scripts/bench-ai's `wer_*` and `commands_*`
/// figures, and the offline transcription tests).
public enum SpeechSamples {
    /// Ten house sentences (the tests' round trip, and `wer_<provider>`).
    public static let sentences = [
        "please turn on the lights in the living room", "the front door is locked", "i would like to hear some music",
        "the kitchen faucet is leaking again", "what is the weather like today", "set the heating to twenty degrees",
        "the smoke alarm needs a new battery", "close the garage door please", "remind me to water the garden tomorrow",
        "the washing machine has finished",
    ]

    /// Fifty sentences of 3 to 12 words: the ten above, the issue's, and a student's day.
    public static let freeSpeech = sentences + [
        "the weather is nice today", "please open the door", "turn off the kitchen lights", "good morning everyone",
        "what time is it", "call my mother tonight", "the children are asleep upstairs", "i will be home at six",
        "we need more milk and bread", "the cat wants to go outside", "lock all the windows before you leave",
        "my homework is due on friday", "i studied biology for two hours", "the test starts at nine tomorrow morning",
        "read the next chapter before class", "photosynthesis happens in the leaves of plants", "water boils at one hundred degrees",
        "the french revolution began in seventeen eighty nine", "can you explain this math problem again",
        "the library closes early on sunday", "please play the news on the radio", "the dishwasher is still running",
        "the oven is hot so be careful", "dinner will be ready in ten minutes", "it is raining outside so take an umbrella",
        "the heart pumps blood through the body", "a triangle has three sides", "the earth moves around the sun once a year",
        "my brother forgot his keys again", "the bus was late this morning", "i feel tired after the long day",
        "let us go for a walk in the park", "the printer in the office is out of paper", "please remind me about the dentist appointment",
        "the baby is sleeping in the bedroom", "someone is ringing the doorbell", "the garden needs water in the evening",
        "we are having friends over for dinner on saturday", "the light in the hallway is broken", "thank you very much for your help",
    ]

    /// A spoken command and what it must come back as.
    public struct Command: Sendable {
        public var said: String
        public var intent: String
        public var parameters: [String: String]
    }

    /// One command for each built-in pattern, slots filled from ``commandVocabulary``.
    public static let commands: [Command] = [
        Command(said: "show materials", intent: "showMaterials", parameters: [:]),
        Command(said: "show biology materials", intent: "showSubjectMaterials", parameters: ["subject": "biology"]),
        Command(said: "go to the settings", intent: "navigate", parameters: ["destination": "settings"]),
        Command(said: "open the calendar", intent: "open", parameters: ["destination": "calendar"]),
        Command(said: "create a flashcard about photosynthesis", intent: "createFlashcard", parameters: ["topic": "photosynthesis"]),
        Command(said: "add a material from the camera", intent: "addMaterial", parameters: ["source": "the camera"]),
        Command(said: "schedule study session", intent: "scheduleStudySession", parameters: [:]),
        Command(said: "what's my progress today", intent: "progressToday", parameters: [:]),
        Command(said: "show recent materials", intent: "recentMaterials", parameters: [:]),
        Command(said: "list upcoming tasks", intent: "upcomingTasks", parameters: [:]),
        Command(said: "start a study session", intent: "startStudySession", parameters: [:]),
        Command(said: "review my flashcards", intent: "reviewFlashcards", parameters: [:]),
        Command(said: "mark task as done", intent: "completeTask", parameters: [:]),
    ]

    /// What an app would send as the `prompt` of a spoken command: its subjects, screens,
    /// sources and a few topics (27 phrases; the five the commands say are among them).
    public static let commandVocabulary = """
        biology, chemistry, physics, math, history, geography, english, french, spanish, music, art, economics, settings, \
        calendar, profile, home, library, timer, camera, photos, files, notes, photosynthesis, cells, atoms, fractions, gravity
        """
}
