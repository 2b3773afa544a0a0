/// Sentences a house hears, for measuring recognition: espeak-ng says them, a transcription
/// provider writes them down, and the word error rate compares (scripts/bench-ai's
/// `wer_<provider>`, and the offline transcription test).
public enum SpeechSamples {
    public static let sentences = [
        "please turn on the lights in the living room", "the front door is locked", "i would like to hear some music",
        "the kitchen faucet is leaking again", "what is the weather like today", "set the heating to twenty degrees",
        "the smoke alarm needs a new battery", "close the garage door please", "remind me to water the garden tomorrow",
        "the washing machine has finished",
    ]
}
