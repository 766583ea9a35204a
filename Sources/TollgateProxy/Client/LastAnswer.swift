/// A client connection's last answer to one question, with the key it was for: asked again with
/// the same key, the answer is given again instead of made anew. A kept-alive client mostly asks
/// the same (one host, one HTTP version, one cache outcome), and the answers cost a parse, a
/// string or a field list each time.
struct LastAnswer<Key: Equatable, Value> {
    private var last: (key: Key, value: Value)?

    init() {}

    /// The answer for `key`: the last one when it was for the same key, else `make`'s, kept.
    mutating func value<Failure: Error>(for key: Key, make: () throws(Failure) -> Value) throws(Failure) -> Value {
        if let last, last.key == key { return last.value }
        let value = try make()
        last = (key, value)
        return value
    }
}
