extension OriginPoolState {
    /// What the pool is to do after an event: usually one action or none, at most a few.
    ///
    /// The first two are kept inline: an array of one action per released connection was an
    /// allocation per pass-through request. Compared and written like an array
    /// (`== [.park(connection: 1)]`).
    struct Actions: Equatable, Sequence, ExpressibleByArrayLiteral {
        private var head: (Action?, Action?) = (nil, nil)
        private var more: [Action] = []

        init() {}

        init(arrayLiteral elements: Action...) {
            for element in elements { append(element) }
        }

        /// Appends an action.
        mutating func append(_ action: Action) {
            if head.0 == nil {
                head.0 = action
            } else if head.1 == nil {
                head.1 = action
            } else {
                more.append(action)
            }
        }

        /// The first action, if any.
        var first: Action? { head.0 }

        /// Removes the first action (there must be one).
        mutating func removeFirst() {
            precondition(head.0 != nil, "no action to remove")
            head = (head.1, more.isEmpty ? nil : more.removeFirst())
        }

        static func + (lhs: Actions, rhs: Actions) -> Actions {
            var result = lhs
            for action in rhs { result.append(action) }
            return result
        }

        static func == (lhs: Actions, rhs: Actions) -> Bool {
            lhs.elementsEqual(rhs)
        }

        func makeIterator() -> Iterator { Iterator(actions: self) }

        struct Iterator: IteratorProtocol {
            let actions: Actions
            var index = 0

            mutating func next() -> Action? {
                defer { index += 1 }
                switch index {
                case 0: return actions.head.0
                case 1: return actions.head.1
                default: return index - 2 < actions.more.count ? actions.more[index - 2] : nil
                }
            }
        }
    }
}
