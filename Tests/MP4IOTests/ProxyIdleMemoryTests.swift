import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `serve` process gives back what a burst took: after requests for 100 origins, once no
/// request has come for its idle lifetime, its descriptors return to where they were and its
/// resident memory to within 32 MiB of its idle start (it stayed at 324 descriptors and
/// +69 MB for as long as it ran). Measured on a process of its own (/proc/PID).
@Suite struct ProxyIdleMemoryTests {
    static func descriptors(_ pid: Int32) -> Int { FileSystem.entries("/proc/\(pid)/fd").count }

    /// A field of /proc/PID/status in KiB: `VmRSS` (all resident memory), `RssAnon` (the
    /// heap and stacks, without the code it paged in: printed, for the docs; about half of
    /// what stays after the burst is code paged in, the rest the pool's threads and arenas).
    static func statusKiB(_ pid: Int32, _ field: String = "VmRSS") -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func residentKiB(_ pid: Int32) -> Int { statusKiB(pid) }

    @Test(.requires("nginx"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func aBurstOfOriginsIsGivenBackWhenIdle() async throws {
        let executable = try #require(Executables.mp4probe)
        let (nginx, _, root) = try ProxyProcessTests.origin(rate: nil)
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let cache = FileSystem.temporaryDirectory("mp4probe-idle")
        defer { FileSystem.removeDirectory(cache) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: ["--prefetch", "0", "--idle-lifetime", "2"])
        defer { proxy.terminate() }
        let pid = proxy.processIdentifier
        try await Task.sleep(for: .milliseconds(300))
        let (fdsBefore, residentBefore, anonymousBefore) = (Self.descriptors(pid), Self.residentKiB(pid), Self.statusKiB(pid, "RssAnon"))
        #expect(fdsBefore > 0 && residentBefore > 0, "the proxy's /proc entries could not be read: the test would prove nothing")
        let url = try #require(URL(string: base))
        let port = try #require(url.port)
        // 100 origins (one file under 100 queries), two requests each, 8 at a time; the most
        // descriptors the proxy held meanwhile (sampled every 50 ms: under a loaded suite the
        // burst takes long enough for its first resources to expire before it ends).
        let peak = Locked(0), bursting = Locked(true)
        let sampler = Thread {
            while bursting.withLock({ $0 }) {
                let now = Self.descriptors(pid)
                peak.withLock { $0 = max($0, now) }
                usleep(50_000)
            }
        }
        sampler.start()
        await Executables.offPool {
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                for i in stride(from: worker, to: 100, by: 8) {
                    let proxied = URL(string: ProxyProcessTests.proxied(base, nginx.baseURL + "/v.mp4?n=\(i)"))
                    let path = (proxied?.path ?? "/") + "?" + (proxied?.query ?? "")
                    for range in ["0-1", "1000000-"] {
                        guard let fd = connectLoopback(port) else { continue }
                        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nRange: bytes=\(range)\r\nConnection: close\r\n\r\n"
                        _ = request.withCString { send(fd, $0, strlen($0), 0) }
                        // Up to 64 KiB of the answer, then the player leaves.
                        var buffer = [UInt8](repeating: 0, count: 16_384)
                        var received = 0
                        while received < 65_536 {
                            let n = recv(fd, &buffer, buffer.count, 0)
                            if n <= 0 { break }
                            received += n
                        }
                        close(fd)
                    }
                }
            }
        }
        bursting.withLock { $0 = false }
        let (fdsBusy, residentBusy) = (max(peak.withLock { $0 }, Self.descriptors(pid)), Self.residentKiB(pid))
        #expect(fdsBusy > fdsBefore + 40, "the burst held few descriptors (\(fdsBusy)): the test would prove nothing")
        // Idle: give it its lifetime (2 s) and a margin.
        var (fds, resident) = (fdsBusy, residentBusy)
        for _ in 0..<80 where fds > fdsBefore + 4 || resident > residentBefore + (24 << 10) {
            try await Task.sleep(for: .milliseconds(250))
            (fds, resident) = (Self.descriptors(pid), Self.residentKiB(pid))
        }
        let anonymous = Self.statusKiB(pid, "RssAnon")
        print("serve after 100 origins: descriptors \(fdsBefore) → \(fdsBusy) → \(fds) idle; resident \(residentBefore) → \(residentBusy) → \(resident) KiB idle, of it allocated (RssAnon) \(anonymousBefore) → \(anonymous) KiB")
        #expect(fds <= fdsBefore + 4, "descriptors: \(fdsBefore) at start, \(fdsBusy) after the burst, \(fds) idle")
        if !Executables.underSanitizer {
            #expect(resident <= residentBefore + (32 << 10), "resident memory: \(residentBefore) KiB at start, \(residentBusy) after the burst, \(resident) idle")
        }
    }
}
