import Foundation
import Testing
@testable import MP4IO
import MP4ProbeSystem
import MP4TestSupport

/// The listener's hand over (``Listener/run(_:)``): a connection is served on the serving
/// queue that accepted it, so its first read of the request needs no other thread's wake-up,
/// and listening goes on elsewhere at once: a connection being served never holds the next
/// one's `accept`.
@Suite(.hangGuard) struct ListenerTests {
    @Test func aConnectionIsServedWhereItWasAcceptedWhileListeningGoesOn() async throws {
        guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) else { return }
        struct Seen: Sendable { var accepted: Int?; var served: Int? }
        let listener = try Listener(host: "127.0.0.1", port: 0)
        defer { listener.stop() }
        let seen = Locked<[Seen]>([])
        let secondAccepted = DispatchSemaphore(value: 0)
        let clients = Locked<[Int32]>([])
        listener.run { client, lane in
            let number = seen.withLock { seen in
                seen.append(Seen(accepted: QueueExecutor.current))
                return seen.count - 1
            }
            clients.withLock { $0.append(client) }
            if number == 1 { secondAccepted.signal() }
            ServingTask.start(on: lane) {
                seen.withLock { $0[number].served = QueueExecutor.current }
                // The first connection is "served" until the second has been accepted.
                if number == 0 { _ = secondAccepted.wait(timeout: .now() + 30) }
            }
        }
        var failure: Int32 = 0
        let first = mp4probe_tcp_connect("127.0.0.1", Int32(listener.port), 1000, &failure)
        let second = mp4probe_tcp_connect("127.0.0.1", Int32(listener.port), 1000, &failure)
        defer {
            Platform.closeFile(first)
            Platform.closeFile(second)
            for client in clients.withLock({ $0 }) { Platform.closeFile(client) }
        }
        #expect(first >= 0 && second >= 0)
        let deadline = ContinuousClock.now + .seconds(30)
        while seen.withLock({ $0.count < 2 || $0.contains { $0.served == nil } }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let result = seen.withLock { $0 }
        #expect(result.count == 2, "the second connection was not accepted while the first was served")
        for (index, connection) in result.enumerated() {
            #expect(connection.accepted != nil && connection.served == connection.accepted,
                    "connection \(index) was accepted on queue \(String(describing: connection.accepted)) and served on \(String(describing: connection.served))")
        }
        if result.count == 2 { #expect(result[0].accepted != result[1].accepted, "both were accepted on one queue") }
    }
}
