import Foundation

/// Extractive summaries by TextRank (Mihalcea & Tarau, 2004): sentences are nodes, edges are
/// weighted by shared content words normalized by sentence length, and PageRank's power
/// iteration finds the most central sentences.
///
/// Kept near-linear for long texts: edges come from an inverted index of word stems (only
/// sentences that share a word are compared), words found in more than a tenth of the sentences add no
/// edges (they tell no sentence apart), each sentence keeps only its ``maxNeighbours`` strongest
/// links, and a text of more than ``blockSize`` candidate sentences is ranked in blocks whose
/// best sentences are then ranked together.
enum Summarizer {
    /// Sentences ranked in one graph at most; larger texts go in blocks.
    static let blockSize = 1500
    /// Each sentence keeps its strongest links to later sentences only, so the graph stays sparse.
    static let maxNeighbours = 20
    static let damping = 0.85

    /// The `maxSentences` most central sentences of `text`, in text order.
    static func summarize(_ text: String, maxSentences: Int) -> [String] {
        let document = TextDocument(text)
        return summarize(document, maxSentences: maxSentences).map { document.text(of: document.sentences[$0]) }
    }

    /// Indexes (into `document.sentences`) of the `maxSentences` most central sentences among
    /// `within` (default: all), in text order.
    static func summarize(_ document: TextDocument, maxSentences: Int, within: Range<Int>? = nil) -> [Int] {
        let graph = SentenceGraph(document: document, range: within ?? 0..<document.sentences.count)
        guard !graph.candidates.isEmpty, maxSentences > 0 else { return [] }
        let centrality = graph.rankInBlocks(keep: max(maxSentences * 3, 30))
        // A paragraph's opening sentence usually states its topic: half again its centrality.
        let scores = centrality.indices.map { centrality[$0] * (graph.opensParagraph[$0] ? 1.5 : 1) }
        let order = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
        var chosen: [Int] = []
        for local in order where chosen.count < maxSentences {
            if chosen.contains(where: { graph.redundant(local, $0) }) { continue }
            chosen.append(local)
        }
        return chosen.map { graph.candidates[$0] }.sorted()
    }
}

/// The sentences worth ranking and their content-word stems.
struct SentenceGraph {
    /// Sentence indexes of the candidates, in text order.
    private(set) var candidates: [Int] = []
    /// Unique content stems of each candidate: `stems[offsets[i]..<offsets[i+1]]`.
    private var stems: [Int32] = []
    private var offsets: [Int] = [0]
    /// log(1 + content words) of each candidate.
    private var lengthNorm: [Double] = []
    /// Whether each candidate is the first one of its paragraph.
    private(set) var opensParagraph: [Bool] = []
    private let stemCount: Int

    /// The sentences of `range` with at least three content words (at least one if none has
    /// three), headings and run-on sentences of more than 80 words left out.
    init(document: TextDocument, range: Range<Int>) {
        self.init(document: document, range: range, minimumContent: 3)
        if candidates.isEmpty { self.init(document: document, range: range, minimumContent: 1) }
    }

    private init(document: TextDocument, range: Range<Int>, minimumContent: Int) {
        stemCount = document.vocabulary.stems.count
        var seen = [Int32](repeating: -1, count: stemCount)
        let tokens = document.tokens
        let isStop = document.vocabulary.isStopword
        let stemOf = document.vocabulary.stemOf
        for index in range {
            let sentence = document.sentences[index]
            guard sentence.kind != .heading, sentence.tokenCount <= 80 else { continue }
            let mark = Int32(candidates.count)
            var content = 0
            let before = stems.count
            for tokenIndex in sentence.tokenRange {
                let token = tokens[tokenIndex]
                if isStop[Int(token.word)] || token.flags.contains(.numeric) || token.end - token.start < 2 { continue }
                content += 1
                let stem = stemOf[Int(token.word)]
                if seen[Int(stem)] != mark {
                    seen[Int(stem)] = mark
                    stems.append(stem)
                }
            }
            guard content >= minimumContent else {
                for stem in stems[before...] { seen[Int(stem)] = -1 }
                stems.removeSubrange(before...)
                continue
            }
            opensParagraph.append(candidates.last.map { document.sentences[$0].paragraph != sentence.paragraph } ?? true)
            candidates.append(index)
            offsets.append(stems.count)
            lengthNorm.append(log(1 + Double(content)))
        }
    }

    private func stems(of local: Int) -> ArraySlice<Int32> { stems[offsets[local]..<offsets[local + 1]] }

    /// Whether candidates `a` and `b` say nearly the same (70 % of the shorter one's words).
    func redundant(_ a: Int, _ b: Int) -> Bool {
        let first = stems(of: a), second = Set(stems(of: b))
        let shared = first.reduce(0) { $0 + (second.contains($1) ? 1 : 0) }
        return Double(shared) >= 0.7 * Double(min(first.count, second.count))
    }

    /// TextRank scores of every candidate; long texts ranked block by block first, then the
    /// `keep` best of each block ranked together (the others keep their block score, scaled
    /// below every finalist).
    func rankInBlocks(keep: Int) -> [Double] {
        let count = candidates.count
        guard count > Summarizer.blockSize else { return rank(Array(0..<count)) }
        var scores = [Double](repeating: 0, count: count)
        var finalists: [Int] = []
        var blockStart = 0
        while blockStart < count {
            let block = Array(blockStart..<min(blockStart + Summarizer.blockSize, count))
            let blockScores = rank(block)
            for (position, local) in block.enumerated() { scores[local] = blockScores[position] * 1e-3 }
            let best = block.indices.sorted { blockScores[$0] > blockScores[$1] }.prefix(keep)
            finalists += best.map { block[$0] }
            blockStart += Summarizer.blockSize
        }
        finalists.sort()
        let finalScores = rank(finalists)
        for (position, local) in finalists.enumerated() { scores[local] = 1 + finalScores[position] }
        return scores
    }

    /// PageRank over the similarity graph of `members` (candidate indexes, ascending).
    func rank(_ members: [Int]) -> [Double] {
        let n = members.count
        guard n > 1 else { return [Double](repeating: 1, count: n) }
        // Inverted index: stem -> members containing it (ascending), as CSR.
        var postingCount = [Int32](repeating: 0, count: stemCount + 1)
        for local in members { for stem in stems(of: local) { postingCount[Int(stem) + 1] += 1 } }
        for index in 1...stemCount { postingCount[index] += postingCount[index - 1] }
        var postingStart = postingCount
        var postings = [Int32](repeating: 0, count: Int(postingCount[stemCount]))
        for (member, local) in members.enumerated() {
            for stem in stems(of: local) {
                postings[Int(postingStart[Int(stem)])] = Int32(member)
                postingStart[Int(stem)] += 1
            }
        }
        // postingStart[s] now ends stem s's list; postingCount[s] starts it. Walk each list
        // with a cursor so every pair is visited once, from its first member.
        var cursor = postingCount
        let maxDocumentFrequency = max(10, n / 10)
        var overlap = [Int32](repeating: 0, count: n)
        var touched: [Int32] = []
        var edgeFrom: [Int32] = [], edgeTo: [Int32] = [], edgeWeight: [Double] = []
        var strongest: [(weight: Double, other: Int32)] = []
        for (member, local) in members.enumerated() {
            for stem in stems(of: local) {
                let s = Int(stem)
                let listStart = Int(postingCount[s]), listEnd = Int(postingStart[s])
                let position = Int(cursor[s])
                cursor[s] += 1
                guard listEnd - listStart <= maxDocumentFrequency else { continue }
                var next = position + 1
                while next < listEnd {
                    let other = Int(postings[next])
                    if overlap[other] == 0 { touched.append(Int32(other)) }
                    overlap[other] += 1
                    next += 1
                }
            }
            strongest.removeAll(keepingCapacity: true)
            for other in touched {
                let o = Int(other)
                strongest.append((Double(overlap[o]) / (lengthNorm[local] + lengthNorm[members[o]]), other))
                overlap[o] = 0
            }
            touched.removeAll(keepingCapacity: true)
            if strongest.count > Summarizer.maxNeighbours { Self.keepLargest(&strongest, Summarizer.maxNeighbours) }
            for (weight, other) in strongest {
                edgeFrom.append(Int32(member))
                edgeTo.append(other)
                edgeWeight.append(weight)
            }
        }
        return pageRank(nodes: n, from: edgeFrom, to: edgeTo, weight: edgeWeight)
    }

    /// Moves the `count` largest weights to the front (quickselect) and drops the rest.
    private static func keepLargest(_ items: inout [(weight: Double, other: Int32)], _ count: Int) {
        var low = 0, high = items.count - 1
        while low < high {
            let pivot = items[(low + high) / 2].weight
            var i = low, j = high
            while i <= j {
                while items[i].weight > pivot { i += 1 }
                while items[j].weight < pivot { j -= 1 }
                if i <= j {
                    items.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if count - 1 <= j { high = j } else if count - 1 >= i { low = i } else { break }
        }
        items.removeLast(items.count - count)
    }

    /// Weighted PageRank on an undirected graph given by its edges.
    private func pageRank(nodes n: Int, from: [Int32], to: [Int32], weight: [Double]) -> [Double] {
        var degree = [Int](repeating: 0, count: n + 1)
        var strength = [Double](repeating: 0, count: n)
        for edge in from.indices {
            degree[Int(from[edge]) + 1] += 1
            degree[Int(to[edge]) + 1] += 1
            strength[Int(from[edge])] += weight[edge]
            strength[Int(to[edge])] += weight[edge]
        }
        for index in 1...n { degree[index] += degree[index - 1] }
        var fill = degree
        var neighbor = [Int32](repeating: 0, count: degree[n])
        var coefficient = [Double](repeating: 0, count: degree[n])
        for edge in from.indices {
            let a = Int(from[edge]), b = Int(to[edge]), w = weight[edge]
            neighbor[fill[a]] = Int32(b); coefficient[fill[a]] = w / strength[b]; fill[a] += 1
            neighbor[fill[b]] = Int32(a); coefficient[fill[b]] = w / strength[a]; fill[b] += 1
        }
        let d = Summarizer.damping
        var score = [Double](repeating: 1, count: n)
        var next = score
        for _ in 0..<100 {
            var change = 0.0
            for node in 0..<n {
                var sum = 0.0
                for slot in degree[node]..<degree[node + 1] { sum += coefficient[slot] * score[Int(neighbor[slot])] }
                next[node] = (1 - d) + d * sum
                change = max(change, abs(next[node] - score[node]))
            }
            swap(&score, &next)
            if change < 1e-4 { break }
        }
        return score
    }
}
