import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Seeded random schedules of what several processes and outside programs do to one cache
/// entry (issue 61): fetch and commit, read what a table claimed a step earlier, evict, cut
/// the data file short, be killed mid-fetch, see the origin change. Each "process" is an
/// ``EntryStore`` of its own on one directory (own descriptors; record locks are per
/// description, as between processes). Every byte a read returns is checked against the
/// origin's version that process serves; a failure prints its seed.
/// `MP4PROBE_SIMULATION_SCHEDULES` sets how many schedules (10,000 by default); the
/// directory is on /dev/shm where there is one (a table write's flush costs nothing there).
@Suite struct EntryStoreSimulationTests {
    static let length: UInt64 = 192 << 10
    static let versions: [String: [UInt8]] = [
        "v1": (0..<Int(length)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9 &+ 1) },
        "v2": (0..<Int(length)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8 &+ 5) },
    ]

    /// A small deterministic generator (SplitMix64): a seed is a schedule.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: UInt64) -> UInt64 { bound == 0 ? 0 : next() % bound }
        mutating func range(max count: UInt64) -> Range<UInt64> {
            let start = below(EntryStoreSimulationTests.length)
            return start..<min(EntryStoreSimulationTests.length, start + 1 + below(count))
        }
    }

    /// One simulated process: its store (nil: not running), the version it serves, and a
    /// read it decided on from its table and has not carried out yet (an actor's await later).
    struct SimulatedProcess {
        var store: EntryStore?
        var version = "v1"
        var decided: Range<UInt64>?
    }

    enum Failure: Error, CustomStringConvertible {
        case wrongBytes(seed: UInt64, step: Int, range: Range<UInt64>, version: String, trace: [String])
        var description: String {
            switch self {
            case .wrongBytes(let seed, let step, let range, let version, let trace):
                return "seed \(seed), step \(step): a read of \(range) returned bytes that are not the origin's \(version); the schedule: \(trace.joined(separator: "; "))"
            }
        }
    }

    static func start(_ directory: String, version: String) throws -> EntryStore {
        let store = try EntryStore(directory: directory, resource: "film")
        _ = try store.prepare(length: length, validator: version, confirmedAt: nil, attributes: nil)
        return store
    }

    /// Runs schedule `seed` in `directory` (emptied first); returns the reads checked.
    static func run(seed: UInt64, in directory: String, steps: Int = 40) throws -> Int {
        FileSystem.removeDirectory(directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var random = Random(state: seed)
        var processes = [SimulatedProcess(), SimulatedProcess(), SimulatedProcess()]
        var checked = 0
        var trace: [String] = []
        for step in 0..<steps {
            let index = Int(random.below(UInt64(processes.count)))
            var process = processes[index]
            defer { processes[index] = process }
            guard let store = process.store else {
                // Starts (again), now and then seeing a new version of the origin.
                if random.below(6) == 0 { process.version = process.version == "v1" ? "v2" : "v1" }
                process.store = try? start(directory, version: process.version)
                trace.append("\(index) starts \(process.version)")
                continue
            }
            let origin = versions[process.version] ?? []
            switch random.below(10) {
            case 0, 1, 2:
                // A fetch: claim, write the origin's bytes, commit; now and then killed before
                // its commit (its bytes written, never claimed).
                let wanted = random.range(max: 48 << 10)
                guard let (part, token) = store.claim(wanted, othersAllowed: false) else { continue }
                do {
                    try EntryStore.writeFetched(origin[Int(part.lowerBound)..<Int(part.upperBound)], to: store.dataFD, at: part.lowerBound, path: store.dataPath)
                } catch {
                    trace.append("\(index) cannot write \(part)")
                    EntryLocks.release(token, part)
                    continue
                }
                trace.append("\(index) writes \(part)")
                if random.below(8) == 0 {
                    trace.append("\(index) killed")
                    process.store = nil
                    process.decided = nil
                    continue
                }
                let committed = try store.commit(part, writtenThrough: store.dataFD, generation: store.table.generation)
                trace.append("\(index) commits: \(committed)")
                EntryLocks.release(token, part)
            case 3, 4:
                // Decides on its table that a range is cached; reads it at a later step.
                let runs = store.present.ranges
                guard !runs.isEmpty else { continue }
                let run = runs[Int(random.below(UInt64(runs.count)))]
                let start = run.lowerBound + random.below(UInt64(run.count))
                let wanted = start..<min(run.upperBound, start + 1 + random.below(32 << 10))
                process.decided = wanted
                trace.append("\(index) decides \(wanted)")
            case 5, 6:
                guard let decided = process.decided else { continue }
                process.decided = nil
                guard let bytes = try store.readCached(decided) else { trace.append("\(index) reads nil"); continue }
                trace.append("\(index) reads \(decided)")
                checked += 1
                guard bytes[...] == origin[Int(decided.lowerBound)..<Int(decided.upperBound)] else {
                    let zeros = bytes.filter { $0 == 0 }.count
                    trace.append("\(zeros) of \(bytes.count) zeros")
                    throw Failure.wrongBytes(seed: seed, step: step, range: decided, version: process.version, trace: trace)
                }
            case 7:
                // `cache evict` of every entry.
                for entry in CacheDirectory.entries(directory) { try? CacheDirectory.remove(entry, from: directory) }
                trace.append("evict")
            case 8:
                // Another program cuts the data file short.
                let fd = open(store.dataPath, O_WRONLY | O_NOFOLLOW)
                if fd >= 0 {
                    // Shorter only: a program that writes into the file (zeros or anything else)
                    // is corruption, which the block checksums are for.
                    let size = random.below((try? Platform.regularFileSize(fd, path: store.dataPath)) ?? 0)
                    _ = ftruncate(fd, off_t(size))
                    trace.append("cut to \(size)")
                    _ = close(fd)
                }
            default:
                if random.below(3) == 0 {
                    process.store = nil   // killed
                    process.decided = nil
                    trace.append("\(index) killed")
                } else {
                    trace.append("\(index) refreshes: \(try store.refreshIfChanged())")
                }
            }
        }
        return checked
    }

    /// Fails when a read returns bytes that are not the origin's: with the table check at read
    /// time removed (``EntryStore/readCached(_:)``'s first guard), or with fetches writing past
    /// the end of a data file cut short (``EntryStore/writeFetched(_:to:at:path:)``), a seed
    /// within the first thousand fails (checked).
    @Test func randomSchedulesReadOnlyTheOriginsBytes() throws {
        let schedules = ProcessInfo.processInfo.environment["MP4PROBE_SIMULATION_SCHEDULES"].flatMap { UInt64($0) } ?? 10_000
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let directory = base + "/mp4probe-simulation-\(getpid())"
        defer { FileSystem.removeDirectory(directory) }
        var checked = 0
        for seed in 0..<schedules {
            do {
                checked += try Self.run(seed: seed, in: directory)
            } catch let failure as Failure {
                Issue.record("\(failure)")
                return
            }
        }
        #expect(checked > Int(schedules / 4), "the schedules read something: \(checked) reads checked")
    }
}
