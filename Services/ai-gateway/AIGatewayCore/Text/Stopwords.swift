/// English function words and vague everyday words that never make a key term on their own:
/// the NLTK list plus common verbs, quantities and connectives (lower case, apostrophes plain).
enum Stopwords {
    static let english: Set<String> = Set("""
    a about above across actually after afterwards again against ago all almost alone along already also although always \
    am among amongst an and another any anybody anyhow anyone anything anyway anywhere are aren't around as aside ask \
    asked called at away back be became because become becomes becoming been before beforehand behind being below beside \
    besides best better between beyond both brief but by came can can't cannot cant certain certainly clearly come \
    comes could couldn't did didn't do does doesn't doing don't done down during each eg e.g either else elsewhere \
    enough especially etc even ever every everybody everyone everything everywhere exactly example except far few \
    fewer first five for former formerly four from further furthermore gave get gets getting give given gives go \
    goes going gone good got gotten had hadn't has hasn't have haven't having he he'd he'll he's hence her here \
    here's hereafter hereby herein hers herself him himself his how however i i'd i'll i'm i've ie i.e if in \
    indeed inside instead into is isn't it it's its itself just keep keeps kept know known knows last later latter least \
    less let let's like likely little look looks lot lots made mainly make makes making many may maybe me mean \
    means meanwhile might mine more moreover most mostly much must my myself namely near nearly need needs neither \
    never nevertheless new next nine no nobody none nor not nothing now nowhere of off often oh ok okay on once one \
    ones only onto or other others otherwise ought our ours ourselves out over overall own per perhaps please put \
    quite rather really regarding right said same saw say says second see seem seemed seeming seems seen several \
    shall she she'd she'll she's should shouldn't since six so some somebody somehow someone something sometime \
    sometimes somewhat somewhere soon still such sure take taken takes taking tell ten than that that's the their \
    theirs them themselves then thence there there's thereafter thereby therefore therein these they they'd they'll \
    they're they've thing things think third this those though three through throughout thus to together too took \
    toward towards truly try trying twice two under unless until up upon us use used uses using usually various \
    very via want wants was wasn't way ways we we'd we'll we're we've well went were weren't what what's whatever \
    when whence whenever where where's whereas whereby wherever whether which while who who's whoever whole whom \
    whose why will with within without won't would wouldn't yes yet you you'd you'll you're you've your yours \
    yourself yourselves
    """.split(separator: " ").map(String.init))

    /// Whether `word` (lower case) is a stopword.
    static func contains(_ word: String) -> Bool { english.contains(word) }
}

/// A light English stemmer that folds plurals and possessives (Harman's S-stemmer with a few
/// more endings), so "cells", "cell's" and "cell" count as one term. It never strips verb
/// endings: "learning" stays apart from "learn", which keeps key phrases readable.
enum Stemmer {
    static func stem(_ word: String) -> String {
        var word = word
        if word.hasSuffix("'s") { word.removeLast(2) } else if word.hasSuffix("'") { word.removeLast() }
        let count = word.utf8.count
        guard count > 3 else { return word }
        if word.hasSuffix("ies"), !word.hasSuffix("eies"), !word.hasSuffix("aies") { return String(word.dropLast(3)) + "y" }
        for ending in ["sses", "xes", "ches", "shes", "zzes"] where word.hasSuffix(ending) { return String(word.dropLast(2)) }
        if word.hasSuffix("es"), !word.hasSuffix("aes"), !word.hasSuffix("ees"), !word.hasSuffix("oes") { return String(word.dropLast()) }
        if word.hasSuffix("s"), !word.hasSuffix("ss"), !word.hasSuffix("us"), !word.hasSuffix("is") { return String(word.dropLast()) }
        return word
    }
}
