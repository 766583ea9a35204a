/// "Did you mean" suggestions for a misspelt key or value.
enum KeySuggestion {
    /// The closest of `candidates` to `word` within an edit distance of 2 (adjacent transpositions
    /// count as one edit), ignoring case; failing that, a candidate of 4 characters or more that
    /// the word starts with (`listeners` → `listen`); nil when none is that close.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let lowered = word.lowercased()
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(Array(lowered.unicodeScalars), Array(candidate.lowercased().unicodeScalars))
            if distance <= 2, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.candidate }
        return candidates.first { $0.count >= 4 && lowered.hasPrefix($0.lowercased()) }
    }

    /// `; did you mean "x"?` or `; expected one of: a, b, c`.
    static func hint(for word: String, in candidates: [String], listing: Bool = true) -> String {
        if let suggestion = closest(to: word, in: candidates) { return "; did you mean \"\(suggestion)\"?" }
        return listing && !candidates.isEmpty ? "; expected one of: \(candidates.joined(separator: ", "))" : ""
    }

    /// Optimal string alignment distance; words longer than 64 scalars are never close.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.count > 64 || b.count > 64 { return .max }
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
