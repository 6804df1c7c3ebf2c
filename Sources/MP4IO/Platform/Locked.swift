import Foundation

/// A value behind a lock: the one way MP4IO shares mutable state that is not an actor's
/// (between tasks, URLSession's delegate queue, socket waits and dispatch queues). Mutate
/// through `withLock` only, in place (never copy a large value out, change it and store it
/// back); never wait for another task while holding it. Its `@unchecked Sendable` is sound
/// because every access to the value is under the lock.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
