import Foundation

/// What the offline recognizer is given: the decoded 16 kHz mono samples with the silence
/// before and after the speech cut to a margin, the level brought to one loudness, and for free
/// speech the margin filled up with silence where the upload had less.
///
/// The margin is the same whatever silence the user left, so that the result does not depend on
/// it. Free speech is recognized better with silence first (the language model's search
/// starts and ends in silence, and speech that starts at the first sample, as espeak-ng's and
/// clips cut by an app do, lost its first word); the grammar search did worse with silence
/// added, so commands get only the silence they had. The level is normalized here rather than
/// by ffmpeg's silence filter, whose thresholds are absolute: a quiet recording would be cut
/// away whole. Figures: docs/benchmarks.md, "Offline speech".
enum SpeechConditioning {
    /// 10 ms frames at 16 kHz.
    static let frameSamples = 160
    /// Frames quieter than this (dB below the loudest frame) are silence at the edges.
    static let silenceBelowPeakDecibels = 35.0
    /// A frame whose RMS stays under this (about -60 dBFS) is never speech, however quiet the
    /// rest: digital silence and hiss are not made loud.
    static let absoluteFloorRMS = 33.0
    /// The loudest frame's peak after normalization (about -3 dBFS).
    static let targetPeak = 23_000.0
    /// The most the level is raised, 30 dB: a whisper is lifted, noise is not made speech.
    static let maximumGain = 31.6
    /// Silence kept or put back before and after the speech.
    static let marginSeconds = 0.3

    /// The samples to recognize, and where they start in the upload (seconds), so that the
    /// segments' times stay those of the upload.
    struct Conditioned: Sendable, Equatable {
        var samples: [Int16]
        var offset: Double
    }

    /// `samples` conditioned; with `padding`, silence put back up to the margin.
    static func condition(_ samples: [Int16], sampleRate: Int, padding: Bool = true) -> Conditioned {
        let frames = samples.count / frameSamples
        guard frames > 0 else { return Conditioned(samples: samples, offset: 0) }
        var energies = [Double](repeating: 0, count: frames)
        for frame in 0..<frames {
            var sum = 0.0
            for sample in samples[(frame * frameSamples)..<((frame + 1) * frameSamples)] { sum += Double(sample) * Double(sample) }
            energies[frame] = (sum / Double(frameSamples)).squareRoot()
        }
        let loudest = energies.max() ?? 0
        let threshold = max(absoluteFloorRMS, loudest * pow(10, -silenceBelowPeakDecibels / 20))
        guard let first = energies.firstIndex(where: { $0 >= threshold }), let last = energies.lastIndex(where: { $0 >= threshold }) else {
            // Nothing but silence: given as it is, the recognizer hears nothing.
            return Conditioned(samples: samples, offset: 0)
        }
        let margin = Int(marginSeconds * Double(sampleRate))
        let start = max(0, first * frameSamples - margin)
        let end = min(samples.count, (last + 1) * frameSamples + margin)
        let speech = samples[start..<end]
        let peak = Double(speech.reduce(0) { max($0, abs(Int($1))) })
        let gain = peak > 0 ? min(maximumGain, targetPeak / peak) : 1
        // Silence put back where the upload had less than the margin.
        let before = padding ? max(0, margin - first * frameSamples) : 0
        let after = padding ? max(0, (last + 1) * frameSamples + margin - samples.count) : 0
        var output = [Int16](repeating: 0, count: before)
        output.reserveCapacity(before + speech.count + after)
        for sample in speech { output.append(Int16(clamping: Int((Double(sample) * gain).rounded()))) }
        output.append(contentsOf: repeatElement(0, count: after))
        return Conditioned(samples: output, offset: Double(start - before) / Double(sampleRate))
    }
}
