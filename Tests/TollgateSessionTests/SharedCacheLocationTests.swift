import Foundation
import Testing
import TollgateCache
@testable import TollgateSession

@Suite("Where ResponseCache.shared lives, and whose directory it accepts")
struct SharedCacheLocationTests {
    private func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("shared-cache-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? 0
    }

    @Test("$XDG_CACHE_HOME when absolute, else $HOME/.cache; beside the proxy's own cache, not inside it")
    func location() {
        #expect(ResponseCache.sharedPath(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/a"]) == "/x/cache/tollgate-shared-session")
        #expect(ResponseCache.sharedPath(environment: ["XDG_CACHE_HOME": "rel", "HOME": "/home/a"]) == "/home/a/.cache/tollgate-shared-session")
        #expect(ResponseCache.sharedPath(environment: ["HOME": "/home/a"]) == "/home/a/.cache/tollgate-shared-session")
    }

    @Test("Made 0700 when missing; an own directory open to others is closed to them; a link or another user's directory is refused")
    func ownership() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }

        let fresh = try #require(ResponseCache.openShared(environment: ["XDG_CACHE_HOME": root + "/a"]))
        fresh.store.close()
        #expect(mode(root + "/a/tollgate-shared-session") == 0o700)

        let open = root + "/b/tollgate-shared-session"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        #expect(chmod(open, 0o777) == 0)
        let reopened = try #require(ResponseCache.openShared(environment: ["XDG_CACHE_HOME": root + "/b"]))
        reopened.store.close()
        #expect(mode(open) == 0o700)

        // A link planted where the directory should be (to a directory someone else controls).
        try FileManager.default.createDirectory(atPath: root + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/c", withIntermediateDirectories: true)
        #expect(symlink(root + "/elsewhere", root + "/c/tollgate-shared-session") == 0)
        #expect(ResponseCache.openShared(environment: ["XDG_CACHE_HOME": root + "/c"]) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/elsewhere").isEmpty)

        // Another user's directory (only root can make one here).
        if getuid() == 0 {
            let theirs = root + "/d/tollgate-shared-session"
            try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
            #expect(chown(theirs, 65534, 65534) == 0)
            #expect(ResponseCache.openShared(environment: ["XDG_CACHE_HOME": root + "/d"]) == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: theirs).isEmpty)
        }
    }
}
