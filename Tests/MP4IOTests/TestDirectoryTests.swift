import Testing
import MP4TestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The removal of the tests' own directories (`FileSystem.removeDirectory`, run for every
/// `temporaryDirectory` when the test process exits and by tests when they end): everything under the directory goes,
/// nothing a link in it points to does (the cache tests plant links to files elsewhere).
struct TestDirectoryTests {
    @Test func removingATreeRemovesLinksNotWhatTheyPointTo() throws {
        let outside = FileSystem.temporaryDirectory("mp4probe-outside")
        let tree = FileSystem.temporaryDirectory("mp4probe-tree")
        #expect(FileSystem.write([1, 2, 3], to: outside + "/kept"))
        mkdir(outside + "/kept-directory", 0o700)
        #expect(FileSystem.write([4], to: outside + "/kept-directory/file"))
        mkdir(tree + "/sub", 0o700)
        mkdir(tree + "/sub/locked", 0o700)
        #expect(FileSystem.write([5], to: tree + "/sub/locked/file"))
        chmod(tree + "/sub/locked", 0)
        #expect(FileSystem.write([6], to: tree + "/.hidden"))
        #expect(symlink(outside + "/kept", tree + "/link-to-file") == 0)
        #expect(symlink(outside + "/kept-directory", tree + "/sub/link-to-directory") == 0)

        FileSystem.removeDirectory(tree)

        #expect(!FileSystem.exists(tree))
        #expect(FileSystem.read(outside + "/kept") == [1, 2, 3])
        #expect(FileSystem.read(outside + "/kept-directory/file") == [4])
        FileSystem.removeDirectory(outside)
        #expect(!FileSystem.exists(outside))
    }
}
