import Foundation
import TollgateHTTP

/// The header fields a thread last made to serve a stored response: the stored fields with `Age`
/// set to a given value.
///
/// Why: the stored fields are shared (by the decoded-record memo, and by every hit on the entry),
/// so setting `Age` copied them on every hit; but a hot object's age changes once a second while
/// it is served thousands of times in that second. One memo per thread (a pthread key's value):
/// no lock, and a proxy's hits of one object land on the same few event loops.
final class ServedFieldsMemo {
    /// The stored fields the memo's fields were made from. Holding them keeps their storage
    /// alive, so no other list can be given the same storage while it is compared against.
    private var source = HeaderFields()
    private var age = -1
    private var fields = HeaderFields()

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // A thread's memo is released when the thread ends.
        let created = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<ServedFieldsMemo>.fromOpaque(pointer).release() }
        }
        precondition(created == 0, "pthread_key_create failed: \(created)")
        return key
    }()

    /// This thread's memo, made on first use.
    private static var current: ServedFieldsMemo {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<ServedFieldsMemo>.fromOpaque(pointer).takeUnretainedValue()
        }
        let memo = ServedFieldsMemo()
        pthread_setspecific(key, Unmanaged.passRetained(memo).toOpaque())
        return memo
    }

    /// `stored` with every `Age` line replaced by one of value `age`: this thread's last answer
    /// when it was for the same stored fields (the same storage) and the same age.
    static func fields(_ stored: HeaderFields, age: Int) -> HeaderFields {
        let memo = current
        if memo.age == age, memo.source.sharesStorage(with: stored) { return memo.fields }
        var fields = stored
        fields.replaceOrAdd(name: .age, value: String(age))
        memo.source = stored
        memo.age = age
        memo.fields = fields
        return fields
    }
}
