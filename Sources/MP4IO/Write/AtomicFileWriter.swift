import Foundation
import MP4Core
import MP4ProbeSystem

/// The temporary files mp4probe writes beside a destination (`.NAME.mp4probe-PID-RANDOM.tmp`,
/// renamed over it when complete) and what removes them when a write is cut short.
///
/// A library touches no process-wide state unless asked: it installs no signal handlers, since
/// an app's handlers are its own. Without them, a temporary file left by a process that ended
/// in the middle of a write is removed, once that process is gone, by the next faststart
/// rewrite to the same destination, or (a cache table's) by the next eviction pass of its
/// cache directory.
public enum TemporaryFiles {
    /// Installs SIGINT, SIGTERM and SIGHUP handlers that remove the temporary files being
    /// written and then end the process as the signal would have (exit status 128 + n).
    /// Signals that are ignored (`nohup`) are left alone. Process-wide, and replaces handlers
    /// installed before: for a command-line program (the `mp4probe` tool calls it first
    /// thing), not for an app, which owns its signals.
    public static func removeOnTerminationSignals() {
        mp4probe_remove_temporaries_on_signals()
    }
}

/// Writes a file so that its destination only ever holds the old file or the complete new
/// one: the bytes go to a temporary file in the destination's directory, which is flushed to
/// disk and then renamed over the destination (and the directory flushed). On any failure the
/// temporary file is removed and the destination is untouched.
final class AtomicFileWriter {
    /// Where the file ends up.
    let destination: String
    /// The temporary file being written.
    let temporaryPath: String
    private var descriptor: Int32?
    /// Set once the file was renamed into place or removed.
    private var finished = false
    /// The slot of the temporary file in the interrupt-cleanup table (SIGINT, SIGTERM and
    /// SIGHUP remove it before the process ends, once a program turned that on with
    /// ``TemporaryFiles/removeOnTerminationSignals()``), or -1.
    private var cleanupSlot: Int32 = -1

    /// Creates the temporary file beside `destination` with `permissions`.
    convenience init(destination: String, permissions: UInt32) throws {
        try self.init(destination: destination, permissions: permissions) { candidate in
            try Platform.createExclusive(candidate, permissions: 0o600)
        }
    }

    /// Creates the temporary file beside `destination` as a clone of the whole file open at
    /// `source` (its blocks shared: APFS, XFS, Btrfs), or returns `nil`, leaving nothing
    /// behind, where the filesystem cannot clone.
    static func cloning(_ source: Int32, destination: String, permissions: UInt32) -> AtomicFileWriter? {
        try? AtomicFileWriter(destination: destination, permissions: permissions) { candidate in
            let fd = mp4probe_clone_file(source, candidate, 0o600)
            if fd < 0 { throw Platform.ioError("cannot clone into \(candidate)") }
            return fd
        }
    }

    private init(destination: String, permissions: UInt32, create: (String) throws -> Int32) throws {
        self.destination = destination
        let (directory, base) = Platform.split(destination)
        var attempt = 0
        while true {
            let candidate = Platform.path(in: directory, ".\(base).mp4probe-\(Platform.processID)-\(Platform.randomSuffix()).tmp")
            // Registered before it exists: a signal between the two must not leave it behind
            // (the name holds this process's id and a random part: nobody else's file).
            let slot = mp4probe_register_temporary(candidate)
            do {
                let fd = try create(candidate)
                self.temporaryPath = candidate
                self.descriptor = fd
                self.cleanupSlot = slot
                break
            } catch let error as MP4Error {
                mp4probe_forget_temporary(slot)
                attempt += 1
                if attempt >= 5 || !error.message.contains("exists") {
                    throw MP4Error(.io, "cannot write in the directory of \(destination): \(error.message)")
                }
            }
        }
        do {
            try Platform.setPermissions(try fd(), permissions, path: temporaryPath)
        } catch {
            abort()
            throw error
        }
    }

    deinit { abort() }

    /// Removes `.BASE.mp4probe-PID-*.tmp` files beside `destination` left by processes that
    /// no longer exist (killed with SIGKILL, a machine crash, or an app that was interrupted:
    /// a library installs no signal handlers, see ``TemporaryFiles``): only our own naming,
    /// only for this destination, only when the process is gone. It lists the directory, so
    /// writers of large files call it (the faststart rewrite), not every small atomic write
    /// (the cache's range tables: eviction sweeps those, ``removeStaleTemporaries(in:)``).
    static func removeStaleTemporaries(beside destination: String) {
        let (directory, base) = Platform.split(destination)
        removeStaleTemporaries(in: directory, base: base)
    }

    /// Removes every `.*.mp4probe-PID-*.tmp` file in `directory` whose process is gone.
    static func removeStaleTemporaries(in directory: String) {
        removeStaleTemporaries(in: directory, base: nil)
    }

    /// Removes every temporary of `destination`, whatever process wrote it: for a caller that
    /// holds the lock every writer of `destination` takes (an in-place faststart's journal,
    /// written under the film's ``FileOwnerLock``), so any such file is a dead writer's, even
    /// one whose process id is in use again.
    static func removeTemporaries(besideLocked destination: String) {
        let (directory, base) = Platform.split(destination)
        removeStaleTemporaries(in: directory, base: base, anyProcess: true)
    }

    private static func removeStaleTemporaries(in directory: String, base: String?, anyProcess: Bool = false) {
        for name in Platform.list(directory) where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            guard let pid = writerProcess(ofTemporary: name, base: base) else { continue }
            if anyProcess || (pid != Platform.processID && !Platform.processExists(pid)) { Platform.removeFile(Platform.path(in: directory, name)) }
        }
    }

    /// The process id in a temporary's name `.BASE.mp4probe-PID-RANDOM.tmp` (for `base`, or
    /// any base when `nil`), or `nil` when the name is not ours.
    static func writerProcess(ofTemporary name: String, base: String?) -> Int32? {
        let marker = ".mp4probe-"
        let rest: Substring
        if let base {
            let prefix = "." + base + marker
            guard name.hasPrefix(prefix) else { return nil }
            rest = name.dropFirst(prefix.count)
        } else {
            guard let found = name.range(of: marker, options: .backwards) else { return nil }
            rest = name[found.upperBound...]
        }
        guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 else { return nil }
        return pid
    }

    func fd() throws -> Int32 {
        guard let descriptor else { throw MP4Error(.io, "\(temporaryPath) is already closed") }
        return descriptor
    }

    /// Sets the final size up front, so that holes copied from a sparse input stay holes.
    func setSize(_ size: UInt64) throws { try Platform.truncate(try fd(), size: size, path: temporaryPath) }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try Platform.writeFully(try fd(), bytes, offset: offset, path: temporaryPath)
    }

    /// Flushes, closes and renames the temporary file over the destination. `.durable`: the
    /// new file is on stable storage when this returns (the directory flushed too), as a
    /// user's file must be. `.ordered`: its bytes reach the disk before the rename does, so a
    /// crash leaves the old file or the whole new one, but either may be what is found after
    /// it (the directory is not flushed): enough for a file whose older version is also right,
    /// as a cache table that claims less.
    func commit(_ purpose: Platform.SyncPurpose = .durable) throws {
        let fd = try fd()
        do {
            try Platform.sync(fd, path: temporaryPath, for: purpose)
            Platform.closeFile(fd)
            descriptor = nil
            try Platform.renameFile(temporaryPath, to: destination)
            finished = true
            mp4probe_forget_temporary(cleanupSlot)
        } catch {
            abort()
            throw error
        }
        if purpose != .ordered { Platform.syncDirectory(Platform.split(destination).directory) }
    }

    /// Removes the temporary file (nothing happens when it was committed).
    func abort() {
        if let descriptor {
            Platform.closeFile(descriptor)
            self.descriptor = nil
        }
        if !finished {
            finished = true
            Platform.removeFile(temporaryPath)
            mp4probe_forget_temporary(cleanupSlot)
        }
    }
}

extension TemporaryFiles {
    /// Writes `bytes` to `path` so that it only ever holds the old file or all of the new one
    /// (a temporary file beside it, flushed, renamed over it), with `permissions`.
    /// - Throws: ``MP4Error`` of kind `.io` when it cannot; `path` is then untouched.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, permissions: UInt32 = 0o644) throws {
        let writer = try AtomicFileWriter(destination: path, permissions: permissions)
        do {
            try writer.write(bytes, at: 0)
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
    }
}
