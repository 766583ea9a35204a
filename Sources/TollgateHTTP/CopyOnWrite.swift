/// Keeps a value in one shared box, copied only when a shared box is changed.
///
/// Messages pass through many hands on the proxy's hot path (the task, its metrics, the cache
/// rules, the delegate), and copying a struct of strings and arrays retains each of them: a
/// request head copy was five reference-count operations, a stored response's a dozen. Behind
/// this wrapper a copy is one retain, and value semantics stay: changing a copy whose box is
/// shared copies the value first.
///
/// Inlinable, so that users in other modules get it specialized to their value type (unspecialized,
/// every access went through the generic value witnesses).
@propertyWrapper
@frozen
public struct CopyOnWrite<Value> {
    @usableFromInline
    final class Box {
        @usableFromInline var value: Value
        @inlinable init(_ value: Value) { self.value = value }
    }

    @usableFromInline var box: Box

    /// Boxes `wrappedValue`.
    @inlinable
    public init(wrappedValue: Value) {
        box = Box(wrappedValue)
    }

    /// The value; borrowed for reading, copied before a change when the box is shared.
    @inlinable
    public var wrappedValue: Value {
        _read { yield box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }
}

// A box is never changed while shared (see `wrappedValue`), so sending a copy is sending the value.
extension CopyOnWrite: @unchecked Sendable where Value: Sendable {}

extension CopyOnWrite: Equatable where Value: Equatable {
    @inlinable
    public static func == (lhs: CopyOnWrite, rhs: CopyOnWrite) -> Bool {
        lhs.box === rhs.box || lhs.box.value == rhs.box.value
    }
}

extension CopyOnWrite: Hashable where Value: Hashable {
    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(box.value)
    }
}
