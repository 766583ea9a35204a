extension String {
    /// ASCII case-insensitive comparison, as header names and tokens need (no Unicode folding).
    @inlinable
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        // Over the contiguous UTF-8 of both (native and small strings have it): no iterators.
        let fast: Bool?? = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in
                for index in 0..<x.count where x[index] != y[index] {
                    let lx = x[index] &- 65 < 26 ? x[index] | 0x20 : x[index]
                    let ly = y[index] &- 65 < 26 ? y[index] | 0x20 : y[index]
                    if lx != ly { return false }
                }
                return true
            }
        }
        if case .some(.some(let equal)) = fast { return equal }
        for (x, y) in zip(a, b) where x != y {
            let lx = x >= 65 && x <= 90 ? x + 32 : x
            let ly = y >= 65 && y <= 90 ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}
