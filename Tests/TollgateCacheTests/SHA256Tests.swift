import Testing
import TollgateCache

@Suite("SHA-256 (FIPS 180-2 vectors)", .timeLimit(.minutes(1)))
struct SHA256Tests {
    @Test(
        "Known digests",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            (
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
            ),
        ]
    )
    func vectors(_ message: String, _ digest: String) {
        #expect(SHA256.hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test("One million times 'a'")
    func million() {
        var hasher = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { hasher.update(chunk) }
        #expect(SHA256.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("Feeding in uneven pieces gives the one-shot digest", arguments: [1, 7, 55, 56, 63, 64, 65, 200])
    func incremental(_ pieceSize: Int) {
        let message = pattern(1_000, seed: 3)
        var hasher = SHA256()
        var offset = 0
        while offset < message.count {
            hasher.update(message[offset..<min(offset + pieceSize, message.count)])
            offset += pieceSize
        }
        #expect(hasher.finalize() == SHA256.hash(message))
        #expect(SHA256.hash(message) != SHA256.hash(message.dropLast()))
    }

    @Test("A digest copied mid-stream goes on on its own, and finalizing leaves it open for more")
    func valueSemantics() {
        var first = SHA256()
        first.update(Array("abc".utf8))
        var second = first
        second.update(Array("def".utf8))
        #expect(first.finalize() == SHA256.hash(Array("abc".utf8)))
        #expect(second.finalize() == SHA256.hash(Array("abcdef".utf8)))
        first.update(Array("def".utf8))
        #expect(first.finalize() == second.finalize())
        #expect(MessageDigest.hash(.md5, Array("abc".utf8)).count == 16)
        #expect(SHA256.hex(MessageDigest.hash(.md5, Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
    }
}
