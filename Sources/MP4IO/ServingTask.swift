import Dispatch

/// Starts the tasks of serving (a connection, a body's stream, an origin fetch, a resource's
/// opening, a prefetch, the player's loads) on a serial dispatch queue of their own instead
/// of Swift's shared cooperative pool.
///
/// The pool has one thread per core (two on a 2-core machine). Work that keeps them busy (an
/// app's parsing, a test run's long synchronous tests) would otherwise hold every request of
/// a player until it ends: in CI's ASan suite, the in-process servers answered nothing for
/// 60 s while two corpus tests held both threads (thread dumps taken during the stall; 3 of
/// 7 runs). A serial queue gets a thread when it has work, whatever the pool is doing.
///
/// The preference is kept by what runs inside such a task: its structured child tasks, the
/// actors it calls (default actors run on the caller's preferred executor), its sleeps and
/// continuations. An unstructured `Task {}` started inside it is not: it goes back to the
/// pool. Serving code starts its tasks here (`ServingTaskTests` holds every pool thread and
/// requires answers).
///
/// Before macOS 15 / iOS 18 (no task executors) the tasks are detached onto the pool. There,
/// the calls that can block for long leave it by other means: socket waits run on each
/// connection's own queue (``SocketConnection``), and a cache commit's flush through
/// ``offPool(_:)``. Preads of cached bytes and the entry's table lock (held by another process
/// for one table write) still run on the pool there. `offPool`'s queue path is run here by
/// forcing it (``offPoolDispatches``); the pool itself on iOS 16/17 is not.
enum ServingTask {
    /// Tests only: ``offPool(_:)`` takes the path it takes before macOS 15 / iOS 18.
    package static let offPoolDispatches = Locked(false)

    /// Whether serving tasks run on queues of their own (task executors), not on the pool.
    static var hasOwnExecutors: Bool {
        if offPoolDispatches.withLock({ $0 }) { return false }
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) { return true }
        return false
    }

    /// Runs `body`, which may block for long (a drive flush), where it holds no thread of the
    /// shared pool: inline in a serving task that has its own executor, else on a dispatch
    /// queue while the task waits.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        if hasOwnExecutors { return try body() }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Marks the queues of ``QueueExecutor``s.
    static let queueKey = DispatchSpecificKey<Bool>()

    /// Whether the caller runs on a serving task's own queue, where it may block a while (a
    /// socket wait): only the task that owns the queue (and its child tasks) waits meanwhile,
    /// no thread of the shared pool, and no hop to another thread and back is paid.
    static var isOnOwnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) == true }

    /// Starts `operation`, which cannot fail.
    @discardableResult
    static func start<T: Sendable>(_ operation: sending @escaping () async -> T) -> Task<T, Never> {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            let executor = QueueExecutor.take()
            return Task(executorPreference: executor) {
                defer { QueueExecutor.putBack(executor) }
                return await operation()
            }
        }
        return Task.detached { await operation() }
    }

    /// A serving queue that plain dispatch work runs on before a task goes on there
    /// (``start(on:_:)``): the listener accepts on one, and the connection it accepted is served
    /// on the same one, on the same thread, while listening goes on on the next lane
    /// (``Listener``). A task's first job queued behind the dispatch block that runs now runs
    /// when that block returns, without waking a thread: the hand over of every accepted
    /// connection to a queue of its own cost a thread's wake-up between the `accept` and the
    /// first read of the request (61-73 µs median here, of 0.4 ms a request of ffmpeg's start of
    /// a fragmented film).
    final class Lane: Sendable {
        /// The queue (a ``QueueExecutor``'s where task executors exist).
        let queue: DispatchQueue
        /// The ``QueueExecutor``, typed `AnyObject & Sendable` because task executors are not
        /// available everywhere; nil where they are not.
        fileprivate let executor: (any AnyObject & Sendable)?

        private init(queue: DispatchQueue, executor: (any AnyObject & Sendable)?) {
            (self.queue, self.executor) = (queue, executor)
        }

        /// A lane no running task uses.
        static func take() -> Lane {
            if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *), ServingTask.hasOwnExecutors {
                let executor = QueueExecutor.take()
                return Lane(queue: executor.queue, executor: executor)
            }
            return Lane(queue: idleQueues.withLock { $0.popLast() } ?? DispatchQueue(label: "mp4probe.serving"), executor: nil)
        }

        /// Plain lanes' queues no loop or block uses, kept for the next (at most ``maxIdle``,
        /// as ``QueueExecutor``'s): a queue made and disposed of for every connection would
        /// wake a thread each time.
        private static let idleQueues = Locked<[DispatchQueue]>([])
        private static let maxIdle = 64

        /// The lane is not used after all (its dispatch work ended and no task was started), or
        /// its task does not run on it (a plain lane's: ``start(on:_:)``). A block still queued
        /// on it runs before the next user's, as on any serial queue.
        func putBack() {
            if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *), let executor = executor as? QueueExecutor {
                QueueExecutor.putBack(executor)
                return
            }
            Self.idleQueues.withLock { queues in if queues.count < Self.maxIdle { queues.append(queue) } }
        }
    }

    /// Starts `operation`, which cannot fail, on `lane`, whose queue may be running a block
    /// that leads to it (``Lane``); the lane is put back when the task ends.
    @discardableResult
    static func start<T: Sendable>(on lane: Lane, _ operation: sending @escaping () async -> T) -> Task<T, Never> {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *), let executor = lane.executor as? QueueExecutor {
            return Task(executorPreference: executor) {
                defer { QueueExecutor.putBack(executor) }
                return await operation()
            }
        }
        lane.putBack()   // the task runs on the pool: the lane is free once its block returns
        return Task.detached { await operation() }
    }

    /// The queue of a task started by ``startSharing(_:_:)``, for the origin fetches it
    /// starts (``startThrowing(sharingCallersQueue:_:)``). A `QueueExecutor`; typed
    /// `AnyObject & Sendable` because task executors are not available everywhere.
    @TaskLocal private static var sharedQueue: (any AnyObject & Sendable)?

    /// A serving queue that the successive tasks of one job share with the origin fetches
    /// they start (``startSharing(_:_:)``): one a walked film. Not put back for other tasks:
    /// a fetch may still run on it after the task that started it.
    /// Made when first used: a film that is not walked makes no queue (a disposed one wakes a
    /// thread).
    final class SharedQueue: Sendable {
        private let made = Locked<(any AnyObject & Sendable)?>(nil)

        init() {}

        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        fileprivate var executor: QueueExecutor {
            made.withLock { made in
                if let executor = made as? QueueExecutor { return executor }
                let executor = QueueExecutor()
                made = executor
                return executor
            }
        }
    }

    /// Starts `operation` on `queue`, which the origin fetches it starts share: the walk ahead
    /// of a fragmented film waits for each fetch it starts, and a fetch on a queue of its own
    /// cost two thread wake-ups a step (its start, and the walk's resumption), a third of a
    /// step's time.
    @discardableResult
    static func startSharing<T: Sendable>(_ queue: SharedQueue, _ operation: sending @escaping () async -> T) -> Task<T, Never> {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            let executor = queue.executor
            return Task(executorPreference: executor) {
                await $sharedQueue.withValue(executor) { await operation() }
            }
        }
        return Task.detached { await operation() }
    }

    /// For a task on the queue of the task that started it
    /// (``startThrowing(sharingCallersQueue:_:)``): whether its socket waits may still begin
    /// in place, each for ``briefInlineWait`` at most (``SocketConnection``). An origin fetch
    /// waits so until it has written its first bytes (``endBriefInlineWaits()``): the origin's
    /// answer, which on loopback or a LAN comes within it. The rest of its body is waited for
    /// off the queue, so that a fetch waiting for a slow origin's bytes does not hold the walk
    /// that started it, which goes on at a head's first bytes (waiting in place for a
    /// trickling origin's second piece held the walk 2 ms a step, and a player reading the
    /// headers got ahead of it: `FragmentedStartTests`).
    @TaskLocal static var briefInlineWaits: Locked<Bool>?

    /// How long a task that shares its caller's queue waits in place for a socket before it
    /// waits off the queue.
    static let briefInlineWait: Int32 = 2

    /// Whether a task that shares its caller's queue may begin a socket wait in place; nil
    /// for other tasks.
    static var mayWaitBrieflyInline: Bool? { briefInlineWaits?.withLock { $0 } }

    /// A task that shares its caller's queue waits off it from now on.
    static func endBriefInlineWaits() { briefInlineWaits?.withLock { $0 = false } }

    /// Starts `operation`, which can fail; an origin fetch (`sharingCallersQueue`) started by
    /// a task of ``startSharing(_:_:)`` runs on that task's queue.
    @discardableResult
    static func startThrowing<T: Sendable>(sharingCallersQueue: Bool = false, _ operation: sending @escaping () async throws -> T) -> Task<T, any Error> {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            if sharingCallersQueue, let shared = sharedQueue as? QueueExecutor {
                return Task(executorPreference: shared) {
                    try await $sharedQueue.withValue(nil) { try await $briefInlineWaits.withValue(Locked(true)) { try await operation() } }
                }
            }
            let executor = QueueExecutor.take()
            return Task(executorPreference: executor) {
                defer { QueueExecutor.putBack(executor) }
                return try await operation()
            }
        }
        return Task.detached { try await operation() }
    }
}

/// A task executor that runs its jobs, in order, on a dispatch queue of its own (a serial
/// queue draws a thread from the overcommitting pool when it has work).
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
/// (`@unchecked Sendable`: its one stored value is a dispatch queue, which is thread-safe.)
final class QueueExecutor: TaskExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    /// Executors whose task has ended, kept for the next (at most ``maxIdle``): a dispatch
    /// queue's disposal wakes a thread of the pool, and a player that opens a request per
    /// fragment header made and disposed of two queues a request.
    private static let idle = Locked<[QueueExecutor]>([])
    static let maxIdle = 64

    /// An executor no running task uses.
    static func take() -> QueueExecutor {
        idle.withLock { $0.popLast() } ?? QueueExecutor()
    }

    /// `executor`'s task is ending (its last job runs): the next task may have it. A job that
    /// still comes for the old task runs in order with the new one's, as on any serial queue.
    static func putBack(_ executor: QueueExecutor) {
        idle.withLock { executors in if executors.count < maxIdle { executors.append(executor) } }
    }

    init() {
        queue = DispatchQueue(label: "mp4probe.serving")
        queue.setSpecific(key: ServingTask.queueKey, value: true)
        queue.setSpecific(key: Self.numberKey, value: Self.made.withLock { made in made += 1; return made })
    }

    private static let made = Locked(0)
    private static let numberKey = DispatchSpecificKey<Int>()

    /// Tests only: which executor's queue the caller runs on (numbered as made), if any.
    package static var current: Int? { DispatchQueue.getSpecific(key: numberKey) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
